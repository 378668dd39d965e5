/* test_nsym.c - cmocka tests for user/native/nsym.c against real binaries.
 *
 * Ground truth comes from binutils (nm, readelf, objdump via popen) and from
 * binaries the tests build themselves with gcc/g++/objcopy/strip, never from
 * libdwfl: exported functions of libc and libpython, the size check that
 * keeps a stripped binary's static functions from borrowing an exported name
 * (python3.11 of Debian: non-PIE, .dynsym only), its separate debug file
 * found by build-id, .gnu_debuglink and .gnu_debugdata (MiniDebugInfo)
 * lookups, an ET_DYN whose first segment is not at 0, PLT stubs, C++
 * demangling, and bad input.  A required binary that is missing fails the
 * test; optional ones (python3.11-dbg's debug file) skip with a reason.
 *
 * Build: gcc -std=c11 -D_GNU_SOURCE -Wall -Wextra -Iuser/native -Iuser/lib user/native/nsym.c \
 *        user/lib/demangle.c user/lib/dynlib.c tests/unit/test_nsym.c -ldw -lelf -ldl \
 *        -lcmocka -o /tmp/t */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <dirent.h>

#include "nsym.h"
#include "runcache.h"
#include "testutil.h"


/* ---- helpers ----------------------------------------------------------- */

/* One line of `nm -S` output; size 0 when nm printed none. */
struct nmsym {
	uint64_t value, size;
	char type;
	char name[200];
};

struct nmlist {
	struct nmsym *v;
	size_t n;
};

static int cmp_nmsym(const void *a, const void *b)
{
	const struct nmsym *x = a, *y = b;

	return x->value < y->value ? -1 : x->value > y->value;
}

/* `nm ARGS -S --defined-only PATH`, versions ("@@GLIBC_2.2.5") cut off,
 * sorted by value. */
static struct nmlist nm_list(const char *args, const char *path)
{
	char cmd[1024], line[4096];
	struct nmlist l = { NULL, 0 };
	size_t cap = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "nm %s -S --defined-only '%s' 2>/dev/null", args, path);
	if (!(p = popen(cmd, "r")))
		fail_msg("popen(%s): %s", cmd, strerror(errno));
	while (fgets(line, sizeof(line), p)) {
		struct nmsym s = { 0 };
		char *tok[4], *save = NULL;
		int nt = 0;

		/* "VALUE SIZE TYPE NAME", or "VALUE TYPE NAME" when sizeless
		 * (a longer name is cut, the same way for every symbol) */
		for (char *t = strtok_r(line, " \t\n", &save); t && nt < 4;
		     t = strtok_r(NULL, " \t\n", &save))
			tok[nt++] = t;
		if (nt < 3 || strlen(tok[nt - 2]) != 1)
			continue;
		s.value = strtoull(tok[0], NULL, 16);
		s.size = nt == 4 ? strtoull(tok[1], NULL, 16) : 0;
		s.type = tok[nt - 2][0];
		snprintf(s.name, sizeof(s.name), "%.199s", tok[nt - 1]);
		*strchrnul(s.name, '@') = 0;
		if (l.n == cap) {
			cap = cap ? cap * 2 : 1024;
			l.v = realloc(l.v, cap * sizeof(*l.v));
			assert_non_null(l.v);
		}
		l.v[l.n++] = s;
	}
	pclose(p);
	if (!l.n)
		fail_msg("%s printed nothing", cmd);
	qsort(l.v, l.n, sizeof(*l.v), cmp_nmsym);
	return l;
}

static bool is_code_type(char t)
{
	return strchr("TtWi", t) != NULL;
}

/* the code symbol `name` in l, or NULL */
static const struct nmsym *nm_find(const struct nmlist *l, const char *name)
{
	for (size_t i = 0; i < l->n; i++)
		if (!strcmp(l->v[i].name, name) && is_code_type(l->v[i].type))
			return &l->v[i];
	return NULL;
}

/* Does some symbol of l start at addr, or (sized) contain it? */
static bool nm_covers(const struct nmlist *l, uint64_t addr)
{
	for (size_t i = 0; i < l->n && l->v[i].value <= addr; i++)
		if (l->v[i].value == addr || addr - l->v[i].value < l->v[i].size)
			return true;
	return false;
}

/* where open_bin has separate debug files searched (NULL: the default) */
static const char *debuginfo_path;

static struct nsym_bin *open_as(const char *file, const char *path)
{
	char err[256] = "";
	int fd = open(file, O_RDONLY);
	struct nsym_bin *b;

