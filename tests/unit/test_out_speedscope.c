/* test_out_speedscope.c - the speedscope writer on hand-built profiles: one
 * profile per thread in pid and tid order, frames shared and written once per
 * content, stacks root first with the [truncated] marker at the root and
 * kernel frames at the leaf, identical stacks merged, weights in nanoseconds,
 * lines by instruction or (--no-lines) the function's first line. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "linetable.h"
#include "output.h"
#include "profile.h"
#include "profutil.h"

#define PID_A 4000001u
#define PID_B 4000000u

/* lnotab: line 10 for offsets 0-3, line 11 from offset 4 */
static uint8_t lnotab[] = { 4, 1 };
#define PYFUNC(n, f, first) { .name = (n), .file = (f), .firstlineno = (first), \
	.lt_kind = LT_LNOTAB, .kind = FN_PYTHON }
static struct func f_main = PYFUNC("main", "/w/app.py", 5);
/* the same function as another process names it: another pointer */
static struct func f_main_b = PYFUNC("main", "/w/app.py", 5);
static struct func f_leaf = { .name = "leaf", .file = "/w/app.py", .firstlineno = 10,
				.lt_kind = LT_LNOTAB, .lt = lnotab, .lt_len = sizeof(lnotab),
				.kind = FN_PYTHON };
static struct func f_unknown = { .name = "[unknown]", .file = "", .kind = FN_NATIVE };

#define add add_stack

static void build(struct profile *p)
{
	static const uint64_t k1[] = { 0xffffffff81000001ull }, k2[] = { 0xffffffff81000002ull };

	profile_init(p);
	/* process A, thread 7: leaf at lines 10 and 11, and a truncated stack
	 * in the kernel twice (two addresses, both "[unknown]": one stack) */
	add(p, PID_A, 1, 7, 0, 2, NULL, 0, 2, &f_leaf, 0u, &f_main, 0u);
	add(p, PID_A, 2, 7, 0, 3, NULL, 0, 2, &f_leaf, 4u, &f_main, 0u);
	add(p, PID_A, 3, 7, STACK_TRUNCATED, 1, k1, 1, 2, &f_unknown, 0u, &f_main, 0u);
	add(p, PID_A, 3, 7, STACK_TRUNCATED, 1, k2, 1, 2, &f_unknown, 0u, &f_main, 0u);
	/* process A, thread 3 */
	add(p, PID_A, 1, 3, 0, 1, NULL, 0, 2, &f_leaf, 0u, &f_main, 0u);
	/* process B (lower pid), thread 9 */
	add(p, PID_B, 4, 9, 0, 1, NULL, 0, 1, &f_main_b, 0u);
}

static char *render(const struct profile *p, bool lines, int freq)
{
	struct out_ctx c = { .prof = p, .lines = lines, .duration_s = 1.0, .freq = freq,
			     .title = "app.py" };
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(out_speedscope(f, &c), 0);
	fclose(f);
	return buf;
}

static void count(const char *s, const char *what, int want)
{
	int n = 0;

	for (const char *q = s; (q = strstr(q, what)); q++)
		n++;
	if (n != want)
		fail_msg("%d times %s, want %d, in\n%s", n, what, want, s);
}

static void has(const char *s, const char *what)
{
	if (!strstr(s, what))
		fail_msg("no %s in\n%s", what, s);
}

static void profiles_per_thread_in_pid_tid_order(void **state)
{
	struct profile p;
	char *out;
	const char *b, *a3, *a7;

	build(&p);
	out = render(&p, true, 100);
	count(out, "\"type\":\"sampled\"", 3);
	b = strstr(out, "\"name\":\"4000000 ");
	a3 = strstr(out, "\"name\":\"4000001 ");
	assert_non_null(b);
	assert_non_null(a3);
	a7 = strstr(a3 + 1, "\"name\":\"4000001 ");
	assert_non_null(a7);
	assert_true(b < a3 && a3 < a7);
	assert_non_null(strstr(a3, "/ thread 3 "));
	assert_true(strstr(a3, "/ thread 3 ") < a7);
	assert_non_null(strstr(a7, "/ thread 7 "));
	/* thread 7 is the busiest: it opens first */
	has(out, "\"activeProfileIndex\":2,");
	has(out, "\"name\":\"app.py\"");
	has(out, "\"exporter\":\"pyperf-bpf ");
	free(out);
	profile_free(&p);
}

