/* test_native.c - cmocka tests for the unwind-table life cycle of
 * user/native/native.c: tables are built only when asked for, loaded whole and
 * exactly as unwind_table.c builds them, evicted least recently used first
 * when the cap is reached, reported (and marked for the unwinder) when one
 * alone is larger than the cap, and reclaimed when no process maps their
 * binary any more; a stray pc's page backs off from asking for rereads of
 * the mappings.  The store is in memory (like `dump`'s), so every table
 * loaded can be checked row by row; the process mapped is this test itself
 * (its executable and libc are real binaries with CFI). */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "native.h"
#include "procmaps.h"
#include "unwind_table.h"

struct mem_store {
	struct unwind_row *slot[PYPERF_MAX_TABLES];
	size_t len[PYPERF_MAX_TABLES];
	size_t installs, removes;
};

static long m_create(void *ctx, const struct unwind_row *t, size_t n)
{
	size_t *v = malloc(sizeof(size_t) + n * sizeof(*t));

	(void)ctx;
	if (!v)
		return -1;
	v[0] = n;
	memcpy(v + 1, t, n * sizeof(*t));
	return (long)(uintptr_t)v;
}

static int m_install(void *ctx, uint32_t slot, long h)
{
	struct mem_store *m = ctx;
	size_t *v = (size_t *)(uintptr_t)h;

	free(m->slot[slot] ? (size_t *)m->slot[slot] - 1 : NULL);
	m->slot[slot] = (struct unwind_row *)(v + 1);
	m->len[slot] = v[0];
	m->installs++;
	return 0;
}

static void m_remove(void *ctx, uint32_t slot)
{
	struct mem_store *m = ctx;

	free(m->slot[slot] ? (size_t *)m->slot[slot] - 1 : NULL);
	m->slot[slot] = NULL;
	m->len[slot] = 0;
	m->removes++;
}

static void m_discard(void *ctx, long h)
{
	(void)ctx;
	free((void *)(uintptr_t)h);
}

static struct mem_store ms;
static const struct native_store store = { .create = m_create, .install = m_install,
					   .remove = m_remove, .discard = m_discard, .ctx = &ms };

static void reset_store(void)
{
	for (size_t i = 0; i < PYPERF_MAX_TABLES; i++)
		m_remove(&ms, (uint32_t)i);
	memset(&ms, 0, sizeof(ms));
}

/* The table id of this process's executable mapping of a file whose path
 * contains `needle`, and that file's path. */
static uint32_t table_of(const struct native_maps *nm, const char *needle, char *path, size_t len)
{
	struct proc_maps maps = { 0 };
	char err[256];
	uint32_t t = 0;

	assert_int_equal(procmaps_read(getpid(), &maps, err, sizeof(err)), 0);
	for (size_t i = 0; i < maps.n && !t; i++) {
		if (maps.v[i].perms[2] != 'x' || !maps.v[i].path || !strstr(maps.v[i].path, needle))
			continue;
		for (uint32_t k = 0; k < nm->n; k++)
			if (nm->m[k].start == maps.v[i].start) {
				t = nm->m[k].table;
				snprintf(path, len, "%s", maps.v[i].path);
			}
	}
	procmaps_free(&maps);
	if (!t)
		fail_msg("no executable mapping of %s in this process", needle);
	return t;
}

/* The table of a file as the loader lays it out for the BPF program
 * (header, rows, page index); *len its elements. */
static struct unwind_row *layout_of(const char *path, uint32_t id, size_t *len)
{
	struct unwind_table t = { 0 };
	struct unwind_row *v;
	char err[256];
	int fd = open(path, O_RDONLY);

	assert_true(fd >= 0);
	assert_int_equal(unwind_table_build(fd, path, &t, err, sizeof(err)), 0);
	close(fd);
	v = unwind_table_layout(&t, id, len);
	assert_non_null(v);
	unwind_table_free(&t);
	return v;
}

/* A loaded table is the header (its id, its row count), exactly the rows
 * unwind_table_build gives for the file, then their page index. */