	if (fd < 0)
		fail_msg("open %s: %s", file, strerror(errno));
	b = nsym_open(fd, path, debuginfo_path, err, sizeof(err));
	close(fd); /* nsym keeps its own descriptor */
	if (!b)
		fail_msg("nsym_open(%s): %s", path, err);
	return b;
}

static struct nsym_bin *open_bin(const char *path)
{
	return open_as(path, path);
}

/* nsym names `s` (from nm) at its start, start + 1 and its last byte, and
 * nsym_lookup gives its extent. */
static void expect_function(struct nsym_bin *b, const struct nmsym *s, const char *shown)
{
	uint64_t offs[] = { 0, 1, s->size / 2, s->size - 1 };
	uint64_t start, end;
	char buf[512];

	if (!s->size)
		fail_msg("%s has no size in nm's output", s->name);
	for (size_t i = 0; i < sizeof(offs) / sizeof(offs[0]); i++) {
		start = 0;
		if (nsym_name(b, s->value + offs[i], buf, sizeof(buf), &start) != 1)
			fail_msg("%s+%#" PRIx64 ": not named (%s)", s->name, offs[i], buf);
		if (strcmp(buf, shown))
			fail_msg("%s+%#" PRIx64 ": named %s", s->name, offs[i], buf);
		assert_u64_equal(start, s->value, s->name);
	}
	if (nsym_lookup(b, s->name, &start, &end) != 0)
		fail_msg("nsym_lookup(%s) failed", s->name);
	assert_u64_equal(start, s->value, s->name);
	assert_u64_equal(end, s->value + s->size, s->name);
}

static void expect_exported(struct nsym_bin *b, const struct nmlist *dyn, const char *name)
{
	const struct nmsym *s = nm_find(dyn, name);

	if (!s)
		fail_msg("nm -D finds no %s", name);
	expect_function(b, s, name);
}

static void expect_fallback(struct nsym_bin *b, uint64_t addr)
{
	char buf[256], want[256];
	uint64_t start = 1;

	snprintf(want, sizeof(want), "%s+0x%" PRIx64, nsym_module(b), addr);
	if (nsym_name(b, addr, buf, sizeof(buf), &start) != 0 || strcmp(buf, want))
		fail_msg("%#" PRIx64 ": got %s, expected the fallback %s", addr, buf, want);
	assert_u64_equal(start, addr, want);
}

/* The debug file of `path` under ROOT/.build-id, by readelf -n; 0 if it
 * exists. */
static int debug_file_under(const char *root, const char *path, char *out, size_t len)
{
	char cmd[512], line[512], id[128] = "";
	FILE *p;

	snprintf(cmd, sizeof(cmd), "readelf -n '%s' 2>/dev/null", path);
	assert_non_null(p = popen(cmd, "r"));
	while (fgets(line, sizeof(line), p))
		if (sscanf(line, " Build ID: %127s", id) == 1)
			break;
	pclose(p);
	if (strlen(id) < 3)
		return -1;
	snprintf(out, len, "%s/.build-id/%.2s/%s.debug", root, id, id + 2);
	return access(out, R_OK);
}

/* the one under /usr/lib/debug */
static int build_id_debug_file(const char *path, char *out, size_t len)
{
	return debug_file_under("/usr/lib/debug", path, out, len);
}

static char tmpdir[64];

static int make_tmpdir(void **state)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/pyperf-nsym-XXXXXX");
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int remove_tmpdir(void **state)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (!f)
		fail_msg("%s: %s", path, strerror(errno));
	fputs(text, f);
	fclose(f);
}

/* C program with static (non-exported) functions, for the debug-file tests */
static const char static_src[] =
	"#include <stdio.h>\n"
	"__attribute__((noinline)) static int hidden_helper(int x)\n"
	"{ int s = 0; for (int i = 0; i < x; i++) s += i * i ^ x; return s; }\n"
	"__attribute__((noinline)) static int hidden_other(int x)\n"
	"{ return hidden_helper(x) * 7 + x; }\n"
	"int (*volatile fp)(int) = hidden_other;\n"
	"int visible(int x) { return fp(x) + 1; }\n"
	"int main(int c, char **v) { printf(\"%d\\n\", visible(c)); return 0; }\n";

/* ---- tests ------------------------------------------------------------- */

