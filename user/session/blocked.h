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
 * (sampler_block_in_flight). */
#ifndef PYPERF_BLOCKED_H
#define PYPERF_BLOCKED_H

#include <stdbool.h>
#include <stdint.h>

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
};

/* Walk the threads of py (generation gen, just given to the sampler) that
 * are asleep now (states S and D); returns how many were taken. */
int blocked_walk(struct blocked *b, struct sampler *s, struct naming *names, struct profile *prof,
		 const struct pyproc *py, uint32_t gen);
void blocked_free(struct blocked *b);

#endif
