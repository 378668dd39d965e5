/* native.h - native frames, seen from the loader.
 *
 * For each profiled process we read its executable mappings; each distinct
 * binary (device and inode) gets a table id at first sight, and its unwind
 * table (unwind_table.c) is built when a sample first lands in it, shared by
 * every process that maps it.  The process's mappings, with the load bias of
 * each and its binary's table id, go to the `native_procs` map.
 *
 * The same records name native addresses later: a runtime address becomes
 * (binary, ELF address), and the binary's symbols (nsym.c) give the name.
 * Binaries stay open (by the descriptor taken while the process lived), so
 * processes that exited are still named; one no process has mapped for a
 * while is closed (native_close_idle), and its names are freed once no kept
 * stack holds them (native_sweep_begin).
 *
 * Library code: errors are returned, with a one-line message where asked. */
#ifndef PYPERF_NATIVE_H
#define PYPERF_NATIVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "hmap.h"
#include "cython.h"
#include "pyperf.h"
#include "frame.h"

struct dbgfetch;

struct sampler;
struct nbin;
struct native_worker;

struct native_stats {
	uint64_t binaries;           /* distinct binaries seen */
	uint64_t tables;             /* tables loaded now */
	uint64_t built;              /* tables built (a rebuilt one again) */
	uint64_t rows;               /* rows loaded now */
	uint64_t bytes;              /* BPF memory of the tables loaded now */
	uint64_t peak_bytes;
	uint64_t no_room;            /* tables larger than the whole cap */
	uint64_t failed;             /* binaries whose CFI could not be read */
	uint64_t evicted;            /* tables dropped to make room (rebuilt if needed) */
	uint64_t reclaimed;          /* tables dropped when no process mapped them */
	uint64_t no_slot;            /* binaries given no table: all slots busy */
	uint64_t build_ns;           /* time spent building tables (worker) */
	uint64_t max_build_ns;       /* the slowest one */
	uint64_t first_table_ns;     /* from native_init to the first table loaded */
	uint64_t mappings_dropped;   /* executable mappings beyond PYPERF_MAX_MAPPINGS */
	uint64_t swept_bins;         /* binaries whose names a sweep freed */
	uint64_t swept_jit;          /* forgotten processes whose JIT names it freed */
	uint64_t swept_funcs;        /* functions it freed */
};

/* Where loaded tables live: the sampler's BPF maps, or memory (dump).  A
 * table is `n` rows, header first (pyperf.h). */
struct native_store {
	/* Make a table that can be installed: a handle >= 0, or -1.  Called
	 * from the worker thread (it must not touch the store's other state). */
	long (*create)(void *ctx, const struct unwind_row *t, size_t n);
	/* Put table h in slot (the store owns it from then on); 0 or -1. */
	int (*install)(void *ctx, uint32_t slot, long h);
	/* Empty a slot. */
	void (*remove)(void *ctx, uint32_t slot);
	/* Free a table never installed. */
	void (*discard)(void *ctx, long h);
	/* When each slot's table was last used, CLOCK_MONOTONIC ns (0: never);
	 * NULL when the store does not know. */
	const uint64_t *(*used)(void *ctx);
	void *ctx;
};

struct native {
	const struct native_store *store; /* NULL: no tables */
	uint64_t cap;                /* bytes the loaded tables may take */
	bool verbose;                /* say on stderr when a table loads or goes */
	const char *debuginfo_path;  /* where separate debug files are searched, in
				      * libdwfl's syntax (NULL: /usr/lib/debug, and
				      * under a binary's own prefix) */
	struct hmap bins;            /* (dev, inode) -> struct nbin * */
	struct hmap procs;           /* pid -> struct nproc * */
	struct hmap exited;          /* pid -> struct nproc *: exited within the last
				      * NATIVE_EXITED_KEEP_NS (native_proc_exited) */
	struct hmap funcs;           /* (nbin *, symbol start or address) -> struct func * */
	struct hmap strays;          /* (pid, page) -> times found in no mapping, as a pointer */
	struct hmap pcs;             /* (nbin *, address) -> its entry in funcs: a new stack's
				      * frames are mostly addresses named before */
	struct func *unknown;      /* "[unknown]" */
	struct hmap cython_funcs;    /* (nbin *, symbol start, .pyx line) -> struct func *
				      * of Cython code (cython.h) */
	struct cython_sources cython; /* the generated C files read for their marks */
	struct nbin *slot[PYPERF_MAX_TABLES]; /* a binary per table slot */
	uint16_t tag[PYPERF_MAX_TABLES];      /* bumped at each reuse of a slot */
	uint32_t next_slot;
	uint64_t stamp;              /* marks binaries counted once per process */
	uint64_t last_idle_check_ns; /* native_close_idle: at most once a second */
	uint64_t t0;
	struct nproc *dead;          /* forgotten processes whose JIT code was named:
				      * kept until no stack holds those names */
	uint32_t sweep_mark;         /* the last sweep's (native_sweep_begin) */
	struct native_worker *w;     /* threaded: the builder */
	struct dbgfetch *fetch;      /* debuginfod (NULL: none): debug files for binaries
				      * with neither .symtab nor a local debug file */
	uint64_t fetch_gen;          /* its generation last looked at */
	struct native_stats st;
};

/* debuginfod (n->fetch): name anew the binaries whose debug files came,
 * their addresses already named "binary+0x..." renamed in place.  Done by
 * native_func at each call; this is for a caller that names nothing more. */
