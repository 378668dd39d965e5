/* testutil.h - what the C unit tests that check real binaries share: where
 * those binaries are, running a command and reading its output (the ground
 * truth comes from binutils: readelf, nm, objdump), and a 64-bit compare
 * that prints hex.  Include after <cmocka.h>. */
#ifndef PYPERF_TESTUTIL_H
#define PYPERF_TESTUTIL_H

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Binaries under test; override with -D to point elsewhere. */
#ifndef LIBC
#define LIBC "/lib/x86_64-linux-gnu/libc.so.6"
#endif
#ifndef LIBTORCH_CPU
#define LIBTORCH_CPU "/usr/lib/python3/dist-packages/torch/lib/libtorch_cpu.so"
#endif
#ifndef LIBZ
#define LIBZ "/lib/x86_64-linux-gnu/libz.so.1"
#endif
#ifndef PY311
#define PY311 "/usr/bin/python3.11"
#endif
#ifndef PY312_PREFIX
#define PY312_PREFIX "/root/.pyenv/versions/3.12.1"
#endif
#define PY312 PY312_PREFIX "/bin/python3.12"
#define LIBPY312 PY312_PREFIX "/lib/libpython3.12.so.1.0"

#define assert_u64_equal(a, b, what)                                              \
	do {                                                                      \
		uint64_t a_ = (a), b_ = (b);                                      \
		if (a_ != b_)                                                     \
			fail_msg("%s: got %#" PRIx64 ", expected %#" PRIx64, (what), a_, b_); \
	} while (0)

static inline void require_file(const char *path)
{
	if (access(path, R_OK) != 0)
		fail_msg("required file %s is missing or unreadable: %s", path, strerror(errno));
}

/* Run `cmd` (through sh) and return its output as one malloc'd string;
 * fails the test if it exits non-zero. */
static inline char *command_output(const char *cmd)
{
	FILE *p = popen(cmd, "r");
	char *buf = NULL;
	size_t cap = 0, len = 0, got;
	int status;

	if (!p)
		fail_msg("popen(%s): %s", cmd, strerror(errno));
	do {
		if (cap - len < 65536) {
			cap = cap ? cap * 2 : 1 << 20;
			buf = realloc(buf, cap);
			assert_non_null(buf);
		}
		got = fread(buf + len, 1, cap - len - 1, p);
		len += got;
	} while (got > 0);
	buf[len] = '\0';
	status = pclose(p);
	if (status != 0) {
		free(buf);
		fail_msg("`%s` failed (status %d); is binutils installed?", cmd, status);
	}
	return buf;
}

/* A directory of the test program's own for the files its tests write:
 * made by the group setup test_dir_make, removed with what it holds by the
 * group teardown test_dir_remove (cmocka_run_group_tests(tests,
 * test_dir_make, test_dir_remove)). */
static char test_dir[64] __attribute__((unused));

static inline int test_dir_make(void **state)
{
	(void)state;
	snprintf(test_dir, sizeof(test_dir), "/tmp/pyperf-test.XXXXXX");
	return mkdtemp(test_dir) ? 0 : -1;
}

static inline int test_dir_remove(void **state)
{
	char cmd[96];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", test_dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* Run `cmd` (through sh); fails the test if it exits non-zero. */
static inline void run(const char *cmd)
{
	free(command_output(cmd));
}

#endif
