/* test_output.c - folded and report output from hand-built profiles: frame
 * order, merging, synthetic root frames, own/total accounting. */
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

#define PID 4000000u

/* lnotab: line 10 for offsets 0-3, line 11 from offset 4 */
static uint8_t lnotab[] = { 4, 1 };
static struct func f_module = { "<module>", "/w/app.py", 1, LT_LNOTAB, NULL, 0, FN_PYTHON, NULL, 0 };
static struct func f_main = { "main", "/w/app.py", 5, LT_LNOTAB, NULL, 0, FN_PYTHON, NULL, 0 };
static struct func f_leaf = { "leaf", "/w/app.py", 10, LT_LNOTAB, lnotab, sizeof(lnotab), FN_PYTHON, NULL, 0 };
static struct func f_other = { "other", "/w/lib.py", 20, LT_LNOTAB, NULL, 0, FN_PYTHON, NULL, 0 };
static struct func f_semi = { "odd;name", "/w/a;b.py", 3, LT_LNOTAB, NULL, 0, FN_PYTHON, NULL, 0 };

/* a stack of process PID without kernel frames */
#define add(p, hash, tid, flags, count, ...) \
	add_stack(p, PID, hash, tid, flags, count, NULL, 0, __VA_ARGS__)

/* format's output for p; pid limits it to one process (0: all) */
static char *render_of(const struct profile *p, int format, bool lines, bool threads, bool procs,
		       int pid)
{
	struct out_ctx c = { .prof = p, .lines = lines, .threads = threads, .proc_frames = procs,
			     .duration_s = 2.0, .freq = 100, .ncpus = 2, .top = 10, .pid = pid };
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(format == FMT_FOLDED ? out_folded(f, &c) : out_report(f, &c), 0);
	fclose(f);
	return buf;
}

static char *render(const struct profile *p, int format, bool lines, bool threads, bool procs)
{
	return render_of(p, format, lines, threads, procs, 0);
}

/* out_ctx.pid (the daemon's per-process files) limits folded and report as
 * it does the other formats */
static void folded_and_report_show_only_the_chosen_process(void **state)
{
	struct profile p;
	char *out;

	profile_init(&p);
	add(&p, 1, 7, 0, 5, 2, &f_leaf, 0u, &f_main, 0u);
	add_stack(&p, PID + 1, 2, 9, 0, 3, NULL, 0, 1, &f_other, 0u);
	out = render_of(&p, FMT_FOLDED, true, false, false, PID + 1);
	assert_string_equal(out, "other (/w/lib.py:20) 3\n");
	free(out);
	out = render_of(&p, FMT_FOLDED, true, false, false, 0);
	assert_non_null(strstr(out, "leaf (/w/app.py:10) 5\n"));
	assert_non_null(strstr(out, "other (/w/lib.py:20) 3\n"));
	free(out);
	out = render_of(&p, FMT_REPORT, true, false, false, PID);
	assert_non_null(strstr(out, "pyperf-bpf: 5 samples in 2.00 s"));
	assert_non_null(strstr(out, "100.00% 100.00%    0.05s      0.05s  leaf (/w/app.py:10)"));
	assert_null(strstr(out, "other"));
	free(out);
	profile_free(&p);
}

static void folded_is_root_first_with_lines(void **state)
{
	struct profile p;
	char *out;

	profile_init(&p);
	add(&p, 1, 7, 0, 5, 3, &f_leaf, 4u, &f_main, 0u, &f_module, 0u);
	out = render(&p, FMT_FOLDED, true, false, false);
	assert_string_equal(out, "<module> (/w/app.py:1);main (/w/app.py:5);leaf (/w/app.py:11) 5\n");
	free(out);
	profile_free(&p);
}

static void no_lines_merges_frames_of_one_function(void **state)
{
	struct profile p;
	char *out;

	profile_init(&p);
	add(&p, 1, 7, 0, 5, 2, &f_leaf, 0u, &f_main, 0u);
	add(&p, 2, 7, 0, 3, 2, &f_leaf, 6u, &f_main, 0u);
	add(&p, 1, 8, 0, 2, 0); /* same stack hash, other thread: adds to the same line */
	out = render(&p, FMT_FOLDED, true, false, false);
	assert_string_equal(out, "main (/w/app.py:5);leaf (/w/app.py:10) 7\n"
				 "main (/w/app.py:5);leaf (/w/app.py:11) 3\n");
	free(out);
	out = render(&p, FMT_FOLDED, false, false, false);
	assert_string_equal(out, "main (/w/app.py);leaf (/w/app.py) 10\n");
	free(out);
	profile_free(&p);
}