static void assert_loaded_as_built(uint32_t table, const char *path)
{
	const struct unwind_row *t = ms.slot[TABLE_SLOT(table)];
	size_t len;
	struct unwind_row *want = layout_of(path, table, &len);

	assert_non_null(t);
	assert_int_equal(t[0].pc, table);
	assert_int_equal(ms.len[TABLE_SLOT(table)], len);
	assert_memory_equal(t, want, len * sizeof(*want));
	free(want);
}

/* BPF memory of a file's table: its laid-out elements, in whole pages */
static uint64_t bytes_of(const char *path)
{
	size_t len;

	free(layout_of(path, 0, &len));
	return (len * sizeof(struct unwind_row) + 4095) / 4096 * 4096;
}

static struct native_maps nm;

static void test_built_on_request_only_and_loaded_whole(void **state)
{
	struct native n;
	char err[256], libc[4096];
	uint32_t t;

	(void)state;
	reset_store();
	assert_int_equal(native_init(&n, &store, UINT64_MAX, false), 0);
	assert_int_equal(ms.installs, 3); /* two trampoline tables and the "none" marker */
	assert_int_equal(native_proc_update(&n, getpid(), &nm, err, sizeof(err)), 0);
	assert_int_equal(n.st.built, 0);  /* mapping a binary builds nothing */
	assert_int_equal(ms.installs, 3);
	t = table_of(&nm, "libc.so", libc, sizeof(libc));
	assert_true(TABLE_SLOT(t) > TABLE_TRAMPOLINE_FP);
	native_table_request(&n, t);
	assert_int_equal(n.st.built, 1);
	assert_int_equal(n.st.tables, 1);
	assert_loaded_as_built(t, libc);
	assert_int_equal(n.st.bytes, bytes_of(libc));
	native_table_request(&n, t); /* loaded: not built again */
	native_table_request(&n, t + (1u << 16)); /* a stale tag: ignored */
	assert_int_equal(n.st.built, 1);
	native_free(&n);
	reset_store();
}

static void test_lru_eviction_under_a_tiny_cap(void **state)
{
	struct native n;
	char err[256], libc[4096], self[4096];
	uint32_t tc, ts;
	uint64_t cap;

	(void)state;
	reset_store();
	assert_int_equal(native_init(&n, &store, UINT64_MAX, false), 0);
	assert_int_equal(native_proc_update(&n, getpid(), &nm, err, sizeof(err)), 0);
	tc = table_of(&nm, "libc.so", libc, sizeof(libc));
	ts = table_of(&nm, "test_native", self, sizeof(self));
	/* room for the larger of the two, not for both */
	cap = bytes_of(libc);
	if (bytes_of(self) > cap)
		cap = bytes_of(self);
	assert_true(cap < bytes_of(libc) + bytes_of(self));
	n.cap = cap;
	native_table_request(&n, tc);
	assert_non_null(ms.slot[TABLE_SLOT(tc)]);
	native_table_request(&n, ts);     /* libc, the least recently used, goes */
	assert_int_equal(n.st.evicted, 1);
	assert_null(ms.slot[TABLE_SLOT(tc)]);
	assert_loaded_as_built(ts, self);
	assert_true(n.st.bytes <= cap);
	native_table_request(&n, tc);     /* needed again: rebuilt, the other evicted */
	assert_int_equal(n.st.evicted, 2);
	assert_int_equal(n.st.built, 3);
	assert_loaded_as_built(tc, libc);
	assert_null(ms.slot[TABLE_SLOT(ts)]);
	native_free(&n);
	reset_store();
}

