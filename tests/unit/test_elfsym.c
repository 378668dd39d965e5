/* test_elfsym.c - cmocka tests for user/lib/procmaps.c and user/lib/elfsym.c against
 * real files and real processes (no mocks).
 *
 * How it works: expected symbol values, entry points and build-ids come from
 * running binutils' readelf via popen at test time, so nothing is hardcoded
 * to one build of Python.  Load-bias tests start a real interpreter that
 * prints the runtime address of _PyRuntime (via ctypes) and then sleeps; the
 * test reads the child's /proc/PID/maps, computes symbol value + bias and
 * compares.  Each such test kills and reaps its child in the teardown, which
 * cmocka runs even when the test fails.  A required interpreter file that is
 * missing fails the test with a message; it never passes silently.
 *
 * Build: gcc -std=c11 -D_GNU_SOURCE -Wall -Wextra -Iuser/lib user/lib/procmaps.c \
 *        user/lib/elfsym.c tests/unit/test_elfsym.c -lelf -lcmocka -o /tmp/t */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <elf.h>
#include <cmocka.h>

#include "elfsym.h"
#include "procmaps.h"
#include "testutil.h"


#define PRINT_PYRUNTIME                                                           \
	"import ctypes,sys; "                                                     \
	"print(ctypes.addressof(ctypes.c_char.in_dll(ctypes.pythonapi,'_PyRuntime')));" \
	" sys.stdout.flush(); import time; time.sleep(30)"


/* ---- helpers ----------------------------------------------------------- */

/* Value and size of `name` as `readelf -Ws` lists it in `path`: the first
 * defined global/weak entry, else the first defined local one.  Returns
 * whether it was found. */
static int readelf_symbol(const char *path, const char *name, uint64_t *value,
			  uint64_t *size)
{
	char cmd[512], *out, *line, *save = NULL;
	int best = 0;

	snprintf(cmd, sizeof(cmd), "readelf -Ws '%s'", path);
	out = command_output(cmd);
	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char sval[32], ssize[32], type[32], bind[32], vis[32], ndx[32], sym[512];
		int rank;

		if (sscanf(line, " %*[0-9]: %31s %31s %31s %31s %31s %31s %511s", sval,
			   ssize, type, bind, vis, ndx, sym) != 7)
			continue;
		if (strcmp(sym, name) != 0 || strcmp(ndx, "UND") == 0)
			continue;
		rank = strcmp(bind, "LOCAL") == 0 ? 1 : 2;
		if (rank <= best)
			continue;
		best = rank;
		*value = strtoull(sval, NULL, 16);
		*size = strtoull(ssize, NULL, 0); /* decimal, or 0x... when large */
	}
	free(out);
	return best > 0;
}

/* "Build ID: ..." from `readelf -n`, into hex[len]. */
static void readelf_build_id(const char *path, char *hex, size_t len)
{
	char cmd[512], *out, *p;

	snprintf(cmd, sizeof(cmd), "readelf -n '%s'", path);
	out = command_output(cmd);
	p = strstr(out, "Build ID: ");
	if (!p) {
		free(out);
		fail_msg("readelf -n %s shows no build-id", path);
	}
	p += strlen("Build ID: ");
	snprintf(hex, len, "%.*s", (int)strspn(p, "0123456789abcdef"), p);
	free(out);
}

/* e_entry of `path` from `readelf -h`. */
static uint64_t readelf_entry(const char *path)
{
	char cmd[512], *out, *p;
	uint64_t entry;

	snprintf(cmd, sizeof(cmd), "readelf -h '%s'", path);
	out = command_output(cmd);
	p = strstr(out, "Entry point address:");
	if (!p) {
		free(out);
		fail_msg("readelf -h %s shows no entry point", path);
	}
	entry = strtoull(p + strlen("Entry point address:"), NULL, 16);
	free(out);
	return entry;
}

/* AT_ENTRY from /proc/PID/auxv: where the kernel put the program's entry. */
static uint64_t auxv_entry(pid_t pid)
{
	char fn[64];
	Elf64_auxv_t a;
	FILE *f;

	snprintf(fn, sizeof(fn), "/proc/%d/auxv", (int)pid);
	f = fopen(fn, "re");
	if (!f)
		fail_msg("open %s: %s", fn, strerror(errno));
	while (fread(&a, sizeof(a), 1, f) == 1) {
		if (a.a_type == AT_ENTRY) {
			fclose(f);
			return a.a_un.a_val;
		}
	}
	fclose(f);
	fail_msg("%s has no AT_ENTRY", fn);
	return 0;
}