/* 1. exported functions of libc, by nm -D */
static void libc_exported_functions(void **state)
{
	struct nmlist dyn;
	struct nsym_bin *b;

	require_file(LIBC);
	dyn = nm_list("-D", LIBC);
	b = open_bin(LIBC);
	assert_string_equal(nsym_module(b), "libc.so.6");
	expect_exported(b, &dyn, "qsort");
	expect_exported(b, &dyn, "getpid"); /* over its aliases __getpid etc. */
	expect_exported(b, &dyn, "malloc"); /* over __libc_malloc */
	expect_exported(b, &dyn, "abort");
	nsym_close(b);
	free(dyn.v);
}

/* 2a. the stripped python3.11 without its debug file: exported functions
 * are named, and the first address past each exported function that no
 * exported symbol covers is MODULE+0xOFF, not the function before it. */
static void stripped_binary_does_not_borrow_names(void **state)
{
	const char *saved = debuginfo_path;
	struct nmlist dyn;
	struct nsym_bin *b;
	size_t checked = 0;

	require_file(PY311);
	dyn = nm_list("-D", PY311);
	debuginfo_path = "/nonexistent"; /* no build-id or debuglink file */
	b = open_bin(PY311);
	debuginfo_path = saved;
	assert_string_equal(nsym_module(b), "python3.11");
	expect_exported(b, &dyn, "_PyEval_EvalFrameDefault");
	expect_exported(b, &dyn, "PyObject_Vectorcall");
	for (size_t i = 0; i < dyn.n; i++) {
		const struct nmsym *f = &dyn.v[i];

		if (!is_code_type(f->type) || !f->size || nm_covers(&dyn, f->value + f->size))
			continue;
		expect_fallback(b, f->value + f->size);
		checked++;
	}
	printf("  %zu addresses past exported functions fall back\n", checked);
	assert_true(checked > 500);
	assert_int_equal(nsym_has_debug_file(b), 0);
	nsym_close(b);
	free(dyn.v);
}

/* 2c. Debian's stripped interpreters without their debug files: gcc split
 * the eval loop, and the part .symtab alone calls
 * _PyEval_EvalFrameDefault.cold (in 3.14 and 3.15 the part that runs the
 * opcodes) is still found, over exactly the range the debug file gives it,
 * from .dynsym's _PyEval_EvalFrameDefault, its jumps and .eh_frame. */
static void eval_loop_parts_without_debug_file(void **state)
{
	static const char *const pythons[][2] = {
		{ PY311, "/usr/lib/debug" },
		{ "/opt/pyperf-sid/usr/bin/python3.14", "/opt/pyperf-sid/usr/lib/debug" },
		{ "/opt/pyperf-sid/usr/bin/python3.15", "/opt/pyperf-sid/usr/lib/debug" },
	};
	const char *saved = debuginfo_path;
	size_t checked = 0;

	for (size_t i = 0; i < sizeof(pythons) / sizeof(pythons[0]); i++) {
		const struct nmsym *cold;
		struct nsym_bin *b;
		struct nmsym part;
		struct nmlist dbg;
		char debug[512];

		if (access(pythons[i][0], X_OK) ||
		    debug_file_under(pythons[i][1], pythons[i][0], debug, sizeof(debug))) {
			printf("  %s: skipped: no debug file to check against (scripts/setup --test-deps)\n",
			       pythons[i][0]);
			continue;
		}
		dbg = nm_list("", debug);
		if (!(cold = nm_find(&dbg, "_PyEval_EvalFrameDefault.cold")))
			fail_msg("%s: no _PyEval_EvalFrameDefault.cold in %s", pythons[i][0], debug);
		debuginfo_path = "/nonexistent";
		b = open_bin(pythons[i][0]);
		debuginfo_path = saved;
		part = *cold;
		snprintf(part.name, sizeof(part.name), "_PyEval_EvalFrameDefault.part");
		expect_function(b, &part, "_PyEval_EvalFrameDefault.part");
		assert_int_equal(nsym_has_debug_file(b), 0);
		nsym_close(b);
		free(dbg.v);
		checked++;
	}
	if (!checked)
		skip();
}

/* 2b. with python3.11-dbg's file under /usr/lib/debug/.build-id: static
 * functions are named after the debug file's .symtab (nm on that file) */