static void test_table_larger_than_the_cap_is_reported(void **state)
{
	struct native n;
	char err[256], libc[4096];
	uint32_t t;
	const struct unwind_row *m;

	(void)state;
	reset_store();
	assert_int_equal(native_init(&n, &store, 4096, false), 0);
	assert_int_equal(native_proc_update(&n, getpid(), &nm, err, sizeof(err)), 0);
	t = table_of(&nm, "libc.so", libc, sizeof(libc));
	native_table_request(&n, t);
	assert_int_equal(n.st.no_room, 1);
	assert_int_equal(n.st.tables, 0);
	/* the unwinder finds a marker: "no table", not "still pending" */
	m = ms.slot[TABLE_SLOT(t)];
	assert_non_null(m);
	assert_int_equal(m[0].pc, t);
	assert_int_equal(m[0].nrows, UNWIND_NO_TABLE);
	native_table_request(&n, t);     /* and it is not tried again */
	assert_int_equal(n.st.built, 1);
	native_free(&n);
	reset_store();
}

static void test_reclaimed_when_no_process_maps_the_binary(void **state)
{
	struct native n;
	char err[256], libc[4096];
	uint32_t t, again;

	(void)state;
	reset_store();
	assert_int_equal(native_init(&n, &store, UINT64_MAX, false), 0);
	/* a refresh does not count the process twice */
	assert_int_equal(native_proc_update(&n, getpid(), &nm, err, sizeof(err)), 0);
	assert_int_equal(native_proc_update(&n, getpid(), &nm, err, sizeof(err)), 0); /* a refresh */
	t = table_of(&nm, "libc.so", libc, sizeof(libc));
	native_table_request(&n, t);
	assert_int_equal(n.st.tables, 1);
	native_proc_forget(&n, getpid());
	assert_int_equal(n.st.reclaimed, 1);
	assert_int_equal(n.st.tables, 0);
	assert_int_equal(n.st.rows, 0);
	assert_int_equal(n.st.bytes, 0);
	assert_null(ms.slot[TABLE_SLOT(t)]);
	/* mapped again: a new id, so a mapping that still names the old one
	 * never reads a reused slot */
	assert_int_equal(native_proc_update(&n, getpid(), &nm, err, sizeof(err)), 0);
	again = table_of(&nm, "libc.so", libc, sizeof(libc));
	assert_int_not_equal(again, t);
	native_table_request(&n, t);
	assert_int_equal(n.st.tables, 0);
	native_table_request(&n, again);
	assert_loaded_as_built(again, libc);
	native_free(&n);
	reset_store();
}

static void test_worker_builds_off_the_calling_thread(void **state)
{
	struct native n;
	char err[256], libc[4096];
	uint32_t t;
	struct timespec d = { 0, 5 * 1000 * 1000 };

	(void)state;
	reset_store();
	assert_int_equal(native_init(&n, &store, UINT64_MAX, true), 0);
	assert_true(native_wake_fd(&n) >= 0);
	assert_int_equal(native_proc_update(&n, getpid(), &nm, err, sizeof(err)), 0);
	t = table_of(&nm, "libc.so", libc, sizeof(libc));
	native_table_request(&n, t);
	assert_null(ms.slot[TABLE_SLOT(t)]); /* not yet: loaded by native_poll */
	for (int i = 0; i < 2000 && !ms.slot[TABLE_SLOT(t)]; i++) {
		nanosleep(&d, NULL);
		native_poll(&n);
	}
	assert_loaded_as_built(t, libc);
	assert_int_equal(native_pending(&n), 0);
	native_free(&n);
	reset_store();
}

/* A pc that a reread of the mappings finds in no mapping (a stray return
 * address) makes its page wait longer each time before the next reread,
 * up to a cap; a pc in another page still asks at once.  pc_mapped sees
 * the mappings as last read. */
