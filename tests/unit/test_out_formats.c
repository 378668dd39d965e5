/* test_out_formats.c - the svg, speedscope and pprof writers on hand-built
 * profiles: names that hold markup, quotes, control characters and bytes
 * that are not UTF-8 stay well-formed XML and valid JSON; empty profiles are
 * valid files; equal profiles give equal bytes. */
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

#define PID 4000000u

static struct func f_main = { "main", "/w/app.py", 5, LT_LNOTAB, NULL, 0, FN_PYTHON, NULL, 0 };
static struct func f_evil = { "<script>&\"'\x01x\xff\xfe", "/w/<b>.py", 7, LT_LNOTAB, NULL, 0,
				FN_PYTHON, NULL, 0 };
static struct binary libc = { "/lib/libc.so.6", "00112233", 0x1000, 0x9000, 0x1000 };
static struct func f_native = { "memcpy", "libc.so.6", 0, 0, NULL, 0, FN_NATIVE, &libc, 0x4242 };

static void build(struct profile *p)
{
	struct pframe fr[3] = { { &f_evil, 0 }, { &f_native, 0 }, { &f_main, 0 } };
	struct stack_ref ref = { .pid = PID, .gen = 1, .hash = 1 };

	profile_init(p);
	assert_int_equal(profile_insert_stack(p, &ref, 0, fr, 3, NULL, 0, NULL, 0), 0);
	profile_add_count(p, &ref, 9, 3);
}

static char *render(const struct profile *p, int fmt, size_t *len)
{
	struct out_ctx c = { .prof = p, .lines = true, .duration_s = 1.0, .freq = 100,
			     .title = "t<&>", .start_unix_ns = 1 };
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);

	assert_non_null(f);
	assert_int_equal(out_write(f, &c, fmt), 0);
	fclose(f);
	return buf;
}

/* every byte sequence is valid UTF-8 and no raw control characters remain */
static void assert_clean_utf8(const char *s, size_t n)
{
	for (size_t i = 0; i < n;) {
		unsigned char c = (unsigned char)s[i];
		int len = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : 4;

		assert_true(c >= 0x20 || c == '\n' || c == '\t');
		assert_true(c < 0x80 || (c >= 0xc2 && c <= 0xf4));
		for (int j = 1; j < len; j++)
			assert_int_equal((unsigned char)s[i + j] & 0xc0, 0x80);
		i += (size_t)len;
	}
}

static void svg_escapes_markup_and_bad_bytes(void **state)
{
	struct profile p;
	size_t len;
	char *out;

	build(&p);
	out = render(&p, FMT_SVG, &len);
	assert_clean_utf8(out, len);
	assert_non_null(strstr(out, "data-name=\"&lt;script&gt;&amp;&quot;&apos;?x?? (/w/&lt;b&gt;.py:7)\""));
	assert_null(strstr(out, "<script>&"));
	assert_non_null(strstr(out, "Flame graph: t&lt;&amp;&gt;"));
	assert_non_null(strstr(out, "data-kind=\"native\""));
	assert_non_null(strstr(out, "data-samples=\"3\""));
	free(out);
	profile_free(&p);
}

static void speedscope_escapes_json(void **state)
{
	struct profile p;
	size_t len;
	char *out;

	build(&p);
	out = render(&p, FMT_SPEEDSCOPE, &len);
	assert_clean_utf8(out, len);
	/* quote and backslash escaped, control as \u0001, bad bytes as U+FFFD */
	assert_non_null(strstr(out, "\"name\":\"<script>&\\\"'\\u0001x\xef\xbf\xbd\xef\xbf\xbd\""));
	assert_non_null(strstr(out, "\"weights\":[30000000]"));
	/* root first: main, then memcpy, then the leaf */
	assert_non_null(strstr(out, "\"frames\":[{\"name\":\"main\",\"file\":\"/w/app.py\",\"line\":5},"
				    "{\"name\":\"memcpy\",\"file\":\"libc.so.6\"}"));
	assert_non_null(strstr(out, "\"samples\":[[0,1,2]]"));
	free(out);
	profile_free(&p);
}

static void pprof_is_gzip_and_deterministic(void **state)
{
	struct profile p;
	size_t a_len, b_len;
	char *a, *b;

	build(&p);
	a = render(&p, FMT_PPROF, &a_len);
	b = render(&p, FMT_PPROF, &b_len);
	assert_true(a_len > 20);
	assert_int_equal((unsigned char)a[0], 0x1f);
	assert_int_equal((unsigned char)a[1], 0x8b);
	assert_int_equal(a[4] | a[5] | a[6] | a[7], 0); /* no time stamp */
	assert_int_equal(a_len, b_len);
	assert_memory_equal(a, b, a_len);
	free(a);
	free(b);
	profile_free(&p);
}

static void empty_profiles_are_valid_files(void **state)
{
	struct profile p;
	size_t len;
	char *out;

	profile_init(&p);
	out = render(&p, FMT_SVG, &len);
	assert_non_null(strstr(out, "no samples"));
	assert_non_null(strstr(out, "</svg>"));
	free(out);
	out = render(&p, FMT_SPEEDSCOPE, &len);
	assert_non_null(strstr(out, "\"profiles\":[]"));
	free(out);
	out = render(&p, FMT_PPROF, &len);
	assert_true(len > 10);
	free(out);
	profile_free(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(svg_escapes_markup_and_bad_bytes),
		cmocka_unit_test(speedscope_escapes_json),
		cmocka_unit_test(pprof_is_gzip_and_deterministic),
		cmocka_unit_test(empty_profiles_are_valid_files),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
