/* profile.h - stack aggregation in user space.
 *
 * The sampler announces each new stack (pid, hash, frames) on the ring buffer
 * and later reports counts per (pid, tid, hash).  A profile keeps, per process,
 * an index hash -> struct pstack whose frames are already named (struct
 * func, frame.h), and sums counts per (stack, thread).  Every classification of a
 * process image gets a new generation number that the sampler puts in each
 * key, so a reused pid or an exec'ed program never inherits old names. */
#ifndef PYPERF_PROFILE_H
#define PYPERF_PROFILE_H

#include <stdbool.h>
#include <stdint.h>
#include "hmap.h"
#include "ksyms.h"
#include "native.h"
#include "pyperf.h"
#include "pyproc.h"
#include "frame.h"

struct pframe {
	struct func *fn;
	uint32_t instr;              /* byte offset in the code, UINT32_MAX: not started */
};

struct pstack {
	uint32_t pid;
	uint32_t gen;                /* the process image it was sampled in */
	uint32_t flags;              /* STACK_TRUNCATED, STACK_BAD_READ */
	uint32_t nframes;
	struct py_frame *raw;        /* as the sampler sent them (NULL if built by hand) */
	__u64 *rawnat;               /* native frames as sent (NULL: none) */
	uint32_t nraw, nrawnat;
	struct pframe frames[];      /* leaf first: Python and native frames merged */
};

/* A kernel stack, leaf first; named by profile_name_kernel_stacks. */
struct kstack {
	uint32_t n;
	const uint64_t *ips;
	const char *names[];
};

struct psample {
	struct pstack *stack;
	struct kstack *kstack;       /* NULL: the sample was taken in user mode */
	uint32_t tid;
	uint64_t count;
};

struct pproc {
	int pid;
	char comm[PYPERF_COMM_LEN];
	char cmdline[256];
	struct pyproc py;            /* the current image, valid when `python` */
	bool python;
	uint32_t gen;                /* generation of the current image */
	uint64_t samples;
	struct hmap code;            /* (gen, code address, check) -> struct func * */
	struct hmap stacks;          /* (gen, stack hash) -> struct pstack * */
	void **owned;                /* its stacks and functions, freed with it */
	size_t nowned, capowned;
};

struct profile {
	struct hmap procs;           /* pid -> struct pproc * */
	struct hmap samples;         /* (struct pstack *, tid) -> struct psample * */
	struct hmap threads;         /* tid -> thread name (char[PYPERF_COMM_LEN]) */
	struct hmap kstacks;         /* kernel addresses -> struct kstack * */
	struct hmap knames;          /* kernel address -> its symbol name */
	uint64_t total;              /* samples counted */
	uint64_t unattributed;       /* counts whose stack was never announced */
	uint64_t unresolved_frames;  /* code objects that could not be read */
	struct native *nat;          /* names native frames (NULL: none were taken) */
};

void profile_init(struct profile *p);
void profile_free(struct profile *p);

/* The process entry for pid, created (comm and cmdline read) if new. */
struct pproc *profile_proc(struct profile *p, int pid);
/* Record a newly announced stack, naming its code objects now. */
int profile_add_stack(struct profile *p, const struct ev_stack *ev);
/* Record a stack whose frames are already named (leaf first); used by
 * profile_add_stack and by tests.  frames and raw (may be NULL) are copied.
 * A key already known is kept unless raw is given and differs: then the key
 * names the new stack from now on (its code objects were replaced). */
int profile_insert_stack(struct profile *p, uint32_t pid, uint32_t gen, uint64_t hash,
			 uint32_t flags, const struct pframe *frames, uint32_t n,
			 const struct py_frame *raw);
/* Add count samples of the stack the sampler keyed as k, taken with kernel
 * stack kips[0..nk) (leaf first; nk 0 for none). */
void profile_add_count(struct profile *p, const struct stack_key *k, uint64_t count,
		       const uint64_t *kips, unsigned nk);
/* pid is (now) the Python image py, generation gen. */
void profile_set_python(struct profile *p, int pid, const struct pyproc *py, uint32_t gen);

/* Name the kernel frames of every sample (reads /proc/kallsyms once); call
 * before writing.  Frames that cannot be named are "[unknown]". */
void profile_name_kernel_stacks(struct profile *p);
/* All (stack, thread) samples, in a stable order (caller frees the array). */
struct psample **profile_samples(const struct profile *p, size_t *n);
/* Remember thread tid's name (comm, up to PYPERF_COMM_LEN bytes). */
void profile_set_thread_name(struct profile *p, uint32_t tid, const char *comm);
/* Name of thread tid as the kernel knew it, or "?". */
const char *profile_thread_name(const struct profile *p, uint32_t tid);
/* Start a new interval (daemon): counts, samples, kernel stacks and thread
 * names go; processes, their stacks and names stay, so keys the sampler
 * announced earlier are still known. */
void profile_reset_counts(struct profile *p);
/* Free everything kept for pid (it exited).  -1 if it has samples (they
 * point at its stacks) or is unknown. */
int profile_forget_proc(struct profile *p, int pid);
/* Number of processes with at least one sample. */
size_t profile_nprocs_seen(const struct profile *p);

#endif
