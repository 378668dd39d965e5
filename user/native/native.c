/* native.c - see native.h.  A binary is keyed by the device and inode of the
 * file the process actually maps (opened through /proc/PID/map_files, so a
 * replaced or deleted file is still the right one); the vDSO is the kernel's
 * and the same in every process, so ours stands in for it. */
#include "native.h"
#include "clock.h"
#include "pyread.h"
#include "elfsym.h"
#include "errmsg.h"
#include "dbgfetch.h"
#include "gdbjit.h"
#include "jitdump.h"
#include "nsym.h"
#include "perfmap.h"
#include "procmaps.h"
#include "prologue.h"
#include "runcache.h"
#include "table_cache.h"
#include "unwind_table.h"

#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <pthread.h>
#include <gelf.h>
#include <limits.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_SEGS 16
#define TABLE_UNAVAILABLE 2u /* reserved: a shared "no table" (all slots busy) */
#define FIRST_SLOT 4u        /* after TABLE_TRAMPOLINE_FP */

enum table_state {
	T_IDLE,      /* not built, or evicted: built when a sample asks */
	T_QUEUED,    /* with the worker */
	T_LOADED,
	T_FAILED,    /* unreadable CFI or larger than the cap: a marker is loaded */
};

struct nseg {
	uint64_t vaddr, offset, filesz;
};

#define FALLBACKS_MAX 65536   /* unnamed addresses of a binary renamed later */

struct nbin {
	char *path;                  /* as the process mapped it */
	const char *base;            /* its last component */
	int fd;
	struct nseg segs[MAX_SEGS];  /* PT_LOAD segments */
	int nsegs;
	uint32_t table;              /* id: slot | tag << 16; TABLE_NONE: none yet */
	uint8_t tstate;              /* enum table_state */
	uint32_t nprocs;             /* processes mapping it now */
	uint64_t idle_since_ns;      /* when nprocs became 0 (monotonic) */
	uint64_t stamp;
	uint64_t bytes, nrows;       /* while loaded */
	uint64_t loaded_ns;
	struct nsym_bin *sym;        /* opened on first use */
	bool sym_failed;
	uint8_t fetch;               /* debuginfod: 0 not looked at, 1 fetching, 2 no */
	char build_id[81];           /* hex, while fetching */
	struct func **fallback;      /* named "binary+0x..." while fetching */
	size_t nfallback, capfallback;
	uint8_t jitdesc;             /* defines __jit_debug_descriptor: 0 not looked
				      * up yet, 1 no, 2 yes, at jitdesc_value */
	uint64_t jitdesc_value;
	struct binary info;           /* what pprof says of the binary */
	bool cython;                  /* a Cython extension: leaf pcs kept whole */
};

struct nmap {
	uint64_t start, end, bias;
	struct nbin *bin;            /* NULL: anonymous code */
	uint32_t trampolines;        /* CPython's perf trampolines (bin NULL): their
				      * fixed table, else 0 */
};

#define STALE_REREADS 8      /* rereads of a process's mappings for trampolines */

struct nproc {
	int pid;
	size_t n;
	struct nmap *v;
	struct perfmap jit;          /* from /tmp/perf-PID.map */
	struct perfmap gdb;          /* from the GDB JIT interface (gdbjit.h) */
	uint64_t gdb_read_ns;        /* when that was last read */
	struct perfmap dump;         /* from the jitdump file the JIT maps (jitdump.h) */
	uint64_t dump_read_ns;       /* when that was last read */
	bool jit_refused;            /* that file was refused (said once) */
	bool dump_refused;           /* the jitdump file was refused (said once) */
	bool stale;                  /* a mapping taken for plain JIT code holds perf
				      * trampolines: read the mappings again */
	unsigned rereads;            /* for that, at most STALE_REREADS */
	uint32_t njit;               /* functions interned under it (JIT code's) */
	struct nproc *next_dead;     /* forgotten, kept for those (native.dead) */
	uint64_t exited_ns;          /* in native.exited: when it exited */
};

struct bin_key {
	uint64_t dev, ino;
};

/* A native function's key: its binary, or for JIT code the process (an
 * nproc, kept until no stack holds the names, so its address is not reused
 * while they live), and its address there. */
struct func_key {
	const void *owner;
	uint64_t addr;
};

static struct func *new_func(const char *name, const char *file, uint8_t kind)
{
	struct func *f = calloc(1, sizeof(*f));

	if (!f)
		return NULL;
	f->name = strdup(name);
	f->file = strdup(file);
	f->kind = kind;
	if (!f->name || !f->file) {
		func_free(f);
		return NULL;
	}
	return f;
}

static void free_bin(void *v)
{
	struct nbin *b = v;

	free(b->fallback);
	nsym_close(b->sym);
	if (b->fd >= 0)
		close(b->fd);
	free(b->path);
	free(b);
}

static void free_proc(void *v)
{
	struct nproc *p = v;

	free(p->v);
	perfmap_free(&p->jit);
	perfmap_free(&p->gdb);
	perfmap_free(&p->dump);
	free(p);
}

/* (Re)read the perf map a JIT writes for perf (CPython's -X perf, and
 * others), from where the last read stopped; a file refused (perfmap.h) is
 * said once and not read again for that process. */
static void read_perf_map(struct nproc *p)
{
	char why[256];

	if (p->jit_refused)
		return;
	if (perfmap_read(&p->jit, p->pid, why, sizeof(why)) < 0) {
		p->jit_refused = true;
		fprintf(stderr, "pyperf-bpf: pid %d: %s; its JIT frames are not named\n", p->pid,
			why);
	}
}

#define JIT_REREAD_NS (200ull * 1000 * 1000) /* a JIT's lists read at most this often */

/* The JIT symbol holding pc in the jitdump file the process maps (CPython's
 * -X perf_jit, LLVM's and V8's perf support), the file read on from where
 * the last read stopped when pc is not in it, at most every JIT_REREAD_NS,
 * or at once when eager (pc is in an arena of CPython's trampolines, each
 * listed before it is first run: a stack is named once, when first seen,
 * and one named in the wait would keep "[jit]" for all its samples); a
 * file refused is said once and not read again for that process. */
static const struct jit_sym *jitdump_find(struct nproc *p, uint64_t pc, bool eager)
{
	const struct jit_sym *j = perfmap_find(&p->dump, pc);
	uint64_t now = clock_mono_ns();
	char why[256];

	if (j || p->dump_refused ||
	    (!eager && p->dump_read_ns && now - p->dump_read_ns < JIT_REREAD_NS))
		return j;
	p->dump_read_ns = now;
	if (jitdump_read(&p->dump, p->pid, why, sizeof(why)) < 0) {
		p->dump_refused = true;
		fprintf(stderr, "pyperf-bpf: pid %d: %s; its JIT frames are not named from it\n",
			p->pid, why);
	}
	return perfmap_find(&p->dump, pc);
}

static void free_func(void *v)
{
	func_free(v);
}

/* Is e, named base, a Cython extension module?  An extension's name ends
 * in ".so" without a "lib" in front (fastloop.cpython-311-x86_64-linux-gnu.so,
 * x.abi3.so), and Cython's functions are __pyx_ symbols in its .symtab (a
 * stripped one has no names to give anyway). */