static void stripped_binary_with_build_id_debug_file(void **state)
{
	char debug[256], buf[512];
	struct nmlist dbg, dyn;
	struct nsym_bin *b;
	size_t checked = 0, past = 0;

	require_file(PY311);
	if (build_id_debug_file(PY311, debug, sizeof(debug)) != 0) {
		printf("  skipped: no %s (install python3.11-dbg)\n", debug);
		skip();
	}
	dbg = nm_list("", debug);
	dyn = nm_list("-D", PY311);
	b = open_bin(PY311);
	assert_int_equal(nsym_has_debug_file(b), 1);
	expect_exported(b, &dyn, "_PyEval_EvalFrameDefault");
	/* the interpreter loop's cold part is a local symbol */
	expect_function(b, nm_find(&dbg, "_PyEval_EvalFrameDefault.cold"),
			"_PyEval_EvalFrameDefault.cold");
	for (size_t i = 0; i < dbg.n; i++) {
		const struct nmsym *s = &dbg.v[i];
		uint64_t start = 0;
		bool alias = false;

		/* every 20th sized static function not in .dynsym */
		if (s->type != 't' || !s->size || nm_covers(&dyn, s->value) || i % 20)
			continue;
		assert_int_equal(nsym_name(b, s->value + s->size - 1, buf, sizeof(buf), &start), 1);
		assert_u64_equal(start, s->value, s->name);
		/* one of the names at that address */
		for (size_t j = 0; j < dbg.n; j++)
			alias |= dbg.v[j].value == s->value && !strcmp(dbg.v[j].name, buf);
		if (!alias)
			fail_msg("%#" PRIx64 ": %s, nm says %s", s->value, buf, s->name);
		checked++;
	}
	/* addresses just past exported functions: now the static function
	 * starting there, if any */
	for (size_t i = 0; i < dyn.n; i++) {
		const struct nmsym *f = &dyn.v[i], *s;
		uint64_t a = f->value + f->size, start;

		if (!is_code_type(f->type) || !f->size || nm_covers(&dyn, a))
			continue;
		for (s = dbg.v; s < dbg.v + dbg.n && !(s->value == a && s->type == 't' && s->size); s++)
			;
		if (s == dbg.v + dbg.n)
			continue;
		assert_int_equal(nsym_name(b, a, buf, sizeof(buf), &start), 1);
		assert_u64_equal(start, a, buf);
		past++;
	}
	printf("  %zu static functions named, %zu right after an exported one\n", checked, past);
	assert_true(checked > 100 && past > 10);
	nsym_close(b);
	free(dbg.v);
	free(dyn.v);
}

/* 2c. .gnu_debuglink next to the binary, with the binary named by its path
 * and by a path that does not exist here (then via /proc/self/fd) */
static void debuglink_file_next_to_binary(void **state)
{
	char src[128], bin[128], cmd[1024], buf[256], elsewhere[160];
	struct nmlist full;
	const struct nmsym *helper;
	struct nsym_bin *b;
	const char *saved = debuginfo_path;

	snprintf(src, sizeof(src), "%s/s.c", tmpdir);
	snprintf(bin, sizeof(bin), "%s/dl", tmpdir);
	write_file(src, static_src);
	snprintf(cmd, sizeof(cmd),
		 "cd '%s' && gcc -O2 -g -o dl s.c && objcopy --only-keep-debug dl dl.debug &&"
		 " strip --strip-all dl && objcopy --add-gnu-debuglink=dl.debug dl", tmpdir);
	run(cmd);
	snprintf(cmd, sizeof(cmd), "%s/dl.debug", tmpdir);
	full = nm_list("", cmd);
	assert_non_null(helper = nm_find(&full, "hidden_helper"));

	b = open_bin(bin);
	assert_int_equal(nsym_has_debug_file(b), 1);
	expect_function(b, helper, "hidden_helper");
	nsym_close(b);

	/* the profiler may name a file that only exists in the target's mount
	 * namespace; move the debug file into .debug/ for good measure */
	snprintf(cmd, sizeof(cmd), "cd '%s' && mkdir .debug && mv dl.debug .debug/", tmpdir);
	run(cmd);
	snprintf(elsewhere, sizeof(elsewhere), "/nonexistent-%d/dl", (int)getpid());
	b = open_as(bin, elsewhere);
	assert_string_equal(nsym_module(b), "dl");
	assert_int_equal(nsym_has_debug_file(b), 1);
	expect_function(b, helper, "hidden_helper");
	nsym_close(b);

	/* and without a search path that includes the binary's directory */
	debuginfo_path = "/nonexistent";
	b = open_bin(bin);
	debuginfo_path = saved;
	assert_int_equal(nsym_has_debug_file(b), 0);
	expect_fallback(b, helper->value);
	assert_int_equal(nsym_name(b, helper->value + 1, buf, sizeof(buf), NULL), 0);
	nsym_close(b);
	free(full.v);
}

