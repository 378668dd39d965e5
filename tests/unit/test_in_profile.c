/* test_in_profile.c - our outputs read back (in_profile.c).  A hand-built
 * profile with Python (by line, Cython, unreadable code), native, JIT,
 * kernel and marker frames and a name that needs cleaning, written by our
 * own writers as folded, pprof and speedscope, reads back from all three as
 * the same stacks with the same values, labelled as the folded output labels
 * them; the unit is what each format says (cpu, wall, faults, leaks); with
 * several processes each stack gets its process frame; and files that are
 * empty, garbage, a cut gzip, bad JSON, too large, or folded lines without a
 * count are refused in one line that names the file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "in_profile.h"
#include "linetable.h"
#include "merge.h"
#include "output.h"
#include "profile.h"
#include "profutil.h"
#include "testutil.h"

#define PID 4000000u
#define PID_B 4000001u

/* lnotab: line 10 for offsets 0-3, line 11 from offset 4 */
static uint8_t lnotab[] = { 4, 1 };
static struct binary libc = { "/lib/x86_64-linux-gnu/libc.so.6", "00112233", 0x1000, 0x9000, 0x800 };
static struct binary py = { "/usr/bin/python3.12", "44556677", 0x1000, 0x9000, 0x800 };
static struct binary mod = { "/w/mod.cpython-312-x86_64-linux-gnu.so", "", 0x1000, 0x9000, 0 };
static struct func f_main = { .name = "main", .file = "/w/app.py", .firstlineno = 5,
			      .lt_kind = LT_LNOTAB, .kind = FN_PYTHON };
static struct func f_leaf = { .name = "leaf", .file = "/w/app.py", .firstlineno = 10,
			      .lt_kind = LT_LNOTAB, .lt = lnotab, .lt_len = sizeof(lnotab),
			      .kind = FN_PYTHON };
static struct func f_odd = { .name = "odd;name\xff", .file = "/w/app.py", .firstlineno = 30,
			     .lt_kind = LT_LNOTAB, .kind = FN_PYTHON };
/* a Cython function: Python, with a binary and its own line */
static struct func f_cy = { .name = "mod.cyfunc", .file = "/w/mod.pyx", .firstlineno = 3,
			    .kind = FN_PYTHON, .bin = &mod, .addr = 0x2000, .line = 7 };
static struct func f_memcpy = { .name = "memcpy", .file = "libc.so.6", .kind = FN_NATIVE,
				.bin = &libc, .addr = 0x4242 };
static struct func f_eval = { .name = "_PyEval_EvalFrameDefault", .file = "python3.12",
			      .kind = FN_EVAL, .bin = &py, .addr = 0x3000 };
static struct func f_unknown = { .name = "[unknown]", .file = "", .kind = FN_NATIVE };
static struct func f_jit = { .name = "py::leaf:/w/app.py", .file = "[jit]", .kind = FN_NATIVE };

#define MARK(m) ((struct func *)&(m))

static const uint64_t kips[] = { 0xffffffff81000001ull, 0xffffffff81000002ull };

/* what every format must read back from build_cpu's profile with lines */
static const char *const cpu_stacks[] = {
	"main (/w/app.py:5);leaf (/w/app.py:11) 7",
	"main (/w/app.py:5);_PyEval_EvalFrameDefault (python3.12);memcpy (libc.so.6) 3",
	"main (/w/app.py:5);[unknown];do_syscall_64_[k];ksys_read_[k] 2",
	"[truncated];[incomplete];main (/w/app.py:5);mod.cyfunc (/w/mod.pyx:7);<GC> 1",
	"main (/w/app.py:5);odd:name\xef\xbf\xbd (/w/app.py:30);[native incomplete];"
	"py::leaf:/w/app.py ([jit]) 4",
	"main (/w/app.py:5);<unknown code 0x1234> (<unknown>:-1) 1",
};

static void name_kernel(struct profile *p)
{
	char *names[] = { strdup("ksys_read"), strdup("do_syscall_64") };

	profile_set_kernel_names(p, kips, names, 2);
}