static int is_pyx_symbol(void *ctx, const GElf_Sym *sym, const char *name)
{
	return !strncmp(name, "__pyx_", 6);
}

static bool is_cython(Elf *e, const char *base)
{
	size_t len = strlen(base);

	if (len < 4 || strcmp(base + len - 3, ".so") || !strncmp(base, "lib", 3))
		return false;
	return elf_each_function(e, is_pyx_symbol, NULL);
}

/* PT_LOAD segments of the ELF file on fd; 0, or -1 if it is not ELF */
static int read_segments(struct nbin *b)
{
	Elf *e = elf_begin(b->fd, ELF_C_READ_MMAP, NULL);
	size_t nph = 0;
	int rc = -1;

	if (!e)
		return -1;
	if (elf_kind(e) != ELF_K_ELF || elf_getphdrnum(e, &nph))
		goto out;
	for (size_t i = 0; i < nph && b->nsegs < MAX_SEGS; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		b->segs[b->nsegs].vaddr = ph.p_vaddr;
		b->segs[b->nsegs].offset = ph.p_offset;
		b->segs[b->nsegs].filesz = ph.p_filesz;
		b->nsegs++;
		if ((ph.p_flags & PF_X) && (!b->info.hi || ph.p_vaddr < b->info.lo)) {
			b->info.lo = ph.p_vaddr;
			b->info.offset = ph.p_offset;
		}
		if ((ph.p_flags & PF_X) && ph.p_vaddr + ph.p_memsz > b->info.hi)
			b->info.hi = ph.p_vaddr + ph.p_memsz;
	}
	rc = b->nsegs ? 0 : -1;
	b->cython = !rc && is_cython(e, b->base);
out:
	elf_end(e);
	return rc;
}

/* ---- tables: built on demand, loaded up to the cap, evicted, reclaimed ---- */

struct native_job {
	struct native_job *next;
	uint32_t table;
	int fd;                      /* a dup of the binary's */
	char *path;
	/* the result */
	long handle;                 /* -1: failed */
	uint64_t nrows, bytes, build_ns;
	bool too_big;
	bool cached;                 /* read from an earlier run's, not built */
};

#define WORKERS 2 /* a process's first tables come in parallel */

struct native_worker {
	pthread_t thread[WORKERS];
	int nthreads;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	struct native_job *todo, *todo_tail, *done;
	size_t queued;               /* jobs not yet collected */
	int efd;                     /* signalled when a job is done */
	bool stop;
};

/* BPF memory of a table of n elements (arrays are allocated by pages) */
static uint64_t table_bytes(uint64_t n)
{
	return (n * sizeof(struct unwind_row) + 4095) / 4096 * 4096;
}

/* Build the job's table, or read the one an earlier run kept
 * (table_cache.h), and make it loadable (any thread). */
static void run_job(const struct native_store *store, uint64_t cap, struct native_job *j)
{
	struct unwind_table t = { 0 };
	struct unwind_row *v;
	size_t len = 0;
	char err[256];
	uint64_t t0 = clock_mono_ns();

	j->handle = -1;
	v = table_cache_get(j->fd, j->table, &len);
	if (v) {
		j->cached = true;
	} else if (unwind_table_build(j->fd, j->path, &t, err, sizeof(err)) == 0 &&
		   prologue_fill_gaps(j->fd, &t) >= 0 && t.n < (1u << 26)) {
		v = unwind_table_layout(&t, j->table, &len);
		if (v)
			table_cache_put(j->fd, v, len);
	}
	unwind_table_free(&t);
	if (v) {
		j->nrows = v[0].nrows;
		j->bytes = table_bytes(len);
		if (j->bytes > cap)
			j->too_big = true;
		else
			j->handle = store->create(store->ctx, v, len);
		if (j->cached)
			table_cache_release(v, len);
		else
			free(v);
	}
	j->build_ns = clock_mono_ns() - t0;
}