/* Find `name` in `path` with elf_find_symbols and check it against readelf. */
static uint64_t check_symbol_matches_readelf(const char *path, const char *name)
{
	const char *names[] = { name };
	uint64_t value, size, rvalue = 0, rsize = 0;
	char err[256] = "", what[256];

	require_file(path);
	if (!readelf_symbol(path, name, &rvalue, &rsize))
		fail_msg("readelf lists no defined %s in %s", name, path);
	if (elf_find_symbols(path, names, 1, &value, &size, err, sizeof(err)) != 0)
		fail_msg("elf_find_symbols(%s): %s", path, err);
	snprintf(what, sizeof(what), "%s value in %s", name, path);
	assert_u64_equal(value, rvalue, what);
	snprintf(what, sizeof(what), "%s size in %s", name, path);
	assert_u64_equal(size, rsize, what);
	assert_true(value != 0);
	return value;
}

/* ---- child interpreter ------------------------------------------------- */

struct child {
	pid_t pid;
	int fd; /* read end of its stdout */
};

static int child_setup(void **state)
{
	struct child *c = calloc(1, sizeof(*c));

	if (!c)
		return -1;
	c->pid = -1;
	c->fd = -1;
	*state = c;
	return 0;
}

static int child_teardown(void **state)
{
	struct child *c = *state;

	if (c->pid > 0) {
		kill(c->pid, SIGKILL);
		waitpid(c->pid, NULL, 0);
	}
	if (c->fd >= 0)
		close(c->fd);
	free(c);
	return 0;
}