/* 2c'. a debug file named by the caller (one fetched from debuginfod, kept
 * where no search looks): it names the static functions; a stripped binary
 * without one wants one, a binary with its .symtab does not */
static void debug_file_given(void **state)
{
	char src[128], bin[128], dbg[160], cmd[1024], err[256];
	struct nmlist full;
	const struct nmsym *helper;
	struct nsym_bin *b;
	const char *saved = debuginfo_path;
	int fd;

	snprintf(src, sizeof(src), "%s/s.c", tmpdir);
	snprintf(bin, sizeof(bin), "%s/given", tmpdir);
	snprintf(dbg, sizeof(dbg), "%s/fetched/debuginfo", tmpdir);
	write_file(src, static_src);
	snprintf(cmd, sizeof(cmd),
		 "cd '%s' && gcc -O2 -g -o given s.c && mkdir -p fetched &&"
		 " objcopy --only-keep-debug given fetched/debuginfo && cp given given.full &&"
		 " strip --strip-all given", tmpdir);
	run(cmd);
	full = nm_list("", dbg);
	assert_non_null(helper = nm_find(&full, "hidden_helper"));
	debuginfo_path = "/nonexistent";
	b = open_bin(bin);
	assert_int_equal(nsym_wants_debug_file(b), 1);
	expect_fallback(b, helper->value);
	nsym_close(b);
	fd = open(bin, O_RDONLY);
	assert_true(fd >= 0);
	b = nsym_open_debug(fd, bin, debuginfo_path, dbg, err, sizeof(err));
	close(fd);
	assert_non_null(b);
	assert_int_equal(nsym_has_debug_file(b), 1);
	assert_int_equal(nsym_wants_debug_file(b), 0);
	expect_function(b, helper, "hidden_helper");
	nsym_close(b);
	/* the unstripped binary has all it needs */
	snprintf(cmd, sizeof(cmd), "%s.full", bin);
	b = open_bin(cmd);
	assert_int_equal(nsym_wants_debug_file(b), 0);
	nsym_close(b);
	debuginfo_path = saved;
	free(full.v);
}

/* 2d. .gnu_debugdata (MiniDebugInfo, as Fedora ships): an xz'd ELF with the
 * static functions' symbols inside the stripped binary */
static void minidebuginfo(void **state)
{
	char src[128], bin[128], cmd[2048];
	struct nmlist full;
	const struct nmsym *helper;
	struct nsym_bin *b;

	if (system("command -v xz >/dev/null 2>&1")) {
		printf("  skipped: no xz\n");
		skip();
	}
	snprintf(src, sizeof(src), "%s/s.c", tmpdir);
	snprintf(bin, sizeof(bin), "%s/mini", tmpdir);
	write_file(src, static_src);
	snprintf(cmd, sizeof(cmd),
		 "cd '%s' && gcc -O2 -g -o mini s.c && cp mini mini.full &&"
		 " nm mini.full --format=posix --defined-only | awk '$2 ~ /^[Tt]$/ {print $1}' > keep &&"
		 " objcopy -S --keep-symbols=keep mini.full mini.symtab &&"
		 " objcopy --only-keep-debug mini.symtab mini.mdi && xz -f mini.mdi &&"
		 " strip --strip-all mini && objcopy --add-section .gnu_debugdata=mini.mdi.xz mini",
		 tmpdir);
	run(cmd);
	snprintf(cmd, sizeof(cmd), "%s/mini.full", tmpdir);
	full = nm_list("", cmd);
	assert_non_null(helper = nm_find(&full, "hidden_helper"));
	b = open_bin(bin);
	expect_function(b, helper, "hidden_helper");
	assert_int_equal(nsym_has_debug_file(b), 0); /* not a separate file */
	nsym_close(b);
	free(full.v);
}

/* 5. libpython3.12 (ET_DYN, with .symtab) against nm -D */
static void libpython_functions(void **state)
{
	struct nmlist dyn;
	struct nsym_bin *b;

	require_file(LIBPY312);
	dyn = nm_list("-D", LIBPY312);
	b = open_bin(LIBPY312);
	assert_string_equal(nsym_module(b), "libpython3.12.so.1.0");
	expect_exported(b, &dyn, "PyObject_Vectorcall");
	expect_exported(b, &dyn, "_PyEval_EvalFrameDefault");
	expect_exported(b, &dyn, "PyLong_FromLong");
	assert_int_equal(nsym_has_debug_file(b), 0);
	nsym_close(b);
	free(dyn.v);
}