static void *worker_main(void *arg)
{
	struct native *n = arg;
	struct native_worker *w = n->w;

	pthread_mutex_lock(&w->lock);
	for (;;) {
		struct native_job *j;

		while (!w->todo && !w->stop)
			pthread_cond_wait(&w->wake, &w->lock);
		if (w->stop)
			break;
		j = w->todo;
		w->todo = j->next;
		if (!w->todo)
			w->todo_tail = NULL;
		pthread_mutex_unlock(&w->lock);
		run_job(n->store, n->cap, j);
		pthread_mutex_lock(&w->lock);
		j->next = w->done;
		w->done = j;
		if (w->efd >= 0) {
			uint64_t one = 1;

			if (write(w->efd, &one, sizeof(one)) < 0) {
				/* a full counter still wakes the reader */
			}
		}
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

static void free_job(struct native *n, struct native_job *j)
{
	if (j->handle >= 0)
		n->store->discard(n->store->ctx, j->handle);
	if (j->fd >= 0)
		close(j->fd);
	free(j->path);
	free(j);
}

/* A header-only table: nrows 0 (no CFI: frame pointers) or UNWIND_NO_TABLE. */
static int install_marker(struct native *n, uint32_t table, uint32_t nrows)
{
	struct unwind_row hdr;
	long h;

	memset(&hdr, 0, sizeof(hdr));
	hdr.pc = table;
	hdr.nrows = nrows;
	h = n->store->create(n->store->ctx, &hdr, 1);
	if (h < 0)
		return -1;
	if (n->store->install(n->store->ctx, TABLE_SLOT(table), h)) {
		n->store->discard(n->store->ctx, h);
		return -1;
	}
	return 0;
}

/* A one-row table: CFA rsp + 16, rbp as rbp_kind/rbp_off8 say. */
static int install_fixed(struct native *n, uint32_t table, unsigned rbp_kind, int rbp_off8)
{
	struct unwind_row t[3]; /* header, the row, an empty page index */
	long h;

	memset(t, 0, sizeof(t));
	t[0].pc = table;
	t[0].nrows = 1;
	t[1].cfa_kind = CFA_RSP;
	t[1].cfa_off = 16;
	t[1].rbp_kind = rbp_kind;
	t[1].rbp_off8 = rbp_off8;
	h = n->store->create(n->store->ctx, t, 3);
	if (h < 0)
		return -1;
	if (n->store->install(n->store->ctx, TABLE_SLOT(table), h)) {
		n->store->discard(n->store->ctx, h);
		return -1;
	}
	return 0;
}

static void unload(struct native *n, struct nbin *b)
{
	if (b->tstate == T_LOADED || b->tstate == T_FAILED) {
		n->store->remove(n->store->ctx, TABLE_SLOT(b->table));
		if (b->tstate == T_LOADED) {
			n->st.tables--;
			n->st.rows -= b->nrows;
			n->st.bytes -= b->bytes;
		}
	}
	b->tstate = T_IDLE;
	b->bytes = b->nrows = 0;
}

/* Evict the least recently used loaded table other than keep; false: none. */
static bool evict_one(struct native *n, const struct nbin *keep)
{
	const uint64_t *used = n->store->used ? n->store->used(n->store->ctx) : NULL;
	struct nbin *victim = NULL;
	uint64_t best = UINT64_MAX;

	for (uint32_t i = FIRST_SLOT; i < PYPERF_MAX_TABLES; i++) {
		struct nbin *b = n->slot[i];
		uint64_t t;

		if (!b || b == keep || b->tstate != T_LOADED)
			continue;
		t = used && used[i] > b->loaded_ns ? used[i] : b->loaded_ns;
		if (t < best) {
			best = t;
			victim = b;
		}
	}
	if (!victim)
		return false;
	unload(n, victim);
	n->st.evicted++;
	return true;
}

/* Load a finished job's table (main thread). */
static void load_job(struct native *n, struct native_job *j)
{
	struct nbin *b = n->slot[TABLE_SLOT(j->table)];

	n->st.build_ns += j->build_ns;
	if (j->build_ns > n->st.max_build_ns)
		n->st.max_build_ns = j->build_ns;
	if (!b || b->table != j->table || b->tstate != T_QUEUED)
		return; /* reclaimed meanwhile */
	n->st.built++;
	if (j->handle < 0) {
		/* stop asking: a marker says "no table" to the unwinder */
		if (j->too_big)
			n->st.no_room++;
		else
			n->st.failed++;
		b->tstate = install_marker(n, b->table, UNWIND_NO_TABLE) ? T_IDLE : T_FAILED;
		return;
	}
	while (n->st.bytes + j->bytes > n->cap && evict_one(n, b))
		;
	if (n->st.bytes + j->bytes > n->cap ||
	    n->store->install(n->store->ctx, TABLE_SLOT(b->table), j->handle)) {
		b->tstate = T_IDLE;
		return;
	}
	j->handle = -1; /* the store's now */
	if (n->verbose)
		fprintf(stderr, "pyperf-bpf: unwind table of %s: %llu rows, %s in %.1f ms, "
			"loaded at %.0f ms\n", b->path, (unsigned long long)j->nrows,
			j->cached ? "read from " RUNCACHE_DIR : "built", j->build_ns / 1e6,
			(clock_mono_ns() - n->t0) / 1e6);
	b->tstate = T_LOADED;
	b->nrows = j->nrows;
	b->bytes = j->bytes;
	b->loaded_ns = clock_mono_ns();
	n->st.tables++;
	n->st.rows += b->nrows;
	n->st.bytes += b->bytes;
	if (n->st.bytes > n->st.peak_bytes)
		n->st.peak_bytes = n->st.bytes;
	if (!n->st.first_table_ns)
		n->st.first_table_ns = b->loaded_ns - n->t0;
}

void native_table_request(struct native *n, uint32_t table)
{
	struct nbin *b = n->store ? n->slot[TABLE_SLOT(table)] : NULL;
	struct native_job *j;

	if (!b || b->table != table || b->tstate != T_IDLE)
		return;
	j = calloc(1, sizeof(*j));
	if (!j)
		return;
	j->table = table;
	j->handle = -1;
	j->fd = dup(b->fd);
	j->path = strdup(b->path);
	if (j->fd < 0 || !j->path) {
		free_job(n, j);
		return;
	}
	b->tstate = T_QUEUED;
	if (!n->w) {
		run_job(n->store, n->cap, j);
		load_job(n, j);
		free_job(n, j);
		return;
	}
	pthread_mutex_lock(&n->w->lock);
	if (n->w->todo_tail)
		n->w->todo_tail->next = j;
	else
		n->w->todo = j;
	n->w->todo_tail = j;
	n->w->queued++;
	pthread_cond_signal(&n->w->wake);
	pthread_mutex_unlock(&n->w->lock);
}

void native_poll(struct native *n)
{
	struct native_job *done;

	if (!n->w)
		return;
	pthread_mutex_lock(&n->w->lock);
	done = n->w->done;
	n->w->done = NULL;
	pthread_mutex_unlock(&n->w->lock);
	/* oldest first */
	for (struct native_job *prev = NULL, *next; done; done = next) {
		next = done->next;
		done->next = prev;
		prev = done;
		if (!next)
			break;
	}
	while (done) {
		struct native_job *next = done->next;

		load_job(n, done);
		free_job(n, done);
		pthread_mutex_lock(&n->w->lock);
		n->w->queued--;
		pthread_mutex_unlock(&n->w->lock);
		done = next;
	}
}

int native_wake_fd(const struct native *n)
{
	return n->w ? n->w->efd : -1;
}

/* Is b one that nearly every sample of a Python process passes through? */
static bool always_needed(const struct nbin *b)
{
	return !strncmp(b->base, "python", 6) || !strncmp(b->base, "libpython", 9) ||
	       !strncmp(b->base, "libc.so", 7) || !strncmp(b->base, "libc-", 5);
}

void native_prefetch(struct native *n, int pid)
{
	struct nproc *np = hmap_get(&n->procs, &pid, sizeof(pid));

	for (size_t i = 0; np && i < np->n; i++)
		if (np->v[i].bin && always_needed(np->v[i].bin))
			native_table_request(n, np->v[i].bin->table);
}

size_t native_pending(const struct native *n)
{
	size_t q = 0;

	if (n->w) {
		pthread_mutex_lock(&n->w->lock);
		q = n->w->queued;
		pthread_mutex_unlock(&n->w->lock);
	}
	return q;
}

/* A free slot for b's table, with a new tag; TABLE_UNAVAILABLE when every
 * slot holds a binary some process maps. */
static uint32_t take_slot(struct native *n, struct nbin *b)
{
	for (uint32_t k = 0; k < PYPERF_MAX_TABLES - FIRST_SLOT; k++) {
		uint32_t i = FIRST_SLOT + (n->next_slot + k) % (PYPERF_MAX_TABLES - FIRST_SLOT);

		if (n->slot[i])
			continue;
		n->slot[i] = b;
		n->next_slot = i + 1 - FIRST_SLOT;
		if (++n->tag[i] == 0)
			n->tag[i] = 1;
		return i | (uint32_t)n->tag[i] << 16;
	}
	n->st.no_slot++;
	return TABLE_UNAVAILABLE;
}

/* One more process maps b. */
static void bin_ref(struct native *n, struct nbin *b)
{
	if (b->nprocs++ == 0 && n->store && b->table == TABLE_NONE)
		b->table = take_slot(n, b);
}

/* One process fewer maps b: without any, its table and slot go. */
static void bin_unref(struct native *n, struct nbin *b)
{
	if (!b->nprocs || --b->nprocs)
		return;
	b->idle_since_ns = clock_mono_ns();
	if (b->table != TABLE_NONE && b->table != TABLE_UNAVAILABLE) {
		if (b->tstate == T_LOADED)
			n->st.reclaimed++;
		unload(n, b);
		n->slot[TABLE_SLOT(b->table)] = NULL;
	}
	b->table = TABLE_NONE;
	b->tstate = T_IDLE; /* a job still queued finds its table gone */
}

int native_init(struct native *n, const struct native_store *store, uint64_t cap,
		bool threaded)
{
	memset(n, 0, sizeof(*n));
	elf_version(EV_CURRENT); /* read_segments uses libelf before anyone else may */
	n->t0 = clock_mono_ns();
	n->unknown = new_func("[unknown]", "", FN_NATIVE);
	if (!store)
		return 0;
	n->store = store;
	n->cap = cap;
	/* at every return address in an arena (3.12/3.13: "sub $8,%rsp; call
	 * *%rcx; add $8,%rsp; ret"; 3.14 on: "push %rbp; mov %rsp,%rbp; call
	 * *%rcx; pop %rbp; ret") the CFA is rsp + 16, and 3.14's saved rbp lies
	 * below the return address: one rule per arena */
	if (install_fixed(n, TABLE_TRAMPOLINE, RBP_SAME, 0) ||
	    install_fixed(n, TABLE_TRAMPOLINE_FP, RBP_AT_CFA, -2) ||
	    install_marker(n, TABLE_UNAVAILABLE, UNWIND_NO_TABLE))
		return -1;
	if (threaded) {
		n->w = calloc(1, sizeof(*n->w));
		if (!n->w)
			return -1;
		pthread_mutex_init(&n->w->lock, NULL);
		pthread_cond_init(&n->w->wake, NULL);
		n->w->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		while (n->w->nthreads < WORKERS &&
		       !pthread_create(&n->w->thread[n->w->nthreads], NULL, worker_main, n))
			n->w->nthreads++;
		if (!n->w->nthreads) {
			if (n->w->efd >= 0)
				close(n->w->efd);
			free(n->w);
			n->w = NULL;
			return -1;
		}
	}
	return 0;
}

void native_stop(struct native *n)
{
	struct native_worker *w = n->w;

	if (!w)
		return;
	pthread_mutex_lock(&w->lock);
	w->stop = true;
	pthread_cond_broadcast(&w->wake);
	pthread_mutex_unlock(&w->lock);
	for (int i = 0; i < w->nthreads; i++)
		pthread_join(w->thread[i], NULL);
	for (struct native_job *j = w->todo, *next; j; j = next) {
		next = j->next;
		free_job(n, j);
	}
	for (struct native_job *j = w->done, *next; j; j = next) {
		next = j->next;
		free_job(n, j);
	}
	pthread_mutex_destroy(&w->lock);
	pthread_cond_destroy(&w->wake);
	if (w->efd >= 0)
		close(w->efd);
	free(w);
	n->w = NULL;
}

void native_free(struct native *n)
{
	native_stop(n);
	hmap_free(&n->procs, free_proc);
	hmap_free(&n->exited, free_proc);
	for (struct nproc *p = n->dead, *next; p; p = next) {
		next = p->next_dead;
		free_proc(p);
	}
	hmap_free(&n->pcs, NULL);
	hmap_free(&n->strays, NULL);
	hmap_free(&n->funcs, free_func);
	hmap_free(&n->cython_funcs, free_func);
	cython_sources_free(&n->cython);
	hmap_free(&n->bins, free_bin);
	func_free(n->unknown);
	memset(n, 0, sizeof(*n));
}

static struct nbin *new_bin(struct native *n, int fd, const char *path, const struct bin_key *k)
{
	struct nbin *b = calloc(1, sizeof(*b));
	const char *slash;

	if (!b)
		return NULL;
	b->fd = fd;
	b->path = strdup(path);
	if (b->path) {
		slash = strrchr(b->path, '/');
		b->base = slash ? slash + 1 : b->path;
	}
	if (!b->path || read_segments(b) || hmap_put(&n->bins, k, sizeof(*k), b)) {
		b->fd = -1; /* the caller closes it */
		free_bin(b);
		return NULL;
	}
	b->info.path = b->path;
	{
		char self[64];

		snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
		if (elf_read_build_id(self, b->info.build_id, sizeof(b->info.build_id)))
			b->info.build_id[0] = 0;
	}
	n->st.binaries++;
	return b;
}

void native_close_idle(struct native *n, uint64_t idle_ns)
{
	uint64_t now = clock_mono_ns();

	if (now - n->last_idle_check_ns < 1000000000ull)
		return;
	n->last_idle_check_ns = now;
	hmap_for_each(&n->bins, e) {
		struct nbin *b = e->val;

		/* the vDSO's memfd is ours, never reopened: it stays */
		if (b->nprocs || b->fd < 0 || !strcmp(b->path, "[vdso]") ||
		    now - b->idle_since_ns < idle_ns || b->fetch == 1)
			continue;
		nsym_close(b->sym);
		b->sym = NULL;
		close(b->fd);
		b->fd = -1;
	}
}

uint32_t native_sweep_begin(struct native *n)
{
	if (++n->sweep_mark == 0) /* 0 is what a func never marked has */
		n->sweep_mark = 1;
	return n->sweep_mark;
}

/* Does entry e of a map of functions go: its key's owner (the key starts
 * with it) is in `gone`, or its function in `unheld`? */
static bool goes(const struct hmap_slot *e, const struct hmap *gone, const struct hmap *unheld)
{
	const void *owner;

	memcpy(&owner, e->key, sizeof(owner));
	return hmap_get(gone, &owner, sizeof(owner)) || hmap_get(unheld, &e->val, sizeof(e->val));
}

/* Keep the entries of *m that do not go; the others' values are freed with
 * free_val (may be NULL), and counted. */
static size_t drop_owned(struct hmap *m, const struct hmap *gone, const struct hmap *unheld,
			 void (*free_val)(void *))
{
	struct hmap keep = { 0 };
	size_t dropped = 0;

	hmap_for_each(m, e) {
		if (!goes(e, gone, unheld)) {
			if (!hmap_put(&keep, e->key, e->klen, e->val))
				continue;
			/* out of memory: keep the map as it was */
			hmap_free(&keep, NULL);
			return SIZE_MAX;
		}
	}
	hmap_for_each(m, e) {
		if (goes(e, gone, unheld)) {
			if (free_val)
				free_val(e->val);
			dropped++;
		}
	}
	hmap_free(m, NULL);
	*m = keep;
	return dropped;
}

/* the functions of m that no stack holds, of owners that stay and wait for
 * no debug file (whose arrival renames them in place), into *unheld */
static bool note_unheld(const struct hmap *m, const struct hmap *gone,
			const struct hmap *fetching, uint32_t mark, struct hmap *unheld)
{
	hmap_for_each(m, e) {
		const void *owner;

		if (((const struct func *)e->val)->seen == mark)
			continue;
		memcpy(&owner, e->key, sizeof(owner));
		if (hmap_get(gone, &owner, sizeof(owner)) || hmap_get(fetching, &owner, sizeof(owner)))
			continue;
		if (hmap_put(unheld, &e->val, sizeof(e->val), e->val))
			return false;
	}
	return true;
}

/* the owner of each function of `m` (keys start with it) that a stack holds
 * is taken out of `gone` */
static void keep_held(const struct hmap *m, struct hmap *gone, uint32_t mark)
{
	hmap_for_each(m, e) {
		const void *owner;

		if (((const struct func *)e->val)->seen != mark)
			continue;
		memcpy(&owner, e->key, sizeof(owner));
		(void)hmap_del(gone, &owner, sizeof(owner));
	}
}

void native_sweep_end(struct native *n, uint32_t mark)
{
	struct hmap gone = { 0 };     /* owner -> itself: nothing of it is held */
	struct hmap fetching = { 0 }; /* binaries waiting for a debug file */
	struct hmap unheld = { 0 };   /* functions no stack holds, of owners that stay */
	size_t funcs, cfuncs;

	/* what may go: binaries let go (closed, no process mapping them, no
	 * debug file on its way) and forgotten processes with JIT names */
	hmap_for_each(&n->bins, e) {
		struct nbin *b = e->val;

		if (b->fetch == 1 ? hmap_put(&fetching, &b, sizeof(b), b) != 0
				  : !b->nprocs && b->fd < 0 && hmap_put(&gone, &b, sizeof(b), b))
			goto out;
	}
	for (struct nproc *p = n->dead; p; p = p->next_dead)
		if (hmap_put(&gone, &p, sizeof(p), p))
			goto out;
	/* what a stack holds stays, with every name of its owner if that is
	 * let go; of an owner that stays, the names no stack holds go (named
	 * again if a stack needs them again: without this, every function
	 * ever named in a binary mapped for good, libc's or libpython's,
	 * stays) */
	keep_held(&n->funcs, &gone, mark);
	keep_held(&n->cython_funcs, &gone, mark);
	if (!note_unheld(&n->funcs, &gone, &fetching, mark, &unheld) ||
	    !note_unheld(&n->cython_funcs, &gone, &fetching, mark, &unheld))
		goto out;
	if (!gone.len && !unheld.len)
		goto out;
	/* the cache first (no free), then the functions, then their owners,
	 * each step only if the one before was done (out of memory: the
	 * owners stay, and what they had is named again when asked) */
	if (drop_owned(&n->pcs, &gone, &unheld, NULL) == SIZE_MAX ||
	    (cfuncs = drop_owned(&n->cython_funcs, &gone, &unheld, free_func)) == SIZE_MAX)
		goto out;
	if ((funcs = drop_owned(&n->funcs, &gone, &unheld, free_func)) == SIZE_MAX) {
		n->st.swept_funcs += cfuncs;
		goto out;
	}
	n->st.swept_funcs += funcs + cfuncs;
	{
		struct hmap bins = { 0 };
		bool oom = false;

		hmap_for_each(&n->bins, e)
			if (!hmap_get(&gone, &e->val, sizeof(e->val)) &&
			    hmap_put(&bins, e->key, e->klen, e->val))
				oom = true;
		if (oom) { /* the funcs are gone: their binaries may stay */
			hmap_free(&bins, NULL);
		} else {
			hmap_for_each(&n->bins, e)
				if (hmap_get(&gone, &e->val, sizeof(e->val))) {
					free_bin(e->val);
					n->st.swept_bins++;
				}
			hmap_free(&n->bins, NULL);
			n->bins = bins;
		}
	}
	for (struct nproc **pp = &n->dead; *pp;) {
		struct nproc *p = *pp;

		if (hmap_get(&gone, &p, sizeof(p))) {
			*pp = p->next_dead;
			free_proc(p);
			n->st.swept_jit++;
		} else {
			pp = &p->next_dead;
		}
	}
out:
	hmap_free(&gone, NULL);
	hmap_free(&fetching, NULL);
	hmap_free(&unheld, NULL);
}

void native_kept(const struct native *n, uint64_t *bins, uint64_t *open, uint64_t *funcs)
{
	*bins = n->bins.len;
	*open = 0;
	hmap_for_each(&n->bins, e)
		*open += ((const struct nbin *)e->val)->fd >= 0;
	*funcs = n->funcs.len + n->cython_funcs.len;
}

/* the binary mapped at m in pid, opened and tabled on first sight */
static struct nbin *file_bin(struct native *n, int pid, const struct proc_map *m)
{
	char p[PATH_MAX];
	struct stat st;
	struct bin_key k;
	struct nbin *b;
	int fd;

	snprintf(p, sizeof(p), "/proc/%d/map_files/%llx-%llx", pid, (unsigned long long)m->start,
		 (unsigned long long)m->end);
	fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0 && procmaps_host_path(pid, m->path, p, sizeof(p)))
		fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st)) {
		close(fd);
		return NULL;
	}
	memset(&k, 0, sizeof(k));
	k.dev = st.st_dev;
	k.ino = st.st_ino;
	b = hmap_get(&n->bins, &k, sizeof(k));
	if (b && b->fd < 0) { /* let go while idle: this is its file again */
		b->fd = fd;
		b->sym_failed = false;
		return b;
	}
	if (b) {
		close(fd);
		return b;
	}
	b = new_bin(n, fd, m->path, &k);
	if (!b)
		close(fd);
	return b;
}