static void root_frames_name_process_thread_and_truncation(void **state)
{
	struct profile p;
	char *out;

	profile_init(&p);
	profile_set_thread_name(&p, 7, 42, "worker");
	add(&p, 1, 42, STACK_TRUNCATED, 1, 1, &f_other, 0u);
	add(&p, 2, 42, STACK_BAD_READ, 1, 1, &f_other, 0u);
	out = render(&p, FMT_FOLDED, true, true, true);
	assert_string_equal(out, "process 4000000 ?;thread 42 worker;[incomplete];other (/w/lib.py:20) 1\n"
				 "process 4000000 ?;thread 42 worker;[truncated];other (/w/lib.py:20) 1\n");
	free(out);
	profile_free(&p);
}

static void semicolons_in_names_do_not_split_frames(void **state)
{
	struct profile p;
	char *out;

	profile_init(&p);
	add(&p, 1, 1, 0, 2, 1, &f_semi, 0u);
	out = render(&p, FMT_FOLDED, true, false, false);
	assert_string_equal(out, "odd:name (/w/a:b.py:3) 2\n");
	free(out);
	profile_free(&p);
}

static void report_counts_recursion_once_in_total(void **state)
{
	struct profile p;
	char *out;

	profile_init(&p);
	/* leaf calls itself: counted once per sample in total */
	add(&p, 1, 1, 0, 3, 3, &f_leaf, 0u, &f_leaf, 4u, &f_main, 0u);
	add(&p, 2, 1, 0, 1, 2, &f_other, 0u, &f_main, 0u);
	out = render(&p, FMT_REPORT, true, false, false);
	assert_non_null(strstr(out, "pyperf-bpf: 4 samples in 2.00 s at 100 Hz per CPU (2 CPUs)"));
	/* by own: leaf 75 %, other 25 %, main 0 % own but 100 % total */
	assert_non_null(strstr(out, " 75.00%  75.00%    0.03s      0.03s  leaf (/w/app.py:10)"));
	assert_non_null(strstr(out, " 25.00%  25.00%    0.01s      0.01s  other (/w/lib.py:20)"));
	assert_non_null(strstr(out, "  0.00% 100.00%    0.00s      0.04s  main (/w/app.py:5)"));
	/* the total table starts with main */
	{
		const char *t = strstr(out, "Top functions by total time");

		assert_non_null(t);
		t = strchr(strchr(t, '\n') + 1, '\n') + 1;
		assert_memory_equal(t, "  0.00% 100.00%", 15);
	}
	free(out);
	profile_free(&p);
}

static void unknown_stack_counts_are_unattributed(void **state)
{
	struct profile p;
	struct stack_ref ref = { .pid = PID, .gen = 1, .hash = 99 };

	profile_init(&p);
	profile_add_count(&p, &ref, 1, 4);
	assert_int_equal(p.unattributed, 4);
	assert_int_equal(p.total, 0);
	profile_free(&p);
}

/* A key announced again with other code objects (their addresses were reused)
 * names the new stack from then on; counts already taken keep the old names. */
static void reannounced_key_with_new_code_gets_new_stack(void **state)
{
	struct profile p;
	const char raw1[] = "code 0x1000 check 111", raw2[] = "code 0x1000 check 222";
	struct pframe fr1[1] = { { &f_leaf, 4 } }, fr2[1] = { { &f_other, 4 } };
	struct stack_ref ref = { .pid = PID, .gen = 1, .hash = 5 };
	char *out;

	profile_init(&p);
	assert_int_equal(profile_insert_stack(&p, &ref, 0, fr1, 1, NULL, 0, raw1, sizeof(raw1)), 0);
	profile_add_count(&p, &ref, 1, 2);
	/* same frames again: nothing changes */
	assert_true(profile_has_stack(&p, &ref, 0, raw1, sizeof(raw1)));
	assert_int_equal(profile_insert_stack(&p, &ref, 0, fr2, 1, NULL, 0, raw1, sizeof(raw1)), 0);
	profile_add_count(&p, &ref, 1, 1);
	/* other check: the key now means the new stack */
	assert_false(profile_has_stack(&p, &ref, 0, raw2, sizeof(raw2)));
	assert_int_equal(profile_insert_stack(&p, &ref, 0, fr2, 1, NULL, 0, raw2, sizeof(raw2)), 0);
	profile_add_count(&p, &ref, 1, 4);
	out = render(&p, FMT_FOLDED, false, false, false);
	assert_string_equal(out, "leaf (/w/app.py) 3\nother (/w/lib.py) 4\n");
	free(out);
	profile_free(&p);
}