/* 5b. an ET_DYN whose first PT_LOAD is not at vaddr 0 (prelinked style):
 * names still come back at nm's (ELF vaddr) addresses */
static void shared_object_not_at_zero(void **state)
{
	char src[128], so[128], cmd[512], line[512];
	unsigned long long first = 0;
	struct nmlist dyn;
	struct nsym_bin *b;
	FILE *p;

	snprintf(src, sizeof(src), "%s/lib.c", tmpdir);
	snprintf(so, sizeof(so), "%s/libhigh.so", tmpdir);
	write_file(src, "__attribute__((noinline)) int high_one(int x) { return x * 5 + 3; }\n"
			"int high_two(int x) { return high_one(x) * high_one(x + 1); }\n");
	snprintf(cmd, sizeof(cmd), "gcc -O2 -shared -fPIC -Wl,-Ttext-segment=0x10000000 -o '%s' '%s'",
		 so, src);
	run(cmd);
	snprintf(cmd, sizeof(cmd), "readelf -lW '%s'", so);
	assert_non_null(p = popen(cmd, "r"));
	while (fgets(line, sizeof(line), p))
		if (sscanf(line, " LOAD 0x%*x 0x%llx", &first) == 1)
			break;
	pclose(p);
	assert_u64_equal(first, 0x10000000, "first PT_LOAD p_vaddr");
	dyn = nm_list("-D", so);
	b = open_bin(so);
	expect_exported(b, &dyn, "high_one");
	expect_exported(b, &dyn, "high_two");
	expect_fallback(b, 0x10);
	nsym_close(b);
	free(dyn.v);
}

/* PLT stubs have no symbol; they are "target@plt" like objdump's labels
 * (objdump -C: C++ targets demangled) */
static void check_plt(const char *path, int min)
{
	static const char *const sections[] = { ".plt", ".plt.sec", ".plt.got" };
	struct nsym_bin *b = open_bin(path);
	int checked = 0;

	for (size_t i = 0; i < 3; i++) {
		char cmd[512], line[1024], buf[512];
		FILE *p;

		snprintf(cmd, sizeof(cmd), "objdump -C -d -j %s '%s' 2>/dev/null", sections[i], path);
		assert_non_null(p = popen(cmd, "r"));
		while (fgets(line, sizeof(line), p)) {
			unsigned long long at;
			char *label = strchr(line, '<');
			size_t n;

			/* "000000000041f030 <PyObject_Free@plt>:"; not the
			 * resolver stub "first@plt-0x10" nor "*ABS*+0x...@plt"
			 * (IRELATIVE slots name no symbol) */
			line[strcspn(line, "\n")] = 0;
			n = strlen(line);
			if (sscanf(line, "%llx <", &at) != 1 || !label || n < 2 ||
			    strcmp(line + n - 2, ">:") || label[1] == '*')
				continue;
			line[n - 2] = 0;
			label++;
			if ((n = strlen(label)) < 5 || strcmp(label + n - 4, "@plt"))
				continue;
			if (nsym_name(b, at + 4, buf, sizeof(buf), NULL) != 1 || strcmp(buf, label))
				fail_msg("%s %#llx: %s, objdump says %s", path, at + 4, buf, label);
			checked++;
		}
		pclose(p);
	}
	printf("  %s: %d PLT stubs\n", path, checked);
	assert_true(checked >= min);
	nsym_close(b);
}

static void plt_stubs_are_named(void **state)
{
	require_file(PY311);
	require_file(LIBPY312);
	check_plt(PY311, 100);
	check_plt(LIBPY312, 100); /* has .plt.got too */
}

/* 3. C++ names are demangled, PLT stubs of C++ functions too (in an IBT
 * .plt.sec here); nsym_lookup takes the mangled name */