void native_debug_poll(struct native *n);

/* Tables are built when a sample asks (native_table_request), loaded into
 * `store` up to `cap` bytes (least recently used ones evicted beyond), and
 * dropped when no process maps their binary any more.  `threaded`: built in
 * a worker thread, loaded by native_poll; else built and loaded at once.
 * store NULL: no tables (mappings only, for names).  Returns 0 or -1
 * (cannot start the worker). */
int native_init(struct native *n, const struct native_store *store, uint64_t cap,
		bool threaded);
/* Stop the worker threads (a job they build uses the store, which must
 * outlive them); native_free does it too.  Idempotent. */
void native_stop(struct native *n);
void native_free(struct native *n);

/* A sample needed table `table` (native_mapping.table): build it unless it
 * is loaded, queued, or known to be impossible. */
void native_table_request(struct native *n, uint32_t table);
/* Load the tables the worker finished.  Call often (every loop turn). */
void native_poll(struct native *n);
/* Signalled when the worker finished a table (-1: not threaded). */
int native_wake_fd(const struct native *n);
/* Ask at once for the tables of pid's interpreter and C library, which
 * nearly every sample needs (others wait for a sample to need them). */
void native_prefetch(struct native *n, int pid);
/* Tables asked for and not loaded yet. */
size_t native_pending(const struct native *n);

/* (Re)read pid's mappings, give binaries not seen before a table id, and
 * fill *out for the BPF map.  Returns 0, or -1 with a message (process gone,
 * unreadable maps). */
int native_proc_update(struct native *n, int pid, struct native_maps *out, char *err,
		       size_t errlen);
/* Naming a frame showed that pid's mappings must be read again (a perf
 * trampoline arena read as plain JIT code); clears the flag. */
bool native_take_stale(struct native *n, int pid);
/* Does a mapping of pid (as last read) hold pc? */
bool native_pc_mapped(const struct native *n, int pid, uint64_t pc);
/* A reread of pid's mappings found none holding pc (a stray return address,
 * JIT code already freed): how long the unwinder should not ask again for a
 * pc in that page.  100 ms the first time, doubled each time after, up to
 * NATIVE_STRAY_BACKOFF_MAX_MS, so such a pc does not make the loader reread
 * /proc/PID/maps ten times a second for the life of the process, while a
 * pc in any other page (a library loaded later) still asks at once. */
#define NATIVE_STRAY_BACKOFF_MAX_MS 6400
uint64_t native_stray_backoff_ns(struct native *n, int pid, uint64_t pc);
/* pid exec'ed: its mappings are gone (binaries stay, for names). */
void native_proc_forget(struct native *n, int pid);
/* pid exited at now: its mappings are kept aside for NATIVE_EXITED_KEEP_NS,
 * for the stacks it was sampled in that come after the news of its exit
 * (a sample taken while the exit hook itself ran, a thread of it that ran
 * on into the exit) and are named by native_func_exited.  Then
 * native_sweep_exited lets them go, as native_proc_forget does. */
#define NATIVE_EXITED_KEEP_NS (2000ull * 1000 * 1000)
void native_proc_exited(struct native *n, int pid, uint64_t now);
void native_sweep_exited(struct native *n, uint64_t now);
/* Let go of the file and the symbols of every binary that no process has
 * mapped for idle_ns: a long run (the daemon) that sees new binaries all the
 * time (upgrades, fresh interpreters, extension modules) keeps neither fds
 * nor libdw's tables of the old ones.  What was named stays named; a binary
 * mapped again is reopened.  Cheap when nothing is idle: call it often. */
#define NATIVE_IDLE_CLOSE_NS (30 * 1000000000ull)
void native_close_idle(struct native *n, uint64_t idle_ns);

/* Free names no stack holds any more, in three steps: m =
 * native_sweep_begin(n); the caller sets seen = m on every func a stack
 * it keeps holds (profile_mark_funcs); native_sweep_end(n, m) frees the
 * binaries let go (native_close_idle: no process maps them) none of whose
 * functions were marked, the JIT functions of forgotten processes when
 * none of them was, and of the binaries and processes that stay, the
 * functions not marked (but those of a binary waiting for its debug file).
 * A binary mapped again later is opened and named anew, an address named
 * again when a stack needs it.
 * Without it a long run that forgets exited processes' stacks (the daemon)
 * keeps every name it ever made.  Only a caller that holds every stack
 * with native funcs may sweep: any other pointer to a freed func dangles. */
uint32_t native_sweep_begin(struct native *n);
void native_sweep_end(struct native *n, uint32_t mark);
/* What n keeps now: binaries, those of them open, named functions. */
void native_kept(const struct native *n, uint64_t *bins, uint64_t *open, uint64_t *funcs);

/* The function at runtime address pc of pid, named (interned; lives until
 * a sweep frees it, see above).  `leaf`: pc is where the thread was, else a
 * return address (named by the call before it).  kind FN_EVAL for the
 * interpreter's eval loop. */
const struct func *native_func(struct native *n, int pid, uint64_t pc, bool leaf);
/* The same, from the mappings of pid as it was when it exited (NULL-safe:
 * "[unknown]" when they are not kept). */
const struct func *native_func_exited(struct native *n, int pid, uint64_t pc, bool leaf);

#endif