static void test_stray_pcs_back_off_per_page(void **state)
{
	struct native n;
	char err[256];
	long page = sysconf(_SC_PAGESIZE);
	uint64_t stray = 0x1000;
	void *code;

	(void)state;
	reset_store();
	assert_int_equal(native_init(&n, &store, UINT64_MAX, false), 0);
	assert_int_equal(native_proc_update(&n, getpid(), &nm, err, sizeof(err)), 0);
	assert_true(native_pc_mapped(&n, getpid(), (uint64_t)(uintptr_t)&native_init));
	assert_false(native_pc_mapped(&n, getpid(), stray));
	assert_false(native_pc_mapped(&n, getpid() + 1, (uint64_t)(uintptr_t)&native_init));
	for (uint64_t ms = 100; ms <= 2 * NATIVE_STRAY_BACKOFF_MAX_MS; ms *= 2)
		assert_int_equal(native_stray_backoff_ns(&n, getpid(), stray + 8),
				 (ms < NATIVE_STRAY_BACKOFF_MAX_MS ? ms : NATIVE_STRAY_BACKOFF_MAX_MS) *
				 1000000ull);
	assert_int_equal(native_stray_backoff_ns(&n, getpid(), stray + 0x10000), 100 * 1000000ull);
	assert_int_equal(native_stray_backoff_ns(&n, getpid() + 1, stray), 100 * 1000000ull);
	/* code mapped after the last read is seen once the mappings are reread */
	code = mmap(NULL, (size_t)page, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(code != MAP_FAILED);
	assert_false(native_pc_mapped(&n, getpid(), (uint64_t)(uintptr_t)code));
	assert_int_equal(native_proc_update(&n, getpid(), &nm, err, sizeof(err)), 0);
	assert_true(native_pc_mapped(&n, getpid(), (uint64_t)(uintptr_t)code));
	munmap(code, (size_t)page);
	native_free(&n);
	reset_store();
}

static uint32_t table_at(uint64_t pc)
{
	for (uint32_t i = 0; i < nm.n; i++)
		if (pc >= nm.m[i].start && pc < nm.m[i].end)
			return nm.m[i].table;
	fail_msg("no mapping holds %#llx", (unsigned long long)pc);
	return 0;
}

/* The mappings were read after CPython mapped a -X perf trampoline arena
 * but before its perf map listed a trampoline there: the arena is plain JIT
 * code (frame pointers) until a frame named "py::..." in it says to read
 * the mappings again, which then make it a trampoline arena. */
static void test_trampoline_arena_read_too_early_is_read_again(void **state)
{
	struct native n;
	char err[256], map[64];
	long page = sysconf(_SC_PAGESIZE);
	const struct func *f;
	uint8_t *code;
	FILE *pm;

	(void)state;
	reset_store();
	snprintf(map, sizeof(map), "/tmp/perf-%d.map", (int)getpid());
	unlink(map);
	code = mmap(NULL, (size_t)page, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(code != MAP_FAILED);
	assert_int_equal(native_init(&n, &store, UINT64_MAX, false), 0);
	assert_int_equal(native_proc_update(&n, getpid(), &nm, err, sizeof(err)), 0);
	assert_int_equal(table_at((uint64_t)(uintptr_t)code), TABLE_NONE);
	assert_false(native_take_stale(&n, getpid()));
	pm = fopen(map, "we");
	assert_non_null(pm);
	fprintf(pm, "%llx 20 py::spin:/x.py\n", (unsigned long long)(uintptr_t)code);
	fclose(pm);
	f = native_func(&n, getpid(), (uint64_t)(uintptr_t)code + 4, true);
	assert_string_equal(f->name, "py::spin:/x.py");
	assert_true(native_take_stale(&n, getpid()));
	assert_false(native_take_stale(&n, getpid())); /* taken */
	assert_int_equal(native_proc_update(&n, getpid(), &nm, err, sizeof(err)), 0);
	assert_int_equal(table_at((uint64_t)(uintptr_t)code), TABLE_TRAMPOLINE);
	native_func(&n, getpid(), (uint64_t)(uintptr_t)code + 4, true);
	assert_false(native_take_stale(&n, getpid())); /* known now */
	unlink(map);
	munmap(code, (size_t)page);
	native_free(&n);
	reset_store();
}

/* Both kinds of trampoline arena are known by their code from the first
 * read, each with its fixed rule: 3.12/3.13's keeps rbp, 3.14's ("push
 * %rbp; mov %rsp,%rbp") finds the caller's rbp just below the return
 * address. */
static void test_trampoline_arenas_get_the_rule_of_their_code(void **state)
{
	static const uint8_t old[] = { 0x48, 0x83, 0xec, 0x08, 0xff, 0xd1, 0x48, 0x83, 0xc4,
				       0x08, 0xc3 };
	static const uint8_t cet[] = { 0xf3, 0x0f, 0x1e, 0xfa, 0x55, 0x48, 0x89, 0xe5, 0xff,
				       0xd1, 0x5d, 0xc3 };
	long page = sysconf(_SC_PAGESIZE);
	struct native n;
	char err[256];
	uint8_t *code;
	const struct unwind_row *t;

	(void)state;
	reset_store();
	code = mmap(NULL, 3 * (size_t)page, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(code != MAP_FAILED);
	memcpy(code, old, sizeof(old));
	memcpy(code + page, cet, sizeof(cet));
	memcpy(code + 2 * page, cet, sizeof(cet) - 1); /* not quite */
	code[2 * page + sizeof(cet) - 1] = 0x90;
	/* separate mappings: executable, then not, then executable again */
	assert_int_equal(mprotect(code, (size_t)page, PROT_READ | PROT_EXEC), 0);
	assert_int_equal(mprotect(code + page, (size_t)page, PROT_READ | PROT_EXEC | PROT_WRITE),
			 0);
	assert_int_equal(mprotect(code + 2 * page, (size_t)page, PROT_READ | PROT_EXEC), 0);
	assert_int_equal(native_init(&n, &store, UINT64_MAX, false), 0);
	assert_int_equal(native_proc_update(&n, getpid(), &nm, err, sizeof(err)), 0);
	assert_int_equal(table_at((uint64_t)(uintptr_t)code), TABLE_TRAMPOLINE);
	assert_int_equal(table_at((uint64_t)(uintptr_t)code + page), TABLE_TRAMPOLINE_FP);
	assert_int_equal(table_at((uint64_t)(uintptr_t)code + 2 * page), TABLE_NONE);
	t = ms.slot[TABLE_SLOT(TABLE_TRAMPOLINE)];
	assert_non_null(t);
	assert_int_equal(t[0].nrows, 1);
	assert_int_equal(t[1].cfa_kind, CFA_RSP);
	assert_int_equal(t[1].cfa_off, 16);
	assert_int_equal(t[1].rbp_kind, RBP_SAME);
	t = ms.slot[TABLE_SLOT(TABLE_TRAMPOLINE_FP)];
	assert_non_null(t);
	assert_int_equal(t[0].pc, TABLE_TRAMPOLINE_FP);
	assert_int_equal(t[1].cfa_kind, CFA_RSP);
	assert_int_equal(t[1].cfa_off, 16);
	assert_int_equal(t[1].rbp_kind, RBP_AT_CFA);
	assert_int_equal(t[1].rbp_off8, -2);
	munmap(code, 3 * (size_t)page);
	native_free(&n);
	reset_store();
}

/* A sweep frees what no kept stack holds: of a binary still mapped, the
 * functions not marked; the names of binaries let go (no process maps
 * them, their file closed) and the JIT names of forgotten processes, unless
 * a stack holds one of them; a binary mapped again is named anew.  Here
 * the process is this test, forgotten and read again. */
static int swept_probe(int x)
{
	return x * 3 + 1;
}

/* a sweep in which stacks hold a and b (b may be NULL) */
static void sweep_holding(struct native *n, const struct func *a, const struct func *b)
{
	uint32_t mark = native_sweep_begin(n);

	((struct func *)a)->seen = mark;
	if (b)
		((struct func *)b)->seen = mark;
	native_sweep_end(n, mark);
}

static void test_names_no_stack_holds_are_swept(void **state)
{
	struct native n;
	char err[256], map[64], name[512];
	long page = sysconf(_SC_PAGESIZE);
	uint64_t self_pc = (uint64_t)(uintptr_t)&swept_probe, bins, open, funcs, bins0, funcs0;
	const struct func *fself, *fjit;
	uint32_t mark;
	uint8_t *code;
	FILE *pm;

	(void)state;
	reset_store();
	snprintf(map, sizeof(map), "/tmp/perf-%d.map", (int)getpid());
	code = mmap(NULL, (size_t)page, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(code != MAP_FAILED);
	pm = fopen(map, "we");
	assert_non_null(pm);
	fprintf(pm, "%llx 40 jit_kernel\n", (unsigned long long)(uintptr_t)code);
	fclose(pm);
	assert_int_equal(native_init(&n, &store, UINT64_MAX, false), 0);
	assert_int_equal(native_proc_update(&n, getpid(), &nm, err, sizeof(err)), 0);
	fself = native_func(&n, getpid(), self_pc, true);
	assert_string_equal(fself->name, "swept_probe");
	snprintf(name, sizeof(name), "%s", fself->name);
	assert_non_null(native_func(&n, getpid(), (uint64_t)(uintptr_t)&strlen, true));
	fjit = native_func(&n, getpid(), (uint64_t)(uintptr_t)code + 8, true);
	assert_string_equal(fjit->name, "jit_kernel");
	native_kept(&n, &bins0, &open, &funcs0);
	assert_true(bins0 >= 2 && open == bins0 && funcs0 >= 3);

	/* mapped: the binaries stay, and of their functions those a stack
	 * holds (strlen's goes) */
	sweep_holding(&n, fself, fjit);
	native_kept(&n, &bins, &open, &funcs);
	assert_int_equal(bins, bins0);
	assert_int_equal(funcs, funcs0 - 1);
	assert_int_equal(n.st.swept_funcs, 1);
	assert_string_equal(fself->name, name);

	/* the process is gone, its binaries still open: a stack holds its JIT
	 * name, which stays with its process */
	native_proc_forget(&n, getpid());
	sweep_holding(&n, fself, fjit);
	native_kept(&n, &bins, &open, &funcs);
	assert_int_equal(bins, bins0);
	assert_int_equal(funcs, funcs0 - 1);
	assert_int_equal(n.st.swept_jit, 0);
	assert_string_equal(fjit->name, "jit_kernel");

	/* let go: the binary whose function a stack holds keeps its names,
	 * the others and the JIT names go */
	native_close_idle(&n, 0);
	native_kept(&n, &bins, &open, &funcs);
	assert_true(open <= 1); /* the vDSO's memfd stays */
	sweep_holding(&n, fself, NULL);
	assert_string_equal(fself->name, name); /* still there */
	assert_int_equal(n.st.swept_jit, 1);
	assert_true(n.st.swept_bins >= 1);
	native_kept(&n, &bins, &open, &funcs);
	assert_true(bins < bins0);
	assert_int_equal(funcs, 1);

	/* nothing held: every binary let go goes */
	mark = native_sweep_begin(&n);
	native_sweep_end(&n, mark);
	native_kept(&n, &bins, &open, &funcs);
	assert_true(bins <= 1); /* the vDSO */
	assert_int_equal(funcs, 0);

	/* mapped again: opened and named anew */
	assert_int_equal(native_proc_update(&n, getpid(), &nm, err, sizeof(err)), 0);
	assert_string_equal(native_func(&n, getpid(), self_pc, true)->name, name);
	assert_string_equal(native_func(&n, getpid(), (uint64_t)(uintptr_t)code + 8, true)->name,
			    "jit_kernel");
	unlink(map);
	munmap(code, (size_t)page);
	native_free(&n);
	reset_store();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_built_on_request_only_and_loaded_whole),
		cmocka_unit_test(test_lru_eviction_under_a_tiny_cap),
		cmocka_unit_test(test_table_larger_than_the_cap_is_reported),
		cmocka_unit_test(test_reclaimed_when_no_process_maps_the_binary),
		cmocka_unit_test(test_worker_builds_off_the_calling_thread),
		cmocka_unit_test(test_stray_pcs_back_off_per_page),
		cmocka_unit_test(test_trampoline_arena_read_too_early_is_read_again),
		cmocka_unit_test(test_trampoline_arenas_get_the_rule_of_their_code),
		cmocka_unit_test(test_names_no_stack_holds_are_swept),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
