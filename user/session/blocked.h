/* blocked.h - --mode wall|offcpu: the threads of a process that were
 * already off the CPU when it came to be profiled.
 *
 * The sampler walks a block when the thread leaves the CPU; a thread that
 * left it before its process was profiled (before an attach, or a child
 * that blocked before the loader classified it) has no block walked until
 * it runs again, perhaps never in the recording.  Such threads are walked
 * here once, from user space, when the process is adopted: their Python
 * frames as the sampler reads them, the native leaf where the system call
 * was made (/proc's syscall file: its stack pointer and pc; no registers to
 * unwind further without stopping the thread, so the native part is marked
 * incomplete), and the kernel function they wait in (/proc's wchan).  The
 * block then counts from the adoption on, as a walked one would
 * (sampler_block_in_flight).
 *
 * In two steps, so that the loader's pace cannot lose time: the moment the
 * sampler can see a process's threads leave the CPU (its programs attached,
 * the process given to it), blocked_claim puts a block in flight for each
 * thread it has no slot for yet: one listing of the threads and writes
 * into the sampler's mapped table, microseconds.  A thread asleep then has
 * its wake counted by the sampler however late the loader looks.  Then
 * blocked_walk looks at each (/proc, its frames; 50 ms and more with the
 * kernel's symbols): a thread asleep, or whose block ended meanwhile, is
 * walked and named; a running one's block is dropped uncounted (the
 * sampler walks its next one). */
#ifndef PYPERF_BLOCKED_H
#define PYPERF_BLOCKED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pyperf.h"

struct sampler;
struct naming;
struct profile;
struct pyproc;

struct blocked {
	bool native, kernel;         /* walk the native leaf, the kernel function */
	bool gil_only;               /* --gil: only a thread that holds its GIL, as the sampler */
	uint64_t seq;                /* stacks announced so far (each key its own) */
	/* kernel function names looked up in /proc/kallsyms, and their
	 * addresses (0: not a text symbol) */
	char *knames[64];
	uint64_t kaddrs[64];
	unsigned nk;
	/* blocks blocked_claim put in flight, not looked at yet */
	struct stack_key *claims;
	size_t nclaims, cap;
};

/* Process pid (generation gen) can be seen by the sampler from now on: a
 * block in flight from now for each of its threads the sampler has no slot
 * for.  Returns how many; -1 out of memory. */
int blocked_claim(struct blocked *b, struct sampler *s, int pid, uint32_t gen);
/* Look at the blocks claimed for py (generation gen): the threads asleep
 * now (states S and D), or whose block ended meanwhile, are walked and
 * named; returns how many. */
int blocked_walk(struct blocked *b, struct sampler *s, struct naming *names, struct profile *prof,
		 const struct pyproc *py, uint32_t gen);
/* pid was not taken after all: its claimed blocks dropped uncounted */
void blocked_forget(struct blocked *b, struct sampler *s, int pid);
void blocked_free(struct blocked *b);

#endif