/* one process, two threads; *unk is freed by the caller (func_free) */
static void build_cpu(struct profile *p, struct func **unk)
{
	*unk = func_unknown_code(0x1234);
	assert_non_null(*unk);
	profile_init(p);
	profile_describe_proc(p, PID, "python3", "python3 app.py");
	profile_set_thread_name(p, PID, 7, "python3");
	profile_set_thread_name(p, PID, 8, "worker");
	add_stack(p, PID, 1, 7, 0, 5, NULL, 0, 2, &f_leaf, 4u, &f_main, 0u);
	add_stack(p, PID, 1, 8, 0, 2, NULL, 0, 2, &f_leaf, 4u, &f_main, 0u);
	add_stack(p, PID, 2, 7, 0, 3, NULL, 0, 3, &f_memcpy, 0u, &f_eval, 0u, &f_main, 0u);
	add_stack(p, PID, 3, 7, 0, 2, kips, 2, 2, &f_unknown, 0u, &f_main, 0u);
	add_stack(p, PID, 4, 7, STACK_TRUNCATED | STACK_BAD_READ, 1, NULL, 0, 3,
		  MARK(merge_mark_in_gc), 0u, &f_cy, 0u, &f_main, 0u);
	add_stack(p, PID, 5, 8, 0, 4, NULL, 0, 4, &f_jit, 0u, MARK(merge_mark_incomplete), 0u,
		  &f_odd, 0u, &f_main, 0u);
	add_stack(p, PID, 6, 8, 0, 1, NULL, 0, 2, *unk, 0u, &f_main, 0u);
	name_kernel(p);
}

