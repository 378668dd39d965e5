/* test_nsym.c - native symbol names checked against binutils' nm: exported
 * functions of libc and libpython, the size check that keeps a stripped
 * binary's static functions from borrowing an exported name, C++
 * demangling, and bad input. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>
#include <cmocka.h>

#include "nsym.h"

#define LIBC "/lib/x86_64-linux-gnu/libc.so.6"
#define LIBPY312 "/root/.pyenv/versions/3.12.1/lib/libpython3.12.so.1.0"
#define DEBIAN_PY "/usr/bin/python3.11"

struct nmsym {
	uint64_t value, size;
};

/* value and size of `name` per `nm ARGS -S path`; 0 if found */
static int nm_lookup(const char *args, const char *path, const char *name, struct nmsym *out)
{
	char cmd[512], line[1024];
	FILE *p;
	int rc = -1;

	snprintf(cmd, sizeof(cmd), "nm %s -S --defined-only %s 2>/dev/null", args, path);
	p = popen(cmd, "r");
	assert_non_null(p);
	while (fgets(line, sizeof(line), p)) {
		unsigned long long v, s;
		char type, sym[512];

		if (sscanf(line, "%llx %llx %c %511s", &v, &s, &type, sym) != 4)
			continue;
		*strchrnul(sym, '@') = 0;
		if (!strcmp(sym, name) && strchr("TtiW", type)) {
			out->value = v;
			out->size = s;
			rc = 0;
			break;
		}
	}
	pclose(p);
	return rc;
}

static struct nsym_bin *open_bin(const char *path)
{
	char err[256];
	int fd = open(path, O_RDONLY);
	struct nsym_bin *b;

	assert_true(fd >= 0);
	b = nsym_open(fd, path, err, sizeof(err));
	close(fd); /* nsym keeps its own descriptor */
	if (!b)
		fail_msg("%s: %s", path, err);
	return b;
}

static void expect_name(struct nsym_bin *b, const char *path, const char *name)
{
	struct nmsym s;
	char buf[256];
	uint64_t start = 0, lo, hi;

	if (nm_lookup("-D", path, name, &s))
		fail_msg("nm finds no %s in %s", name, path);
	for (uint64_t off = 0; off < s.size; off += s.size / 3 + 1) {
		assert_int_equal(nsym_name(b, s.value + off, buf, sizeof(buf), &start), 1);
		assert_string_equal(buf, name);
		assert_int_equal(start, s.value);
	}
	assert_int_equal(nsym_lookup(b, name, &lo, &hi), 0);
	assert_int_equal(lo, s.value);
	assert_int_equal(hi, s.value + s.size);
}

static void libc_exported_functions(void **state)
{
	struct nsym_bin *b = open_bin(LIBC);

	expect_name(b, LIBC, "qsort");
	expect_name(b, LIBC, "abort");
	expect_name(b, LIBC, "getpid"); /* over its alias __getpid */
	expect_name(b, LIBC, "malloc");
	assert_string_equal(nsym_module(b), "libc.so.6");
	nsym_close(b);
}

static void libpython_functions(void **state)
{
	struct nsym_bin *b;

	if (access(LIBPY312, R_OK))
		skip();
	b = open_bin(LIBPY312);
	expect_name(b, LIBPY312, "PyObject_Vectorcall");
	expect_name(b, LIBPY312, "_PyEval_EvalFrameDefault");
	nsym_close(b);
}

/* Without its debug file, an address just past an exported function of the
 * stripped python3.11 that no exported symbol covers is MODULE+0xOFF. */
static void stripped_binary_does_not_borrow_names(void **state)
{
	const char *saved = nsym_debuginfo_path;
	struct nsym_bin *b;
	struct nmsym s, other;
	char buf[256], want[64];
	uint64_t start;

	if (access(DEBIAN_PY, R_OK))
		skip();
	nsym_debuginfo_path = "/nonexistent";
	b = open_bin(DEBIAN_PY);
	assert_int_equal(nm_lookup("-D", DEBIAN_PY, "PyEval_EvalCode", &s), 0);
	assert_int_equal(nsym_name(b, s.value, buf, sizeof(buf), NULL), 1);
	assert_string_equal(buf, "PyEval_EvalCode");
	/* the first address after it, unless another export starts there */
	if (nsym_name(b, s.value + s.size, buf, sizeof(buf), &start) == 0) {
		snprintf(want, sizeof(want), "python3.11+0x%llx", (unsigned long long)(s.value + s.size));
		assert_string_equal(buf, want);
		assert_int_equal(start, s.value + s.size);
	} else {
		assert_int_equal(start, s.value + s.size); /* an exported neighbour */
	}
	assert_int_equal(nsym_has_debug_file(b), 0);
	(void)other;
	nsym_close(b);
	nsym_debuginfo_path = saved;
}