/* The vDSO: the kernel's, identical in every process; ours, copied to a
 * memfd so it reads like a file. */
static struct nbin *vdso_bin(struct native *n)
{
	struct bin_key k = { .dev = 0, .ino = 1 };
	struct nbin *b = hmap_get(&n->bins, &k, sizeof(k));
	const void *img = (const void *)getauxval(AT_SYSINFO_EHDR);
	struct proc_maps self = { 0 };
	char err[128];
	size_t len = 0;
	int fd;

	if (b || !img)
		return b;
	if (procmaps_read(getpid(), &self, err, sizeof(err)))
		return NULL;
	for (size_t i = 0; i < self.n; i++)
		if (self.v[i].start == (uint64_t)(uintptr_t)img)
			len = self.v[i].end - self.v[i].start;
	procmaps_free(&self);
	fd = len ? memfd_create("vdso", MFD_CLOEXEC) : -1;
	if (fd < 0)
		return NULL;
	if (write(fd, img, len) != (ssize_t)len) {
		close(fd);
		return NULL;
	}
	b = new_bin(n, fd, "[vdso]", &k);
	if (!b)
		close(fd);
	return b;
}

/* load bias of mapping m of binary b: runtime address - ELF address */
static bool mapping_bias(const struct nbin *b, const struct proc_map *m, uint64_t *bias)
{
	for (int i = 0; i < b->nsegs; i++) {
		const struct nseg *s = &b->segs[i];

		if ((s->offset & ~4095ull) <= m->offset && m->offset < s->offset + s->filesz) {
			*bias = m->start - m->offset - (s->vaddr - s->offset);
			return true;
		}
	}
	return false;
}