/* --mode wall: counts are nanoseconds; folded lines in microseconds (one
 * under half a microsecond goes), the report in seconds with on- and
 * off-CPU time side by side */
static void wall_mode_counts_time(void **state)
{
	struct out_ctx c = { .lines = true, .duration_s = 2.0, .freq = 100, .ncpus = 2,
			     .top = 10, .mode = MODE_WALL };
	struct profile p;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	profile_init(&p);
	c.prof = &p;
	add(&p, 1, 7, 0, 30000000, 2, &f_leaf, 0u, &f_main, 0u);            /* 30 ms on */
	add(&p, 2, 7, STACK_OFFCPU, 1500000400, 2, &f_other, 0u, &f_main, 0u); /* 1.5 s off */
	add(&p, 3, 7, STACK_OFFCPU, 499, 1, &f_module, 0u);                  /* 0.499 us */
	f = open_memstream(&buf, &len);
	assert_int_equal(out_folded(f, &c), 0);
	fclose(f);
	assert_string_equal(buf, "main (/w/app.py:5);leaf (/w/app.py:10) 30000\n"
				 "main (/w/app.py:5);other (/w/lib.py:20) 1500000\n");
	free(buf);
	f = open_memstream(&buf, &len);
	assert_int_equal(out_report(f, &c), 0);
	fclose(f);
	assert_non_null(strstr(buf, "wall mode: 1.53 s of thread time in 2.00 s (on-CPU 0.03 s"));
	assert_non_null(strstr(buf, "off-CPU 1.50 s"));
	/* main: 1.53 s in total, 0.03 s of it on the CPU */
	assert_non_null(strstr(buf, "   1.53s (  0.03s    1.50s)  main (/w/app.py:5)"));
	free(buf);
	profile_free(&p);
}

static void formats_by_name_and_extension(void **state)
{
	assert_int_equal(out_format_parse("folded"), FMT_FOLDED);
	assert_int_equal(out_format_parse("report"), FMT_REPORT);
	assert_int_equal(out_format_parse("svg"), FMT_SVG);
	assert_int_equal(out_format_parse("pprof"), FMT_PPROF);
	assert_int_equal(out_format_parse("speedscope"), FMT_SPEEDSCOPE);
	assert_int_equal(out_format_parse("png"), -1);
	assert_int_equal(out_format_from_path("f.svg"), FMT_SVG);
	assert_int_equal(out_format_from_path("cpu.pb.gz"), FMT_PPROF);
	assert_int_equal(out_format_from_path("cpu.pprof"), FMT_PPROF);
	assert_int_equal(out_format_from_path("p.speedscope.json"), FMT_SPEEDSCOPE);
	assert_int_equal(out_format_from_path("p.json"), -1);
	assert_int_equal(out_format_from_path(".svg"), -1);
	assert_int_equal(out_format_from_path("/x/y.folded"), FMT_FOLDED);
	assert_int_equal(out_format_from_path("a.collapsed"), FMT_FOLDED);
	assert_int_equal(out_format_from_path("r.txt"), FMT_REPORT);
	assert_int_equal(out_format_from_path("noext"), -1);
	assert_int_equal(out_format_from_path("a.weird"), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(folded_is_root_first_with_lines),
		cmocka_unit_test(folded_and_report_show_only_the_chosen_process),
		cmocka_unit_test(no_lines_merges_frames_of_one_function),
		cmocka_unit_test(root_frames_name_process_thread_and_truncation),
		cmocka_unit_test(semicolons_in_names_do_not_split_frames),
		cmocka_unit_test(report_counts_recursion_once_in_total),
		cmocka_unit_test(unknown_stack_counts_are_unattributed),
		cmocka_unit_test(wall_mode_counts_time),
		cmocka_unit_test(reannounced_key_with_new_code_gets_new_stack),
		cmocka_unit_test(formats_by_name_and_extension),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