/* c's profile written as format fmt into the test directory; its path */
static const char *write_as(const struct out_ctx *c, int fmt, const char *name)
{
	static char path[3][128];
	static int next;
	char *out = path[next++ % 3];
	FILE *f;

	snprintf(out, sizeof(path[0]), "%s/%s", test_dir, name);
	f = fopen(out, "w");
	assert_non_null(f);
	assert_int_equal(out_write(f, c, fmt), 0);
	assert_int_equal(fclose(f), 0);
	return out;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* p's stacks as "frame;frame;... VALUE", sorted; *n of them */
static char **stack_lines(const struct in_profile *p)
{
	char **v = calloc(p->n + 1, sizeof(char *));

	assert_non_null(v);
	for (size_t i = 0; i < p->n; i++) {
		struct sbuf b = { 0 };

		for (size_t j = 0; j < p->v[i].n; j++) {
			sb_puts(&b, p->v[i].frames[j]);
			sb_putc(&b, j + 1 < p->v[i].n ? ';' : ' ');
		}
		sb_printf(&b, "%.15g", p->v[i].value);
		assert_true(sb_ok(&b));
		v[i] = strdup(sb_str(&b));
		sb_free(&b);
	}
	qsort(v, p->n, sizeof(char *), cmp_str);
	return v;
}

static void free_lines(char **v)
{
	for (size_t i = 0; v[i]; i++)
		free(v[i]);
	free(v);
}

/* read path (its format fmt, its unit unit) and compare with want[0..n) */
static void expect(const char *path, const char *fmt, const char *unit,
		   const char *const *want, size_t n)
{
	struct in_profile p;
	char err[512] = "", **got, **w = calloc(n + 1, sizeof(char *));
	double total = 0;

	if (in_profile_read(path, &p, err, sizeof(err)))
		fail_msg("%s", err);
	assert_string_equal(p.format, fmt);
	assert_string_equal(p.unit, unit);
	got = stack_lines(&p);
	assert_non_null(w);
	memcpy(w, want, n * sizeof(char *));
	qsort(w, n, sizeof(char *), cmp_str);
	for (size_t i = 0; i < n || i < p.n; i++)
		if (i >= n || i >= p.n || strcmp(got[i], w[i]))
			fail_msg("%s, stack %zu:\n got  %s\n want %s", path, i,
				 i < p.n ? got[i] : "(none)", i < n ? w[i] : "(none)");
	for (size_t i = 0; i < p.n; i++)
		total += p.v[i].value;
	assert_true(total == p.total);
	free(w);
	free_lines(got);
	in_profile_free(&p);
}

static void three_formats_read_back_as_the_same_stacks(void **state)
{
	struct out_ctx c = { .lines = true, .duration_s = 1, .freq = 100, .title = "python3 app.py" };
	struct profile p;
	struct func *unk;
	size_t n = sizeof(cpu_stacks) / sizeof(cpu_stacks[0]);

	build_cpu(&p, &unk);
	c.prof = &p;
	expect(write_as(&c, FMT_FOLDED, "cpu.folded"), "folded", "", cpu_stacks, n);
	expect(write_as(&c, FMT_PPROF, "cpu.pb.gz"), "pprof", "samples", cpu_stacks, n);
	/* weights of 1e7 ns (100 Hz) per sample, read back as samples */
	expect(write_as(&c, FMT_SPEEDSCOPE, "cpu.speedscope.json"), "speedscope", "samples",
	       cpu_stacks, n);
	profile_free(&p);
	func_free(unk);
}

/* --no-lines: folded and pprof by function; speedscope keeps each
 * function's first line (it writes one), which diff --no-lines drops */
static void no_lines_by_function(void **state)
{
	static const char *const want[] = { "main (/w/app.py);leaf (/w/app.py) 7" };
	static const char *const ss[] = { "main (/w/app.py:5);leaf (/w/app.py:10) 7" };
	struct out_ctx c = { .lines = false, .duration_s = 1, .freq = 99 };
	struct profile p;

	profile_init(&p);
	add_stack(&p, PID, 1, 7, 0, 5, NULL, 0, 2, &f_leaf, 4u, &f_main, 0u);
	add_stack(&p, PID, 2, 7, 0, 2, NULL, 0, 2, &f_leaf, 0u, &f_main, 0u);
	c.prof = &p;
	expect(write_as(&c, FMT_FOLDED, "nl.folded"), "folded", "", want, 1);
	expect(write_as(&c, FMT_PPROF, "nl.pb.gz"), "pprof", "samples", want, 1);
	expect(write_as(&c, FMT_SPEEDSCOPE, "nl.speedscope.json"), "speedscope", "samples", ss, 1);
	profile_free(&p);
}

/* several processes: a root frame each, "process PID COMMAND LINE" as
 * folded writes it; pprof holds the command's name only */
static void several_processes_get_process_frames(void **state)
{
	static const char *const want[] = {
		"process 4000000 python3;main (/w/app.py:5) 3",
		"process 4000001 python3 b.py;main (/w/app.py:5) 2",
	};
	static const char *const pprof[] = {
		"process 4000000 python3;main (/w/app.py:5) 3",
		"process 4000001 python3;main (/w/app.py:5) 2",
	};
	struct out_ctx c = { .lines = true, .proc_frames = true, .duration_s = 1, .freq = 100 };
	struct profile p;

	profile_init(&p);
	profile_describe_proc(&p, PID, "python3", "");
	profile_describe_proc(&p, PID_B, "python3", "python3 b.py");
	add_stack(&p, PID, 1, 7, 0, 3, NULL, 0, 1, &f_main, 0u);
	add_stack(&p, PID_B, 1, 9, 0, 2, NULL, 0, 1, &f_main, 0u);
	c.prof = &p;
	expect(write_as(&c, FMT_FOLDED, "procs.folded"), "folded", "", want, 2);
	expect(write_as(&c, FMT_SPEEDSCOPE, "procs.speedscope.json"), "speedscope", "samples", want, 2);
	expect(write_as(&c, FMT_PPROF, "procs.pb.gz"), "pprof", "samples", pprof, 2);
	profile_free(&p);
}

/* each mode's quantity: wall time (folded in microseconds), bytes of
 * faults, live bytes (leaks: pprof's inuse_space), cpu without a frequency */
static void each_mode_reads_its_unit(void **state)
{
	static const char *const ns[] = { "main (/w/app.py:5) 1500001",
					  "main (/w/app.py:5);leaf (/w/app.py:10) 2750003" };
	static const char *const us[] = { "main (/w/app.py:5) 1500",
					  "main (/w/app.py:5);leaf (/w/app.py:10) 2750" };
	static const char *const bytes[] = { "main (/w/app.py:5) 12288",
					     "main (/w/app.py:5);leaf (/w/app.py:10) 20480" };
	struct out_ctx c = { .lines = true, .duration_s = 1, .freq = 100, .mode = MODE_WALL };
	struct profile p;

	/* wall: nanoseconds, not a multiple of the period */
	profile_init(&p);
	add_stack(&p, PID, 1, 7, 0, 1500001, NULL, 0, 1, &f_main, 0u);
	add_stack(&p, PID, 2, 7, 0, 2750003, NULL, 0, 2, &f_leaf, 0u, &f_main, 0u);
	c.prof = &p;
	expect(write_as(&c, FMT_FOLDED, "wall.folded"), "folded", "", us, 2);
	expect(write_as(&c, FMT_PPROF, "wall.pb.gz"), "pprof", "nanoseconds", ns, 2);
	expect(write_as(&c, FMT_SPEEDSCOPE, "wall.speedscope.json"), "speedscope", "nanoseconds",
	       ns, 2);
	/* cpu without a frequency: speedscope's unit "none", counts */
	c.mode = MODE_CPU;
	c.freq = 0;
	expect(write_as(&c, FMT_SPEEDSCOPE, "nofreq.speedscope.json"), "speedscope", "samples",
	       ns, 2);
	profile_free(&p);

	for (int m = 0; m < 2; m++) {
		profile_init(&p);
		add_stack(&p, PID, 1, 7, 0, 3 * 4096, NULL, 0, 1, &f_main, 0u);
		add_stack(&p, PID, 2, 7, 0, 5 * 4096, NULL, 0, 2, &f_leaf, 0u, &f_main, 0u);
		c.prof = &p;
		c.mode = m ? MODE_LEAKS : MODE_FAULTS;
		expect(write_as(&c, FMT_FOLDED, "mem.folded"), "folded", "", bytes, 2);
		expect(write_as(&c, FMT_PPROF, "mem.pb.gz"), "pprof", "bytes", bytes, 2);
		expect(write_as(&c, FMT_SPEEDSCOPE, "mem.speedscope.json"), "speedscope", "bytes",
		       bytes, 2);
		profile_free(&p);
	}
}

static const char *put_file(const char *name, const void *data, size_t len)
{
	static char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", test_dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
	return path;
}

#define PUT(name, lit) put_file(name, lit, sizeof(lit) - 1)

static void folded_counts_may_be_decimal_and_lines_blank(void **state)
{
	static const char *const want[] = { "a;b 3.5", "c d (x.py:1) 0.25" };

	expect(PUT("dec.folded", "a;b 1.5\r\n\n  \na;b 2\nc d (x.py:1) 0.25\n"), "folded", "",
	       want, 2);
}

/* evented speedscope (not ours): each open stack weighs the time until the
 * next event */
static void evented_speedscope_weighs_open_time(void **state)
{
	static const char *const want[] = { "a (f.py:1) 7", "a (f.py:1);b 3" };

	expect(PUT("ev.speedscope.json",
		   "{\"shared\":{\"frames\":[{\"name\":\"a\",\"file\":\"f.py\",\"line\":1},"
		   "{\"name\":\"b\"}]},\"profiles\":[{\"type\":\"evented\",\"unit\":\"milliseconds\","
		   "\"startValue\":0,\"endValue\":10,\"events\":[{\"type\":\"O\",\"frame\":0,\"at\":0},"
		   "{\"type\":\"O\",\"frame\":1,\"at\":2},{\"type\":\"C\",\"frame\":1,\"at\":5},"
		   "{\"type\":\"C\",\"frame\":0,\"at\":10}]}]}"),
	       "speedscope", "milliseconds", want, 2);
}

/* path refused: -1, one line naming it (and what), nothing kept */
static void refused(const char *path, const char *what)
{
	struct in_profile p;
	char err[512] = "";

	assert_int_equal(in_profile_read(path, &p, err, sizeof(err)), -1);
	if (!strstr(err, path) || !strstr(err, what) || strchr(err, '\n'))
		fail_msg("message for %s: '%s', want the path and '%s' in one line", path, err, what);
	assert_int_equal(p.n, 0);
	assert_null(p.v);
}

/* a pprof cut in the middle */
static const char *cut_pprof(void)
{
	struct out_ctx c = { .lines = true, .duration_s = 1, .freq = 100 };
	static char path[128];
	struct profile p;
	struct func *unk;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	build_cpu(&p, &unk);
	c.prof = &p;
	assert_int_equal(out_pprof(f, &c), 0);
	fclose(f);
	snprintf(path, sizeof(path), "%s", put_file("cut.pb.gz", buf, len / 2));
	free(buf);
	profile_free(&p);
	func_free(unk);
	return path;
}

static void bad_files_are_refused_naming_the_file(void **state)
{
	char big[128];
	FILE *f;

	refused(PUT("empty.folded", ""), "empty");
	refused(PUT("garbage.folded", "\x7f" "ELF\x02\x01\x01\x00\x00garbage"), "not a profile");
	refused(PUT("garbage.pb.gz", "\x1f\x8b\x08garbage"), "gzip");
	refused(cut_pprof(), "cut short");
	refused(PUT("nocount.folded", "a;b 3\nc;d\n"), "line 2");
	refused(PUT("badcount.folded", "a;b 3\nc;d x\n"), "not a count");
	refused(PUT("bad.speedscope.json", "{ \"shared\": "), "not JSON");
	refused(PUT("frame.speedscope.json",
		    "{\"shared\":{\"frames\":[{\"name\":\"a\"}]},\"profiles\":[{\"type\":\"sampled\","
		    "\"unit\":\"none\",\"samples\":[[0,1]],\"weights\":[1]}]}"), "shared frames");
	refused(PUT("notss.json", "{\"a\": 1}"), "not a speedscope file");
	snprintf(big, sizeof(big), "%s/missing.folded", test_dir);
	refused(big, "No such file");
	/* 1 GiB (sparse): refused by its size, unread */
	snprintf(big, sizeof(big), "%s/big.folded", test_dir);
	f = fopen(big, "w");
	assert_non_null(f);
	assert_int_equal(ftruncate(fileno(f), 1L << 30), 0);
	fclose(f);
	refused(big, "more than");
	unlink(big);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(three_formats_read_back_as_the_same_stacks),
		cmocka_unit_test(no_lines_by_function),
		cmocka_unit_test(several_processes_get_process_frames),
		cmocka_unit_test(each_mode_reads_its_unit),
		cmocka_unit_test(folded_counts_may_be_decimal_and_lines_blank),
		cmocka_unit_test(evented_speedscope_weighs_open_time),
		cmocka_unit_test(bad_files_are_refused_naming_the_file),
	};

	return cmocka_run_group_tests(tests, test_dir_make, test_dir_remove);
}