static void frames_are_shared_once_per_content(void **state)
{
	struct profile p;
	char *out;

	build(&p);
	out = render(&p, true, 100);
	/* main from two processes, two kernel addresses of one name: one each */
	count(out, "{\"name\":\"main\",\"file\":\"/w/app.py\",\"line\":5}", 1);
	count(out, "{\"name\":\"[unknown]_[k]\",\"file\":\"[kernel]\"}", 1);
	/* markers and unknown native code have no file */
	count(out, "{\"name\":\"[truncated]\"}", 1);
	count(out, "{\"name\":\"[unknown]\"}", 1);
	/* a Python frame per line */
	has(out, "{\"name\":\"leaf\",\"file\":\"/w/app.py\",\"line\":10}");
	has(out, "{\"name\":\"leaf\",\"file\":\"/w/app.py\",\"line\":11}");
	free(out);
	profile_free(&p);
}

static void stacks_root_first_merged_with_weights(void **state)
{
	struct profile p;
	char *out;

	build(&p);
	out = render(&p, true, 100);
	/* frames by first use: main 0 (process B first), leaf:10 1, leaf:11 2,
	 * [truncated] 3, [unknown] 4, kernel 5 */
	has(out, "\"frames\":[{\"name\":\"main\",");
	/* B: one sample of 10 ms */
	has(out, "\"endValue\":10000000,\"samples\":[[0]],\"weights\":[10000000]}");
	/* A thread 7: heavier stacks first (profile_samples' order), the two
	 * kernel stacks of one name merged, [truncated] at the root */
	has(out, "\"unit\":\"nanoseconds\",\"startValue\":0,\"endValue\":70000000,"
		 "\"samples\":[[0,2],[0,1],[3,0,4,5]],\"weights\":[30000000,20000000,20000000]}");
	free(out);
	profile_free(&p);
}

static void no_lines_gives_the_first_line_and_merges(void **state)
{
	struct profile p;
	char *out;

	build(&p);
	out = render(&p, false, 100);
	count(out, "\"name\":\"leaf\"", 1);
	has(out, "{\"name\":\"leaf\",\"file\":\"/w/app.py\",\"line\":10}");
	has(out, "\"samples\":[[0,1],[2,0,3,4]],\"weights\":[50000000,20000000]}");
	free(out);
	profile_free(&p);
}

static void without_a_frequency_weights_are_counts(void **state)
{
	struct profile p;
	char *out;

	build(&p);
	out = render(&p, true, 0);
	has(out, "\"unit\":\"none\",\"startValue\":0,\"endValue\":7,");
	has(out, "\"weights\":[3,2,2]}");
	free(out);
	profile_free(&p);
}

static void empty_profile_is_a_valid_file(void **state)
{
	struct profile p;
	char *out;

	profile_init(&p);
	out = render(&p, true, 100);
	assert_string_equal(out, "{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\","
				 "\"shared\":{\"frames\":[]},\"profiles\":[],\"name\":\"app.py\","
				 "\"activeProfileIndex\":0,\"exporter\":\"pyperf-bpf 0.1.0\"}\n");
	free(out);
	profile_free(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(profiles_per_thread_in_pid_tid_order),
		cmocka_unit_test(frames_are_shared_once_per_content),
		cmocka_unit_test(stacks_root_first_merged_with_weights),
		cmocka_unit_test(no_lines_gives_the_first_line_and_merges),
		cmocka_unit_test(without_a_frequency_weights_are_counts),
		cmocka_unit_test(empty_profile_is_a_valid_file),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