/* Start `exe -c PRINT_PYRUNTIME` with stdout on a pipe. */
static void spawn_python(struct child *c, const char *exe)
{
	int fds[2];

	require_file(exe);
	if (pipe2(fds, O_CLOEXEC) != 0)
		fail_msg("pipe2: %s", strerror(errno));
	c->pid = fork();
	if (c->pid < 0)
		fail_msg("fork: %s", strerror(errno));
	if (c->pid == 0) {
		dup2(fds[1], STDOUT_FILENO);
		execl(exe, exe, "-c", PRINT_PYRUNTIME, (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	c->fd = fds[0];
}

/* The first line the child prints, as a number; waits at most 30 s. */
static uint64_t child_printed_address(struct child *c)
{
	char buf[128];
	size_t len = 0;
	char *end;
	uint64_t v;

	while (len < sizeof(buf) - 1 && !memchr(buf, '\n', len)) {
		struct pollfd p = { .fd = c->fd, .events = POLLIN };
		ssize_t n;

		if (poll(&p, 1, 30000) <= 0)
			fail_msg("pid %d printed no address within 30 s", (int)c->pid);
		n = read(c->fd, buf + len, sizeof(buf) - 1 - len);
		if (n <= 0)
			fail_msg("pid %d closed stdout without printing an address",
				 (int)c->pid);
		len += (size_t)n;
	}
	buf[len] = '\0';
	v = strtoull(buf, &end, 10);
	if (end == buf || v == 0)
		fail_msg("pid %d printed %s, not an address", (int)c->pid, buf);
	return v;
}

/* Symbol value + bias of `name` in the mapping of the child whose basename
 * starts with `prefix`, opened through /proc/PID/root. */
static uint64_t runtime_address(pid_t pid, const struct proc_maps *maps,
				const char *prefix, const char *name, uint64_t *bias_out)
{
	const struct proc_map *m = procmaps_first_basename_prefix(maps, prefix);
	const char *names[] = { name };
	char host[4096], err[256] = "";
	uint64_t value, bias;

	if (!m)
		fail_msg("pid %d maps no file named %s*", (int)pid, prefix);
	if (!procmaps_host_path(pid, m->path, host, sizeof(host)))
		fail_msg("procmaps_host_path(%s) failed", m->path);
	if (elf_find_symbols(host, names, 1, &value, NULL, err, sizeof(err)) != 0)
		fail_msg("elf_find_symbols: %s", err);
	if (value == 0)
		fail_msg("%s not found in %s", name, host);
	if (elf_load_bias(host, maps, m->path, &bias, err, sizeof(err)) != 0)
		fail_msg("elf_load_bias: %s", err);
	if (bias_out)
		*bias_out = bias;
	return value + bias;
}

static void read_maps(pid_t pid, struct proc_maps *maps)
{
	char err[256] = "";

	if (procmaps_read(pid, maps, err, sizeof(err)) != 0)
		fail_msg("procmaps_read(%d): %s", (int)pid, err);
	assert_true(maps->n > 0);
}

/* ---- symbol lookup ----------------------------------------------------- */

static void test_symbols_python311_exec(void **state)
{
	(void)state;
	check_symbol_matches_readelf(PY311, "_PyRuntime");
	check_symbol_matches_readelf(PY311, "Py_Version");
}

static void test_symbols_libpython312_dyn(void **state)
{
	(void)state;
	check_symbol_matches_readelf(LIBPY312, "_PyRuntime");
	check_symbol_matches_readelf(LIBPY312, "Py_Version");
}

static void test_several_names_one_call(void **state)
{
	const char *names[] = { "Py_Version", "no_such_symbol_pyperf", "_PyRuntime" };
	uint64_t values[3], sizes[3], v, s;
	char err[256] = "";

	(void)state;
	require_file(LIBPY312);
	assert_int_equal(elf_find_symbols(LIBPY312, names, 3, values, sizes, err,
					  sizeof(err)), 0);
	assert_true(readelf_symbol(LIBPY312, "Py_Version", &v, &s));
	assert_u64_equal(values[0], v, "Py_Version");
	assert_u64_equal(values[1], 0, "missing symbol value");
	assert_u64_equal(sizes[1], 0, "missing symbol size");
	assert_true(readelf_symbol(LIBPY312, "_PyRuntime", &v, &s));
	assert_u64_equal(values[2], v, "_PyRuntime");
	assert_u64_equal(sizes[2], s, "_PyRuntime size");
}

/* .dynsym is read first, and .symtab only while a name lacks a global
 * definition: an exported name with a static function's (.symtab alone, a
 * local symbol) both come back, as readelf shows them */
static void test_exported_and_local_names_in_one_call(void **state)
{
	const char *names[] = { "_PyRuntime", "list_dealloc" };
	uint64_t values[2], sizes[2], v, s;
	char err[256] = "";

	(void)state;
	require_file(LIBPY312);
	assert_int_equal(elf_find_symbols(LIBPY312, names, 2, values, sizes, err,
					  sizeof(err)), 0);
	assert_true(readelf_symbol(LIBPY312, "_PyRuntime", &v, &s));
	assert_u64_equal(values[0], v, "_PyRuntime");
	if (!readelf_symbol(LIBPY312, "list_dealloc", &v, &s))
		fail_msg("%s has no list_dealloc in .symtab (a stripped build?)", LIBPY312);
	assert_u64_equal(values[1], v, "list_dealloc");
	assert_u64_equal(sizes[1], s, "list_dealloc size");
	assert_true(values[1] != 0);
}

static void test_missing_symbol_is_zero(void **state)
{
	const char *names[] = { "definitely_not_a_symbol_pyperf" };
	uint64_t value = 123, size = 456;
	char err[256] = "";

	(void)state;
	require_file(PY311);
	assert_int_equal(elf_find_symbols(PY311, names, 1, &value, &size, err,
					  sizeof(err)), 0);
	assert_u64_equal(value, 0, "value of a missing symbol");
	assert_u64_equal(size, 0, "size of a missing symbol");
}

/* elf_find_symbols on `path` must fail with `path` and `what` in the message. */
static void expect_find_error(const char *path, const char *what)
{
	const char *names[] = { "_PyRuntime" };
	uint64_t value = 1;
	char err[256] = "";

	assert_int_equal(elf_find_symbols(path, names, 1, &value, NULL, err,
					  sizeof(err)), -1);
	if (!strstr(err, path) || !strstr(err, what))
		fail_msg("message \"%s\" should name %s and say \"%s\"", err, path, what);
	assert_u64_equal(value, 0, "value after an error");
}

static void test_not_elf_is_error(void **state)
{
	char path[] = "/tmp/pyperf-not-elf-XXXXXX";
	int fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "just text\n", 10), 10);
	close(fd);
	expect_find_error(path, "not an ELF file");
	assert_int_equal(truncate(path, 0), 0);
	expect_find_error(path, "ELF");
	unlink(path);
	if (access("/etc/hostname", R_OK) == 0)
		expect_find_error("/etc/hostname", "not an ELF file");
}

static void test_nonexistent_path_is_error(void **state)
{
	(void)state;
	expect_find_error("/nonexistent/pyperf/libpython3.99.so", "No such file");
}

static void test_build_id_matches_readelf(void **state)
{
	const char *files[] = { PY311, LIBPY312 };
	char got[128], want[128], small[8];

	(void)state;
	for (size_t i = 0; i < 2; i++) {
		require_file(files[i]);
		readelf_build_id(files[i], want, sizeof(want));
		assert_int_equal(elf_read_build_id(files[i], got, sizeof(got)), 0);
		assert_string_equal(got, want);
		assert_int_equal(elf_read_build_id(files[i], small, sizeof(small)), -1);
	}
	assert_int_equal(elf_read_build_id("/nonexistent/pyperf", got, sizeof(got)), -1);
}

/* ---- procmaps ---------------------------------------------------------- */

static void test_procmaps_nonexistent_pid(void **state)
{
	struct proc_maps m = { 0 };
	char err[256] = "", pidstr[32];
	FILE *f = fopen("/proc/sys/kernel/pid_max", "re");
	int pid_max = 0;

	(void)state;
	assert_non_null(f);
	assert_int_equal(fscanf(f, "%d", &pid_max), 1);
	fclose(f);
	/* pids are always below pid_max, so this one cannot exist */
	errno = 0;
	assert_int_equal(procmaps_read(pid_max, &m, err, sizeof(err)), -1);
	assert_int_equal(errno, ESRCH);
	snprintf(pidstr, sizeof(pidstr), "%d", pid_max);
	if (!strstr(err, pidstr) || !strstr(err, "no such process"))
		fail_msg("message \"%s\" should name pid %s and say no such process", err,
			 pidstr);
	assert_null(m.v);
	assert_int_equal(m.n, 0);
	procmaps_free(&m);
}

/* A mapped file with spaces in its name, then deleted, reads back with the
 * exact path and the deleted flag; anonymous mappings have no path. */
static void test_procmaps_self_spaces_deleted(void **state)
{
	char path[] = "/tmp/pyperf maps test (x) XXXXXX";
	struct proc_maps m = { 0 };
	const struct proc_map *hit = NULL;
	void *file_map, *anon;
	long page = sysconf(_SC_PAGESIZE);
	int fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, page), 0);
	file_map = mmap(NULL, (size_t)page, PROT_READ, MAP_PRIVATE, fd, 0);
	anon = mmap(NULL, (size_t)page * 3, PROT_READ | PROT_WRITE | PROT_EXEC,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	close(fd);
	unlink(path);
	assert_true(file_map != MAP_FAILED && anon != MAP_FAILED);
	read_maps(getpid(), &m);
	for (size_t i = 0; i < m.n; i++) {
		if (m.v[i].start == (uintptr_t)file_map)
			hit = &m.v[i];
		if (m.v[i].start <= (uintptr_t)anon && (uintptr_t)anon < m.v[i].end) {
			assert_null(m.v[i].path);
			assert_false(m.v[i].deleted);
		}
	}
	assert_non_null(hit);
	assert_non_null(hit->path);
	assert_string_equal(hit->path, path);
	assert_true(hit->deleted);
	assert_string_equal(hit->perms, "r--p");
	assert_int_equal(hit->end - hit->start, page);
	assert_int_equal(hit->offset, 0);
	assert_true(hit->inode != 0);
	assert_string_equal(procmaps_basename(hit), strrchr(path, '/') + 1);
	assert_ptr_equal(procmaps_first_basename_prefix(&m, "pyperf maps test (x) "), hit);
	munmap(file_map, (size_t)page);
	munmap(anon, (size_t)page * 3);
	procmaps_free(&m);
	procmaps_free(&m); /* idempotent */
	assert_null(m.v);
}