/* pid's mappings are gone: its binaries let go of it */
static void release(struct native *n, struct nproc *np)
{
	uint64_t stamp = ++n->stamp;

	for (size_t i = 0; i < np->n; i++)
		if (np->v[i].bin && np->v[i].bin->stamp != stamp) {
			np->v[i].bin->stamp = stamp;
			bin_unref(n, np->v[i].bin);
		}
	free(np->v);
	np->v = NULL;
	np->n = 0;
}

static struct nproc *get_proc(struct native *n, int pid)
{
	struct nproc *np = hmap_get(&n->procs, &pid, sizeof(pid));

	if (np)
		return np;
	np = calloc(1, sizeof(*np));
	if (!np)
		return NULL;
	np->pid = pid;
	if (hmap_put(&n->procs, &pid, sizeof(pid), np)) {
		free(np);
		return NULL;
	}
	return np;
}

/* Which fixed table fits the code at addr, if it is CPython's perf
 * trampoline (0 if not)?  CPython writes the trampolines before it makes an
 * arena executable, so this holds from the first look, before the perf map
 * lists any trampoline there. */
static uint32_t trampoline_code(int pid, uint64_t addr)
{
	/* 3.12, 3.13: sub $8,%rsp; call *%rcx; add $8,%rsp; ret */
	static const uint8_t old[] = { 0x48, 0x83, 0xec, 0x08, 0xff, 0xd1, 0x48, 0x83, 0xc4,
				       0x08, 0xc3 };
	/* 3.14 on: endbr64; push %rbp; mov %rsp,%rbp; call *%rcx; pop %rbp; ret */
	static const uint8_t cet[] = { 0xf3, 0x0f, 0x1e, 0xfa, 0x55, 0x48, 0x89, 0xe5, 0xff,
				       0xd1, 0x5d, 0xc3 };
	uint8_t code[sizeof(cet)];

	if (mem_read(pid, addr, code, sizeof(code)))
		return 0;
	return !memcmp(code, old, sizeof(old))	 ? TABLE_TRAMPOLINE
	       : !memcmp(code, cet, sizeof(cet)) ? TABLE_TRAMPOLINE_FP
						 : 0;
}