static void cxx_names_are_demangled(void **state)
{
	char src[128], bin[128], cmd[512];
	struct nmlist all;
	struct nsym_bin *b;
	uint64_t start, end;

	snprintf(src, sizeof(src), "%s/t.cc", tmpdir);
	snprintf(bin, sizeof(bin), "%s/cxx", tmpdir);
	write_file(src, "#include <string>\n"
			"namespace ns {\n"
			"__attribute__((noinline)) int work(int x) { return x * 3 + 1; }\n"
			"template <class T> struct Box { __attribute__((noinline)) T get(T y) const"
			" { return y * 2; } };\n"
			"}\n"
			"int main(int c, char **v) { ns::Box<long> b; std::string s(v[0]);\n"
			"  long *p = new long(c); int r = ns::work(c) + (int)b.get(*p) + (int)s.size();\n"
			"  delete p; return r; }\n");
	snprintf(cmd, sizeof(cmd), "g++ -O1 -fcf-protection -Wl,-z,ibtplt -o '%s' '%s'", bin, src);
	run(cmd);
	all = nm_list("", bin);
	b = open_bin(bin);
	expect_function(b, nm_find(&all, "_ZN2ns4workEi"), "ns::work(int)");
	expect_function(b, nm_find(&all, "_ZNK2ns3BoxIlE3getEl"), "ns::Box<long>::get(long) const");
	expect_exported(b, &all, "main");
	assert_int_equal(nsym_lookup(b, "ns::work(int)", &start, &end), -1);
	nsym_close(b);
	check_plt(bin, 4); /* std::__throw_logic_error(char const*)@plt, ... */
	free(all.v);
}

/* 4. bad input never crashes */
static void bad_input(void **state)
{
	char path[128], err[256], buf[64], cmd[512];
	struct nsym_bin *b;
	uint64_t start, end;
	int fd;

	snprintf(path, sizeof(path), "%s/bad", tmpdir);
	assert_true((fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600)) >= 0);
	err[0] = 0;
	assert_null(nsym_open(fd, path, NULL, err, sizeof(err))); /* empty */
	printf("  %s\n", err);
	assert_non_null(strstr(err, path));
	assert_int_equal(write(fd, "not an ELF file\n", 16), 16);
	err[0] = 0;
	assert_null(nsym_open(fd, path, NULL, err, sizeof(err)));
	printf("  %s\n", err);
	assert_non_null(strstr(err, "not an ELF"));
	close(fd);

	/* an ELF header and nothing else */
	snprintf(cmd, sizeof(cmd), "head -c 64 '%s' > '%s'", LIBC, path);
	run(cmd);
	assert_true((fd = open(path, O_RDONLY)) >= 0);
	err[0] = 0;
	assert_null(nsym_open(fd, path, NULL, err, sizeof(err)));
	printf("  %s\n", err);
	assert_true(err[0]);
	close(fd);

	/* a relocatable object is no mapped binary */
	snprintf(cmd, sizeof(cmd), "echo 'int f(void){return 1;}' | gcc -x c -c -o '%s' -", path);
	run(cmd);
	assert_true((fd = open(path, O_RDONLY)) >= 0);
	err[0] = 0;
	assert_null(nsym_open(fd, path, NULL, err, sizeof(err)));
	printf("  %s\n", err);
	assert_true(err[0]);
	close(fd);

	err[0] = 0;
	assert_null(nsym_open(-1, "nofd", NULL, err, sizeof(err)));
	assert_true(err[0]);
	assert_null(nsym_open(-1, NULL, NULL, err, 0)); /* no room for a message */
	nsym_close(NULL);

	b = open_bin(LIBC);
	expect_fallback(b, 0);
	assert_int_equal(nsym_name(b, 0, buf, sizeof(buf), NULL), 0);
	assert_string_equal(buf, "libc.so.6+0x0");
	expect_fallback(b, UINT64_MAX);
	expect_fallback(b, UINT64_MAX - 1);
	expect_fallback(b, 1ULL << 63);
	assert_int_equal(nsym_name(b, 0, buf, 5, NULL), 0); /* truncated */
	assert_string_equal(buf, "libc");
	assert_int_equal(nsym_name(b, 0, NULL, 0, &start), 0);
	assert_int_equal(nsym_lookup(b, "no_such_function_here", &start, &end), -1);
	assert_int_equal(nsym_lookup(b, "", &start, &end), -1);
	assert_int_equal(nsym_lookup(b, "stdout", &start, &end), -1); /* data */
	nsym_close(b);
}

/* Cached answers equal uncached ones: every address of libpython's .text
 * in steps, asked twice through a fresh and a warm cache. */
static void cache_gives_same_answers(void **state)
{
	struct nsym_bin *warm, *cold;
	char a[512], c[512];
	uint64_t sa, sc;
	int ra, rc;

	require_file(LIBPY312);
	warm = open_bin(LIBPY312);
	for (int pass = 0; pass < 2; pass++) {
		cold = open_bin(LIBPY312);
		for (uint64_t addr = 0x100000; addr < 0x380000; addr += 61) {
			ra = nsym_name(warm, addr, a, sizeof(a), &sa);
			rc = nsym_name(cold, addr, c, sizeof(c), &sc);
			if (ra != rc || sa != sc || strcmp(a, c))
				fail_msg("%#" PRIx64 ": %s vs %s", addr, a, c);
		}
		nsym_close(cold);
	}
	nsym_close(warm);
}