static void test_procmaps_finds_own_executable(void **state)
{
	struct proc_maps m = { 0 };
	char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	const struct proc_map *hit;

	(void)state;
	assert_true(n > 0);
	exe[n] = '\0';
	read_maps(getpid(), &m);
	hit = procmaps_first_basename_prefix(&m, strrchr(exe, '/') + 1);
	assert_non_null(hit);
	assert_string_equal(hit->path, exe);
	assert_int_equal(hit->offset, 0);
	assert_null(procmaps_first_basename_prefix(&m, "no-such-file-pyperf"));
	procmaps_free(&m);
}

/* The image a process runs (procmaps_image): the same in a forked copy as
 * in its parent, another after the copy execs, none once it has ended (a
 * zombie has no memory) or is reaped.  The loader relies on it to undo an
 * adoption read before an exec (session.c, adopt). */
static void test_image_changes_at_exec_not_at_fork(void **state)
{
	struct proc_image mine, child, zombie;
	int go[2], execd[2];
	char c;
	pid_t pid;
	siginfo_t si;

	(void)state;
	assert_int_equal(pipe2(go, O_CLOEXEC), 0);
	assert_int_equal(pipe2(execd, O_CLOEXEC), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char *argv[] = { "sleep", "30", NULL };

		close(go[1]);
		close(execd[0]);
		if (read(go[0], &c, 1) == 1)
			execvp("sleep", argv);
		_exit(127);
	}
	close(go[0]);
	close(execd[1]);
	assert_int_equal(procmaps_image(getpid(), &mine), 0);
	assert_int_equal(procmaps_image(pid, &child), 0);
	assert_memory_equal(&mine, &child, sizeof(mine));
	assert_true(procmaps_same_image(pid, &child));

	assert_int_equal(write(go[1], "x", 1), 1);
	assert_int_equal(read(execd[0], &c, 1), 0); /* closed by the exec */
	assert_false(procmaps_same_image(pid, &child));
	assert_int_equal(procmaps_image(pid, &child), 0);
	assert_true(procmaps_same_image(pid, &child));

	kill(pid, SIGKILL);
	assert_int_equal(waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT), 0);
	assert_int_equal(procmaps_image(pid, &zombie), -1);
	assert_false(procmaps_same_image(pid, &child));
	assert_int_equal(waitpid(pid, NULL, 0), pid);
	assert_int_equal(procmaps_image(pid, &zombie), -1);
	close(go[1]);
	close(execd[0]);
}