/* does the JIT's list m have "py::..." entries in [start, end)?  The
 * arena's table as perf_trampolines returns it, else 0 */
static uint32_t listed_trampolines(struct nproc *np, const struct perfmap *m, uint64_t start,
				   uint64_t end)
{
	const struct jit_sym *j = perfmap_find(m, start);
	uint32_t t;

	for (size_t i = j ? (size_t)(j - m->v) : 0; i < m->n && m->v[i].start < end; i++)
		if (m->v[i].start >= start && !strncmp(m->v[i].name, "py::", 4)) {
			/* not the code we know: the older rule, which keeps rbp */
			t = trampoline_code(np->pid, m->v[i].start);
			return t ? t : TABLE_TRAMPOLINE;
		}
	return 0;
}

/* Is [start, end) an arena of CPython's perf trampolines (-X perf, 3.12+)?
 * Its code says so, or the perf map (or the jitdump file, -X perf_jit)
 * lists "py::..." entries in it.  Returns
 * the arena's fixed table, 0 if it is not one. */
static uint32_t perf_trampolines(struct nproc *np, uint64_t start, uint64_t end)
{
	uint32_t t = trampoline_code(np->pid, start);

	if (t)
		return t;
	read_perf_map(np);
	t = listed_trampolines(np, &np->jit, start, end);
	if (!t) {
		(void)jitdump_find(np, start, false); /* -X perf_jit lists them there */
		t = listed_trampolines(np, &np->dump, start, end);
	}
	return t;
}

int native_proc_update(struct native *n, int pid, struct native_maps *out, char *err,
		       size_t errlen)
{
	struct proc_maps maps = { 0 };
	struct nproc *np = get_proc(n, pid);
	struct nmap *v;
	size_t k = 0;
	uint64_t stamp;

	if (!np) {
		set_err(err, errlen, "out of memory");
		return -1;
	}
	if (procmaps_read(pid, &maps, err, errlen))
		return -1;
	v = calloc(maps.n + 1, sizeof(*v));
	if (!v) {
		procmaps_free(&maps);
		set_err(err, errlen, "out of memory");
		return -1;
	}
	memset(out, 0, sizeof(*out));
	for (size_t i = 0; i < maps.n; i++) {
		const struct proc_map *m = &maps.v[i];
		struct nmap nm = { .start = m->start, .end = m->end };

		if (m->perms[2] != 'x')
			continue;
		if (!m->path) {
			nm.bin = NULL; /* JIT code: frame pointers, unless... */
			if (n->store)
				nm.trampolines = perf_trampolines(np, m->start, m->end);
			if (nm.trampolines)
				nm.bias = m->start;
		} else if (!strcmp(m->path, "[vdso]")) {
			nm.bin = vdso_bin(n);
			if (!nm.bin || !mapping_bias(nm.bin, m, &nm.bias))
				continue;
		} else if (m->path[0] == '/') {
			nm.bin = file_bin(n, pid, m);
			if (!nm.bin || !mapping_bias(nm.bin, m, &nm.bias))
				continue;
		} else {
			continue; /* [vsyscall] and the like */
		}
		v[k] = nm;
		k++;
	}
	procmaps_free(&maps);
	/* the binaries this process maps now count it, then the old list lets go */
	stamp = ++n->stamp;
	for (size_t i = 0; i < k; i++)
		if (v[i].bin && v[i].bin->stamp != stamp) {
			v[i].bin->stamp = stamp;
			bin_ref(n, v[i].bin);
		}
	release(n, np);
	for (size_t i = 0; i < k; i++) {
		uint32_t table = v[i].bin ? v[i].bin->table
			       : v[i].trampolines ? v[i].trampolines : TABLE_NONE;

		if (i >= PYPERF_MAX_MAPPINGS) {
			n->st.mappings_dropped++;
			continue;
		}
		out->m[i].start = v[i].start;
		out->m[i].end = v[i].end;
		out->m[i].bias = v[i].bias;
		out->m[i].table = table;
		out->m[i].flags = v[i].bin && v[i].bin->cython ? NATIVE_MAP_EXACT_LEAF : 0;
	}
	out->n = k < PYPERF_MAX_MAPPINGS ? (uint32_t)k : PYPERF_MAX_MAPPINGS;
	np->v = v;
	np->n = k;
	return 0;
}

static void drop_proc(struct native *n, struct nproc *np)
{
	if (!np)
		return;
	release(n, np);
	if (!np->njit) {
		free_proc(np);
		return;
	}
	/* the names of its JIT code are keyed by np: it waits for a sweep */
	perfmap_free(&np->jit);
	perfmap_free(&np->gdb);
	perfmap_free(&np->dump);
	np->next_dead = n->dead;
	n->dead = np;
}

void native_proc_forget(struct native *n, int pid)
{
	drop_proc(n, hmap_del(&n->procs, &pid, sizeof(pid)));
}

void native_proc_exited(struct native *n, int pid, uint64_t now)
{
	struct nproc *np = hmap_del(&n->procs, &pid, sizeof(pid));

	if (!np)
		return;
	drop_proc(n, hmap_del(&n->exited, &pid, sizeof(pid))); /* an earlier one of pid */
	np->exited_ns = now;
	if (hmap_put(&n->exited, &pid, sizeof(pid), np))
		drop_proc(n, np); /* out of memory: let go now */
}

struct sweep {
	struct native *n;
	uint64_t now;
};

static bool take_exited(void *val, void *ctx)
{
	struct nproc *np = val;
	const struct sweep *w = ctx;

	if (w->now - np->exited_ns < NATIVE_EXITED_KEEP_NS)
		return false;
	drop_proc(w->n, np);
	return true;
}

