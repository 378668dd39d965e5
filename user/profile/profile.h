/* profile.h - stack aggregation in user space: pure data, no I/O.
 *
 * The sampler announces each new stack (pid, hash, frames) on the ring buffer
 * and later reports counts per (pid, tid, hash).  Once the naming step
 * (session/naming.h) has named a stack's frames (struct func, frame.h), a
 * profile keeps it, per process, under its key (struct stack_ref), and sums
 * counts per (stack, thread, kernel stack).  Every classification of a
 * process image gets a new generation number that the sampler puts in each
 * key, so a reused pid or an exec'ed program never inherits old names. */
#ifndef PYPERF_PROFILE_H
#define PYPERF_PROFILE_H

#include <stdbool.h>
#include <stdint.h>
#include "container.h"
#include "hmap.h"
#include "events.h"
#include "timeline.h"
#include "pyperf.h"
#include "frame.h"

/* The key of a stack: the process, its image and the sampler's hash. */
struct stack_ref {
	uint32_t pid;
	uint32_t gen;
	uint64_t hash;
};

/* The key of a named code object: its address in image gen, and the check
 * the sampler took with it (py_code_check). */
struct code_ref {
	uint64_t addr;
	uint32_t check;
	uint32_t gen;
};

struct pframe {
	struct func *fn;
	uint32_t instr;              /* byte offset in the code, UINT32_MAX: not started */
};

/* A thread as outputs name it. */
struct pthread {
	int pid;
	char os[PYPERF_COMM_LEN + 1]; /* the kernel's name (comm) */
	char *py;                    /* its threading.Thread's name, NULL: none known */
	uint64_t py_thread;          /* that Thread object in the process, 0: not known */
	uint64_t py_tried_ns;        /* when the Python name was last looked for */
	uint8_t py_never;            /* walks in a row that found a bottom frame not
				      * threading's: 2, none is looked for again */
};

struct pstack {
	uint32_t pid;
	uint32_t gen;                /* the process image it was sampled in */
	uint32_t flags;              /* STACK_TRUNCATED, STACK_BAD_READ */
	uint32_t nframes;
	void *ident;                 /* what it was named from (NULL: not given) */
	size_t nident;
	uint64_t *kernel;            /* an off-CPU stack's kernel frames, leaf first:
				      * every count of it has these (NULL: none) */
	uint32_t nkernel;
	uint32_t used;               /* the profile's interval it was last counted in */
	struct pframe frames[];      /* leaf first: Python and native frames merged */
};

/* A kernel stack, leaf first; ips and names are NULL until
 * profile_set_kernel_names. */
struct kstack {
	uint32_t n;                  /* frames shown */
	uint32_t nall;               /* frames taken */
	bool offcpu;                 /* taken as the thread left the CPU */
	const uint64_t *ips;         /* nall of them */
	const char **names;          /* the n shown: an off-CPU stack's start without
				      * the tracing frames that took it (bpf_prog_*,
				      * bpf_trace_run*, ...) */
	const char *all_names[];
};

struct psample {
	struct pstack *stack;
	struct kstack *kstack;       /* NULL: the sample was taken in user mode */
	uint32_t tid;
	uint64_t count;
	uint64_t heap[4];            /* `leaks` (count: bytes still live): PROFILE_HEAP_* */
};

enum {
	PROFILE_HEAP_INUSE_OBJECTS,  /* objects still live */
	PROFILE_HEAP_ALLOC_BYTES,    /* bytes allocated */
	PROFILE_HEAP_ALLOC_OBJECTS,  /* objects allocated */
	PROFILE_HEAP_OLDEST_MS,      /* the oldest live one's age (profile_add_heap keeps
				      * the largest value given) */
	PROFILE_HEAP_N
};

struct pproc {
	int pid;
	int ns_pid;                  /* its pid in its own pid namespace (a container's) */
	struct container ctr;        /* its container, id "" if none */
	char comm[PYPERF_COMM_LEN];
	char cmdline[256];
	int py_major, py_minor;      /* its CPython version */
	uint64_t samples;
	struct hmap code;            /* struct code_ref -> struct func * */
	struct hmap stacks;          /* (gen, stack hash) -> struct pstack * */
	void **owned;                /* its stacks and functions, freed with it */
	size_t nowned, capowned;
};

struct profile {
	struct hmap procs;           /* pid -> struct pproc * */
	struct hmap samples;         /* (struct pstack *, tid) -> struct psample * */
	struct hmap threads;         /* tid -> struct pthread */
	struct hmap refused;         /* pid -> struct prefused: found, not profiled */
	struct hmap kstacks;         /* kernel addresses -> struct kstack * */
	struct hmap knames;          /* kernel address -> its symbol name */
	uint64_t total;              /* samples counted */
	uint64_t unattributed;       /* counts whose stack was never announced */
	uint64_t unresolved_frames;  /* code objects that could not be read */
	uint32_t interval;           /* intervals started (profile_reset_counts) */
	uint64_t forgets;            /* times it forgot what the sampler's announcements
				      * told it: threads' names (profile_reset_counts),
				      * stacks (profile_trim), processes
				      * (profile_forget_proc); each makes the sampler
				      * announce every stack again (sampler_announce_again) */
	struct events events;        /* --events: what the interpreters' markers told */
	struct timeline *timeline;   /* -f timeline: samples and markers in time (NULL: not asked) */
};

void profile_init(struct profile *p);
void profile_free(struct profile *p);