static void test_host_path(void **state)
{
	char buf[64], tiny[8];

	(void)state;
	assert_non_null(procmaps_host_path(42, "/usr/lib/libpython3.12.so", buf, sizeof(buf)));
	assert_string_equal(buf, "/proc/42/root/usr/lib/libpython3.12.so");
	assert_null(procmaps_host_path(42, "/usr/lib/libpython3.12.so", tiny, sizeof(tiny)));
	assert_null(procmaps_host_path(42, "[heap]", buf, sizeof(buf)));
}

/* the very file mapped: its map_files entry while mapped, whatever its name
 * says; nothing when neither that nor the name opens */
static void test_file_path(void **state)
{
	struct proc_maps m = { 0 };
	struct proc_map fake = { .start = 0x1000, .end = 0x2000, .path = "/no/such/file-pyperf" };
	const struct proc_map *self;
	char exe[PATH_MAX], buf[PATH_MAX + 32], want[PATH_MAX + 32];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	(void)state;
	assert_true(n > 0);
	exe[n] = 0;
	assert_int_equal(procmaps_read(getpid(), &m, buf, sizeof(buf)), 0);
	self = procmaps_first_basename_prefix(&m, strrchr(exe, '/') + 1);
	assert_non_null(self);
	snprintf(want, sizeof(want), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, getpid(),
		 self->start, self->end);
	assert_non_null(procmaps_file_path(getpid(), self, buf, sizeof(buf)));
	assert_string_equal(buf, want);
	assert_null(procmaps_file_path(getpid(), &fake, buf, sizeof(buf)));
	fake.path = exe; /* not mapped there: the name, under the process's root */
	assert_non_null(procmaps_file_path(getpid(), &fake, buf, sizeof(buf)));
	snprintf(want, sizeof(want), "/proc/%d/root%s", getpid(), exe);
	assert_string_equal(buf, want);
	procmaps_free(&m);
	/* not in a pid namespace of its own: its pid; unreadable: the pid given */
	assert_int_equal(procmaps_ns_pid(getpid()), getpid());
	assert_int_equal(procmaps_ns_pid(-5), -5);
}

/* ---- load bias against live interpreters ------------------------------- */