void native_sweep_exited(struct native *n, uint64_t now)
{
	(void)hmap_take_if(&n->exited, take_exited, &(struct sweep){ n, now });
}

static const struct nmap *find_map(const struct nproc *np, uint64_t pc)
{
	size_t lo = 0, hi = np->n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (np->v[mid].start <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo && pc < np->v[lo - 1].end ? &np->v[lo - 1] : NULL;
}

bool native_take_stale(struct native *n, int pid)
{
	struct nproc *np = hmap_get(&n->procs, &pid, sizeof(pid));
	bool stale = np && np->stale;

	if (stale)
		np->stale = false;
	return stale;
}

bool native_pc_mapped(const struct native *n, int pid, uint64_t pc)
{
	const struct nproc *np = hmap_get(&n->procs, &pid, sizeof(pid));

	return np && find_map(np, pc);
}

/* a stray's key: the page of a process (padding zeroed for hmap) */
struct stray {
	int32_t pid;
	uint32_t pad;
	uint64_t page;
};

#define STRAYS_MAX 65536 /* pages remembered; then forgotten all at once */

uint64_t native_stray_backoff_ns(struct native *n, int pid, uint64_t pc)
{
	struct stray k = { .pid = pid, .page = pc >> 12 };
	uintptr_t seen;
	uint64_t ms = 100;

	if (n->strays.len >= STRAYS_MAX) {
		hmap_free(&n->strays, NULL);
		memset(&n->strays, 0, sizeof(n->strays));
	}
	seen = (uintptr_t)hmap_get(&n->strays, &k, sizeof(k));
	for (uintptr_t i = 0; i < seen && ms < NATIVE_STRAY_BACKOFF_MAX_MS; i++)
		ms *= 2;
	(void)hmap_put(&n->strays, &k, sizeof(k), (void *)(seen + 1));
	return (ms < NATIVE_STRAY_BACKOFF_MAX_MS ? ms : NATIVE_STRAY_BACKOFF_MAX_MS) * 1000000;
}

static bool is_eval_loop(const char *name)
{
	static const char eval[] = "_PyEval_EvalFrameDefault";
	size_t len = sizeof(eval) - 1;

	/* gcc may split off parts such as _PyEval_EvalFrameDefault.cold */
	return !strncmp(name, eval, len) && (!name[len] || name[len] == '.');
}

static struct func *intern(struct native *n, const void *owner, const struct binary *info,
			   uint64_t addr, const char *name, const char *file)
{
	struct func_key k;
	struct func *f;

	memset(&k, 0, sizeof(k));
	k.owner = owner;
	k.addr = addr;
	f = hmap_get(&n->funcs, &k, sizeof(k));
	if (f)
		return f;
	f = new_func(name, file, is_eval_loop(name) ? FN_EVAL : FN_NATIVE);
	if (!f)
		return n->unknown;
	f->bin = info;
	f->addr = addr;
	if (hmap_put(&n->funcs, &k, sizeof(k), f)) {
		func_free(f);
		return n->unknown;
	}
	return f;
}

/* a function of JIT code in np, interned under np */
static struct func *intern_jit(struct native *n, struct nproc *np, uint64_t addr,
			       const char *name, const char *file)
{
	size_t before = n->funcs.len;
	struct func *f = intern(n, np, NULL, addr, name, file);

	np->njit += n->funcs.len != before;
	return f;
}

/* The runtime address of the GDB JIT interface's descriptor in np: the
 * first binary it maps that defines one (each binary looked up once). */
static uint64_t jit_descriptor(struct nproc *np)
{
	for (size_t i = 0; i < np->n; i++) {
		struct nbin *b = np->v[i].bin;

		if (!b)
			continue;
		if (!b->jitdesc) {
			const char *name = GDBJIT_SYMBOL;
			char path[64], err[128];
			uint64_t v = 0;

			snprintf(path, sizeof(path), "/proc/self/fd/%d", b->fd);
			b->jitdesc = !elf_find_symbols(path, &name, 1, &v, NULL, err, sizeof(err)) && v ?
					     2 : 1;
			b->jitdesc_value = v;
		}
		if (b->jitdesc == 2)
			return b->jitdesc_value + np->v[i].bias;
	}
	return 0;
}

/* the JIT symbol holding pc that the GDB JIT interface names (LLVM's MCJIT:
 * numba), its list read again when pc is not in it, at most every
 * JIT_REREAD_NS */
static const struct jit_sym *gdbjit_find(struct nproc *np, uint64_t pc)
{
	const struct jit_sym *j = perfmap_find(&np->gdb, pc);
	uint64_t now = clock_mono_ns(), desc;

	if (j || now - np->gdb_read_ns < JIT_REREAD_NS)
		return j;
	np->gdb_read_ns = now;
	if (!(desc = jit_descriptor(np)))
		return NULL;
	perfmap_free(&np->gdb);
	gdbjit_read(np->pid, desc, &np->gdb);
	return perfmap_find(&np->gdb, pc);
}

/* code without a file (JIT): named from the perf map if the JIT wrote one,
 * its jitdump file, or the GDB JIT interface, else "[jit]" with its mapping
 * ("anon 0x7f..."), one name per mapping */
static const struct func *jit_func(struct native *n, struct nproc *np, uint64_t pc)
{
	const struct jit_sym *j = perfmap_find(&np->jit, pc);
	const struct nmap *m = find_map(np, pc);

	if (!j) {
		read_perf_map(np);
		j = perfmap_find(&np->jit, pc);
	}
	if (!j)
		j = jitdump_find(np, pc, m && m->trampolines);
	if (!j)
		j = gdbjit_find(np, pc);
	if (!j) {
		char where[64];

		if (!m)
			return n->unknown;
		snprintf(where, sizeof(where), "anon 0x%" PRIx64, m->start);
		/* keyed by the mapping's last byte, where no perf map symbol starts */
		return intern_jit(n, np, m->end - 1, "[jit]", where);
	}
	if (!strncmp(j->name, "py::", 4)) {
		/* the mappings were read after CPython mapped a trampoline arena
		 * but before it listed any trampoline in it: the unwinder took it
		 * for JIT code with frame pointers, which trampolines called from
		 * code without them are not */
		if (m && !m->trampolines && np->rereads < STALE_REREADS) {
			np->stale = true;
			np->rereads++;
		}
	}
	/* keyed by the process's own entry: addresses of JIT code are per process */
	return intern_jit(n, np, j->start, j->name, "[jit]");
}

/* debuginfod: should a debug file be fetched for b (its symbols just
 * opened)?  Asked then, by build-id. */
static void want_debug_file(struct native *n, struct nbin *b)
{
	char fdpath[64];

	b->fetch = 2;
	if (!n->fetch || !b->sym || !nsym_wants_debug_file(b->sym))
		return;
	snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d", b->fd);
	if (elf_read_build_id(fdpath, b->build_id, sizeof(b->build_id)) != 0 || !b->build_id[0])
		return;
	b->fetch = 1;
	dbgfetch_want(n->fetch, b->build_id);
}

/* debuginfod: debug files arrived; each binary waiting for one is named
 * anew from it, and its addresses named "binary+0x..." so far are renamed
 * in place (the stacks already counted show the names too) */
static void debug_files_arrived(struct native *n)
{
	n->fetch_gen = dbgfetch_generation(n->fetch);
	hmap_for_each(&n->bins, e) {
		struct nbin *b = e->val;
		char *path, err[256], name[512];
		struct nsym_bin *sym;
		uint64_t start;

		if (b->fetch != 1 || !(path = dbgfetch_path(n->fetch, b->build_id)))
			continue;
		sym = nsym_open_debug(b->fd, b->path, n->debuginfo_path, path, err, sizeof(err));
		free(path);
		if (!sym || !nsym_has_debug_file(sym)) {
			nsym_close(sym);
			continue;
		}
		nsym_close(b->sym);
		b->sym = sym;
		b->fetch = 2;
		for (size_t i = 0; i < b->nfallback; i++) {
			struct func *f = b->fallback[i];
			char *named;

			if (nsym_name(sym, f->addr, name, sizeof(name), &start) == 1 &&
			    (named = strdup(name))) {
				free(f->name);
				f->name = named;
			}
		}
		free(b->fallback);
		b->fallback = NULL;
		b->nfallback = b->capfallback = 0;
	}
}

void native_debug_poll(struct native *n)
{
	if (n->fetch && dbgfetch_generation(n->fetch) != n->fetch_gen)
		debug_files_arrived(n);
}

/* an address of b named "binary+0x...": renamed if a debug file comes */
static void note_fallback(struct nbin *b, struct func *f)
{
	if (b->nfallback == b->capfallback) {
		size_t cap = b->capfallback ? 2 * b->capfallback : 64;
		struct func **v = cap <= FALLBACKS_MAX ? realloc(b->fallback, cap * sizeof(*v))
						       : NULL;

		if (!v)
			return;
		b->fallback = v;
		b->capfallback = cap;
	}
	b->fallback[b->nfallback++] = f;
}

/* The .pyx file and line of vaddr in b (Cython code), 0 if unknown: from
 * the DWARF line table, which names the .pyx itself in a build with line
 * directives and else a line of the generated C file, mapped through its
 * marks */
static int cython_line(struct native *n, struct nbin *b, uint64_t vaddr, const char **pyx)
{
	static char name[4096];
	struct nsym_loc loc[8];
	int nloc = nsym_source(b->sym, vaddr, loc, 8), line;

	/* innermost first: code Cython inlined from its runtime support (after
	 * every mark) or from CPython's headers has none; its call site in the
	 * function does */
	for (int i = 0; i < nloc; i++) {
		size_t len = strlen(loc[i].file);

		if ((len > 4 && !strcmp(loc[i].file + len - 4, ".pyx")) ||
		    (len > 3 && !strcmp(loc[i].file + len - 3, ".py"))) {
			const char *slash = strrchr(loc[i].file, '/');

			snprintf(name, sizeof(name), "%s", slash ? slash + 1 : loc[i].file);
			*pyx = name;
			return loc[i].line;
		}
		if ((line = cython_source_line(&n->cython, loc[i].file, loc[i].line, pyx)))
			return line;
	}
	return 0;
}

/* The frame of address vaddr in symbol `sym` (starting at start) of b when
 * it is Cython code: "NAME (FILE.pyx:LINE)", one func per line, kind
 * FN_PYTHON; with no line known, the Cython name as a native function of
 * b.  NULL: not Cython. */
static struct func *cython_func(struct native *n, struct nbin *b, const char *sym,
				uint64_t start, uint64_t vaddr)
{
	struct {
		struct nbin *bin;
		uint64_t start;
		int64_t line;
	} k;
	char name[512], module[256];
	const char *pyx = NULL, *defpyx = NULL;
	int line, defline;
	struct func *f;

	snprintf(module, sizeof(module), "%.*s", (int)strcspn(b->base, "."), b->base);
	if (!cython_name(sym, module, name, sizeof(name)))
		return NULL;
	line = cython_line(n, b, vaddr, &pyx);
	/* the function's own line: where its entry was made from (its def) */
	defline = cython_line(n, b, start, &defpyx);
	if (!line || !pyx) { /* in code no mark covers: the function, at its def */
		line = defline;
		pyx = defpyx;
	}
	if (!line || !pyx)
		return intern(n, b, &b->info, start, name, b->base);
	memset(&k, 0, sizeof(k));
	k.bin = b;
	k.start = start;
	k.line = line;
	if ((f = hmap_get(&n->cython_funcs, &k, sizeof(k))))
		return f;
	if (!(f = new_func(name, pyx, FN_PYTHON)))
		return n->unknown;
	f->firstlineno = defline && defpyx && !strcmp(defpyx, pyx) ? defline : line;
	f->line = line;
	f->bin = &b->info;
	f->addr = start;
	if (hmap_put(&n->cython_funcs, &k, sizeof(k), f)) {
		func_free(f);
		return n->unknown;
	}
	return f;
}

static const struct func *func_in(struct native *n, struct nproc *np, uint64_t pc, bool leaf)
{
	const struct nmap *m = np ? find_map(np, pc) : NULL;
	uint64_t vaddr, start;
	char name[512], err[256];
	struct func_key k;
	struct func *f;
	int named = 0;

	native_debug_poll(n);
	if (m && !m->bin)
		return jit_func(n, np, pc - (leaf ? 0 : 1));
	if (!m)
		return n->unknown;
	vaddr = pc - m->bias - (leaf ? 0 : 1);
	memset(&k, 0, sizeof(k));
	k.owner = m->bin;
	k.addr = vaddr;
	if ((f = hmap_get(&n->pcs, &k, sizeof(k))))
		return f;
	if (!m->bin->sym && !m->bin->sym_failed) {
		m->bin->sym = nsym_open(m->bin->fd, m->bin->path, n->debuginfo_path, err, sizeof(err));
		m->bin->sym_failed = !m->bin->sym;
	}
	if (!m->bin->fetch)
		want_debug_file(n, m->bin);
	if (m->bin->sym) {
		named = nsym_name(m->bin->sym, vaddr, name, sizeof(name), &start);
	} else {
		snprintf(name, sizeof(name), "%s+0x%llx", m->bin->base, (unsigned long long)vaddr);
	}
	f = named && !strncmp(name, "__pyx_", 6) ? cython_func(n, m->bin, name, start, vaddr)
						  : NULL;
	if (!f)
		f = intern(n, m->bin, &m->bin->info, named ? start : vaddr, name, m->bin->base);
	if (f != n->unknown && !named && m->bin->fetch == 1)
		note_fallback(m->bin, f);
	if (f != n->unknown)
		(void)hmap_put(&n->pcs, &k, sizeof(k), f); /* out of memory: named again next time */
	return f;
}

const struct func *native_func(struct native *n, int pid, uint64_t pc, bool leaf)
{
	return func_in(n, hmap_get(&n->procs, &pid, sizeof(pid)), pc, leaf);
}

const struct func *native_func_exited(struct native *n, int pid, uint64_t pc, bool leaf)
{
	return func_in(n, hmap_get(&n->exited, &pid, sizeof(pid)), pc, leaf);
}