/* The process entry for pid, created (with empty names) if new. */
struct pproc *profile_proc(struct profile *p, int pid);
/* pid's command name and command line (NUL-terminated, cut to fit). */
void profile_describe_proc(struct profile *p, int pid, const char *comm, const char *cmdline);
/* How writers name a process: its command line, else its command name,
 * else "?" (pp may be NULL); and its command name, else "?". */
const char *profile_proc_label(const struct pproc *pp);
const char *profile_proc_comm(const struct pproc *pp);
/* The function kept for code object c of process pid, or NULL. */
struct func *profile_code(const struct profile *p, int pid, const struct code_ref *c);
/* Keep fn (malloc'd, with its name, file and line table) until pid's entry
 * goes; with c, profile_code finds it under c from now on.  -1: no memory
 * (fn is freed). */
int profile_keep_func(struct profile *p, int pid, struct func *fn, const struct code_ref *c);
/* Record a stack whose frames are named (leaf first; copied), with the
 * kernel frames kips[0..nk) its counts all have (an off-CPU stack; nk 0 for
 * none).  ident (may be NULL) is what it was named from, copied too: a key
 * already known is kept unless ident is given and differs, then the key
 * names the new stack from now on (its code objects were replaced). */
int profile_insert_stack(struct profile *p, const struct stack_ref *ref, uint32_t flags,
			 const struct pframe *frames, uint32_t n, const uint64_t *kips,
			 uint32_t nk, const void *ident, size_t nident);
/* The stack named under ref, NULL if none */
const struct pstack *profile_find_stack(const struct profile *p, const struct stack_ref *ref);
/* Is ref known with this flags and ident already? */
bool profile_has_stack(const struct profile *p, const struct stack_ref *ref, uint32_t flags,
		       const void *ident, size_t nident);
/* `leaks`: every sample's count moves to heap[i]; counts and totals start
 * again from zero (the stacks stay) */
void profile_counts_to_heap(struct profile *p, int i);
/* `leaks`: add v to heap[i] of ref's sample of thread tid (in user mode);
 * PROFILE_HEAP_OLDEST_MS keeps the largest v instead */
void profile_add_heap(struct profile *p, const struct stack_ref *ref, uint32_t tid, int i,
		      uint64_t v);
/* Add count samples (or nanoseconds) of thread tid in stack ref (its
 * kernel frames, if any, are the stack's: profile_insert_stack). */
void profile_add_count(struct profile *p, const struct stack_ref *ref, uint32_t tid,
		       uint64_t count);

/* The kernel addresses of the profile's samples that have no name yet,
 * sorted (caller frees; NULL and *n 0 for none or no memory). */
uint64_t *profile_unnamed_kernel(const struct profile *p, size_t *n);
/* Name addrs[i] names[i] (names[i] NULL: "[unknown]"), taking the malloc'd
 * names; every kernel stack's frames are named after this. */
void profile_set_kernel_names(struct profile *p, const uint64_t *addrs, char **names, size_t n);
/* All (stack, thread) samples, in a stable order (caller frees the array). */
struct psample **profile_samples(const struct profile *p, size_t *n);
/* Remember thread tid of process pid and its OS name (comm, up to
 * PYPERF_COMM_LEN bytes). */
void profile_set_thread_name(struct profile *p, int pid, uint32_t tid, const char *comm);
/* Thread tid (known) has this Python name (threading.Thread's), which
 * outputs show instead of the OS's. */
void profile_set_thread_pyname(struct profile *p, uint32_t tid, const char *name);
/* A thread's weight: its samples' counts summed. */
struct pthread_total {
	uint32_t pid, tid;
	uint64_t weight;
};
/* The threads of samples v[0..n) (profile_samples' order), by process
 * (ascending pid), busiest first in each; malloc'd, *nt of them (NULL and
 * *nt 0 for none or no memory). */
struct pthread_total *profile_thread_totals(struct psample *const *v, size_t n, size_t *nt);
/* Name of thread tid: its Python name, else the kernel's, else "?". */
const char *profile_thread_name(const struct profile *p, uint32_t tid);
/* Start a new interval (daemon): counts, samples, kernel stacks and thread
 * names go; processes, their stacks and names stay, so keys the sampler
 * announced earlier are still known. */
void profile_reset_counts(struct profile *p);

/* A process the profiler found but could not profile (an unsupported
 * CPython build): why, and the weight of its samples meanwhile (samples,
 * ns or bytes, as counts are). */
struct prefused {
	int pid;
	char comm[PYPERF_COMM_LEN];
	char why[200];
	uint64_t weight;
};

/* Note pid as refused (once; later calls keep the first why). */
void profile_refuse(struct profile *p, int pid, const char *comm, const char *why);
/* Daemon, right after profile_reset_counts: free the stacks of live
 * processes not counted in the last `idle` intervals, and the functions of
 * their code objects no other stack holds (a long-lived process that makes
 * code all the time, or names asyncio tasks anew, would keep every one);
 * a stack that recurs is announced again and named anew.  Returns the
 * stacks freed. */
size_t profile_trim(struct profile *p, uint32_t idle);
/* Stacks and functions of code objects the profile keeps, in all. */
void profile_kept(const struct profile *p, size_t *stacks, size_t *code);
/* Free everything kept for pid (it exited).  -1 if it has samples (they
 * point at its stacks) or is unknown. */
int profile_forget_proc(struct profile *p, int pid);
/* Set fn->seen = mark on every function a kept stack holds (markers
 * excepted): a sweep of names no stack holds any more (native.h) marks
 * first. */
void profile_mark_funcs(const struct profile *p, uint32_t mark);
/* Number of processes with at least one sample. */
size_t profile_nprocs_seen(const struct profile *p);

#endif