static void test_load_bias_libpython312(void **state)
{
	struct child *c = *state;
	struct proc_maps maps = { 0 };
	uint64_t printed, computed, bias;

	require_file(LIBPY312);
	spawn_python(c, PY312);
	printed = child_printed_address(c);
	read_maps(c->pid, &maps);
	computed = runtime_address(c->pid, &maps, "libpython3.", "_PyRuntime", &bias);
	assert_true(bias != 0);
	assert_u64_equal(computed, printed, "_PyRuntime in libpython3.12 (value + bias)");
	procmaps_free(&maps);
}

/* The 3.12 launcher is a small PIE whose rodata and RELRO segments start in
 * the same file page: check its bias against the kernel's AT_ENTRY. */
static void test_load_bias_pie_executable(void **state)
{
	struct child *c = *state;
	struct proc_maps maps = { 0 };
	const struct proc_map *m;
	char host[4096], err[256] = "";
	uint64_t bias;

	spawn_python(c, PY312);
	child_printed_address(c);
	read_maps(c->pid, &maps);
	m = procmaps_first_basename_prefix(&maps, "python3.12");
	assert_non_null(m);
	assert_non_null(procmaps_host_path(c->pid, m->path, host, sizeof(host)));
	if (elf_load_bias(host, &maps, m->path, &bias, err, sizeof(err)) != 0)
		fail_msg("elf_load_bias: %s", err);
	assert_u64_equal(bias + readelf_entry(PY312), auxv_entry(c->pid),
			 "python3.12 entry (e_entry + bias vs AT_ENTRY)");
	procmaps_free(&maps);
}

static void test_load_bias_python311_exec(void **state)
{
	struct child *c = *state;
	struct proc_maps maps = { 0 };
	uint64_t printed, computed, bias = 1, rvalue, rsize;

	require_file(PY311);
	spawn_python(c, PY311);
	printed = child_printed_address(c);
	read_maps(c->pid, &maps);
	computed = runtime_address(c->pid, &maps, "python3.11", "_PyRuntime", &bias);
	assert_u64_equal(bias, 0, "bias of ET_EXEC python3.11");
	assert_true(readelf_symbol(PY311, "_PyRuntime", &rvalue, &rsize));
	assert_u64_equal(computed, rvalue, "_PyRuntime in python3.11 vs readelf");
	assert_u64_equal(computed, printed, "_PyRuntime in python3.11 vs process");
	procmaps_free(&maps);
}

static void test_load_bias_unmapped_is_error(void **state)
{
	struct proc_maps maps = { 0 };
	char err[256] = "";
	uint64_t bias = 7;

	(void)state;
	require_file(LIBPY312);
	read_maps(getpid(), &maps);
	assert_int_equal(elf_load_bias(LIBPY312, &maps, LIBPY312, &bias, err, sizeof(err)),
			 -1);
	if (!strstr(err, LIBPY312) || !strstr(err, "not mapped"))
		fail_msg("unexpected message \"%s\"", err);
	assert_int_equal(elf_load_bias("/nonexistent/pyperf.so", &maps, "/x", &bias, err,
				       sizeof(err)), -1);
	assert_non_null(strstr(err, "/nonexistent/pyperf.so"));
	procmaps_free(&maps);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_symbols_python311_exec),
		cmocka_unit_test(test_symbols_libpython312_dyn),
		cmocka_unit_test(test_several_names_one_call),
		cmocka_unit_test(test_exported_and_local_names_in_one_call),
		cmocka_unit_test(test_missing_symbol_is_zero),
		cmocka_unit_test(test_not_elf_is_error),
		cmocka_unit_test(test_nonexistent_path_is_error),
		cmocka_unit_test(test_build_id_matches_readelf),
		cmocka_unit_test(test_procmaps_nonexistent_pid),
		cmocka_unit_test(test_procmaps_self_spaces_deleted),
		cmocka_unit_test(test_procmaps_finds_own_executable),
		cmocka_unit_test(test_image_changes_at_exec_not_at_fork),
		cmocka_unit_test(test_host_path),
		cmocka_unit_test(test_file_path),
		cmocka_unit_test_setup_teardown(test_load_bias_libpython312, child_setup,
						child_teardown),
		cmocka_unit_test_setup_teardown(test_load_bias_pie_executable, child_setup,
						child_teardown),
		cmocka_unit_test_setup_teardown(test_load_bias_python311_exec, child_setup,
						child_teardown),
		cmocka_unit_test(test_load_bias_unmapped_is_error),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