/* the kept symbols file used last (its mtime is its last use), or "" */
static void newest_kept(char *path, size_t len)
{
	struct timespec best = { 0, 0 };
	struct dirent *e;
	DIR *d = opendir(RUNCACHE_DIR);

	path[0] = 0;
	if (!d)
		return;
	while ((e = readdir(d))) {
		char p[512];
		struct stat st;

		if (strncmp(e->d_name, "sym-", 4))
			continue;
		snprintf(p, sizeof(p), "%s/%s", RUNCACHE_DIR, e->d_name);
		if (!stat(p, &st) && (st.st_mtim.tv_sec > best.tv_sec ||
				      (st.st_mtim.tv_sec == best.tv_sec &&
				       st.st_mtim.tv_nsec > best.tv_nsec))) {
			best = st.st_mtim;
			snprintf(path, len, "%s", p);
		}
	}
	closedir(d);
}

static void same_names(struct nsym_bin *x, struct nsym_bin *y)
{
	char a[512], c[512];
	uint64_t sa, sc;

	for (uint64_t addr = 0x100000; addr < 0x380000; addr += 61) {
		int ra = nsym_name(x, addr, a, sizeof(a), &sa), rc = nsym_name(y, addr, c, sizeof(c), &sc);

		if (ra != rc || sa != sc || strcmp(a, c))
			fail_msg("%#" PRIx64 ": %s vs %s", addr, a, c);
	}
}

/* A binary's symbols, loaded once, are kept in /run/pyperf-bpf and read
 * back by the next open of the same file (nsym_kept), naming every address
 * as the load did (PLT stubs included); a kept file cut short or altered
 * is not read, and the names stay right.  On a copy of libpython: a file
 * of its own, never kept before. */
static void kept_symbols_give_same_answers(void **state)
{
	struct nsym_bin *fresh, *kept, *again;
	char copy[256], cmd[600], file[512];
	int fd;

	require_file(LIBPY312);
	snprintf(copy, sizeof(copy), "%s/libpy-kept.so", tmpdir);
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", LIBPY312, copy);
	assert_int_equal(system(cmd), 0);
	fresh = open_bin(copy);
	assert_int_equal(nsym_kept(fresh), 0);
	kept = open_bin(copy);
	assert_int_equal(nsym_kept(kept), 1);
	same_names(fresh, kept);
	nsym_close(kept);
	/* cut short */
	newest_kept(file, sizeof(file));
	assert_true(file[0]);
	assert_int_equal(truncate(file, 1000), 0);
	again = open_bin(copy);
	assert_int_equal(nsym_kept(again), 0);
	same_names(fresh, again);
	nsym_close(again);
	/* kept again by that load; one byte of a name changed */
	kept = open_bin(copy);
	assert_int_equal(nsym_kept(kept), 1);
	nsym_close(kept);
	newest_kept(file, sizeof(file));
	fd = open(file, O_RDWR);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, "#", 1, lseek(fd, 0, SEEK_END) - 10), 1);
	close(fd);
	again = open_bin(copy);
	assert_int_equal(nsym_kept(again), 0);
	same_names(fresh, again);
	nsym_close(again);
	nsym_close(fresh);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(libc_exported_functions),
		cmocka_unit_test(stripped_binary_does_not_borrow_names),
		cmocka_unit_test(stripped_binary_with_build_id_debug_file),
		cmocka_unit_test(eval_loop_parts_without_debug_file),
		cmocka_unit_test(debuglink_file_next_to_binary),
		cmocka_unit_test(debug_file_given),
		cmocka_unit_test(minidebuginfo),
		cmocka_unit_test(libpython_functions),
		cmocka_unit_test(shared_object_not_at_zero),
		cmocka_unit_test(plt_stubs_are_named),
		cmocka_unit_test(cxx_names_are_demangled),
		cmocka_unit_test(bad_input),
		cmocka_unit_test(cache_gives_same_answers),
		cmocka_unit_test(kept_symbols_give_same_answers),
	};

	return cmocka_run_group_tests(tests, make_tmpdir, remove_tmpdir);
}