/* PLT stubs have no symbol; they are named "target@plt" from .rela.plt,
 * checked against objdump's own labels */
static void plt_stubs_are_named(void **state)
{
	struct nsym_bin *b;
	char cmd[256], line[512], buf[256];
	int checked = 0;
	FILE *p;

	if (access(DEBIAN_PY, R_OK))
		skip();
	b = open_bin(DEBIAN_PY);
	snprintf(cmd, sizeof(cmd), "objdump -d -j .plt %s 2>/dev/null", DEBIAN_PY);
	p = popen(cmd, "r");
	assert_non_null(p);
	while (fgets(line, sizeof(line), p) && checked < 50) {
		unsigned long long at;
		char label[256];

		/* "000000000041f030 <PyObject_Free@plt>:" */
		/* (skipping "*ABS*+0x...@plt": IRELATIVE slots have no symbol) */
		if (sscanf(line, "%llx <%255[^>]>:", &at, label) != 2 || label[0] == '*' ||
		    strlen(label) < 5 || strcmp(label + strlen(label) - 4, "@plt"))
			continue; /* also the resolver stub, "first@plt-0x10" */
		if (nsym_name(b, at + 4, buf, sizeof(buf), NULL) != 1 || strcmp(buf, label))
			fail_msg("%#llx: %s, objdump says %s", at + 4, buf, label);
		checked++;
	}
	pclose(p);
	assert_true(checked > 10);
	nsym_close(b);
}

static void cxx_names_are_demangled(void **state)
{
	char dir[] = "/tmp/pyperf-nsym-XXXXXX", src[128], bin[128], cmd[512];
	struct nsym_bin *b;
	struct nmsym s;
	char buf[256];
	FILE *f;

	assert_non_null(mkdtemp(dir));
	snprintf(src, sizeof(src), "%s/t.cc", dir);
	snprintf(bin, sizeof(bin), "%s/t", dir);
	f = fopen(src, "w");
	assert_non_null(f);
	fputs("namespace ns { __attribute__((noinline)) int work(int x) { return x * 3 + 1; } }\n"
	      "int main(int c, char **) { return ns::work(c); }\n", f);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "g++ -O1 -o %s %s", bin, src);
	if (system(cmd))
		fail_msg("cannot compile C++ (g++ missing?)");
	assert_int_equal(nm_lookup("", bin, "_ZN2ns4workEi", &s), 0);
	b = open_bin(bin);
	assert_int_equal(nsym_name(b, s.value, buf, sizeof(buf), NULL), 1);
	assert_string_equal(buf, "ns::work(int)");
	nsym_close(b);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
}

static void bad_input(void **state)
{
	char path[] = "/tmp/pyperf-nsym-bad-XXXXXX", err[256] = "", buf[64];
	int fd = mkstemp(path);
	struct nsym_bin *b;

	assert_true(fd >= 0);
	assert_null(nsym_open(fd, path, err, sizeof(err))); /* empty */
	assert_non_null(strstr(err, path));
	assert_int_equal(write(fd, "not an ELF file\n", 16), 16);
	err[0] = 0;
	assert_null(nsym_open(fd, path, err, sizeof(err)));
	assert_true(err[0]);
	close(fd);
	unlink(path);
	b = open_bin(LIBC);
	assert_int_equal(nsym_name(b, 0, buf, sizeof(buf), NULL), 0);
	assert_string_equal(buf, "libc.so.6+0x0");
	assert_int_equal(nsym_name(b, UINT64_MAX, buf, sizeof(buf), NULL), 0);
	nsym_close(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(libc_exported_functions),
		cmocka_unit_test(libpython_functions),
		cmocka_unit_test(stripped_binary_does_not_borrow_names),
		cmocka_unit_test(plt_stubs_are_named),
		cmocka_unit_test(cxx_names_are_demangled),
		cmocka_unit_test(bad_input),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
