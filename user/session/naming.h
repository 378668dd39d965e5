/* naming.h - the step between the sampler and the profile: a stack as walked
 * (code object addresses, native return addresses, kernel addresses) becomes
 * a stack of named frames (struct func, frame.h).  Python code objects are
 * read from the live process (python/pyread.c), native addresses named from
 * their binaries (native/), the two merged into one stack (profile/merge.c);
 * kernel addresses by the kernel's own lookup (or /proc/kallsyms) as the
 * counts are drained.
 * The profile itself only aggregates what this step hands it. */
#ifndef PYPERF_NAMING_H
#define PYPERF_NAMING_H

#include <stdbool.h>
#include <stdint.h>

#include "hmap.h"
#include "pyperf.h"
#include "pyproc.h"

struct native;
struct profile;
struct pyasync;
struct sampler;

/* One stack of one thread as it was walked, leaf first. */
struct raw_stack {
	int pid, tid;
	uint32_t gen;                /* the process image it was taken in */
	uint64_t hash;               /* the sampler's key for it */
	uint32_t flags;              /* STACK_* */
	const char *thread_name;     /* up to PYPERF_COMM_LEN bytes */
	const struct py_frame *py;   /* the Python frames */
	uint32_t npy;
	const __u64 *native;         /* the native frames (see struct ev_stack) */
	uint32_t nnative;
	const __u64 *kernel;         /* an off-CPU stack's kernel frames (STACK_OFFCPU) */
	uint32_t nkernel;
	uint64_t task, task_name;    /* --async: the running task, its name object; 0: none */
	uint32_t anchor;             /* py[0..anchor) are the task's own frames */
};

struct naming {
	struct native *nat;          /* names native frames; NULL: none are taken */
	struct sampler *sampler;     /* what it saw of code objects freed since; NULL: none */
	struct hmap python;          /* pid -> its current CPython image (offsets, gen) */
	struct hmap exited;          /* pid -> its image, exited within the last
				      * NATIVE_EXITED_KEEP_NS (naming_exited) */
};

/* nat may be NULL (no native frames). */
void naming_init(struct naming *n, struct native *nat);
void naming_free(struct naming *n);
/* pid is (now) the CPython image py, generation gen: its code objects are read
 * with py's offsets, and the profile's process entry gets its new names. */
int naming_set_python(struct naming *n, struct profile *p, const struct pyproc *py, uint32_t gen);
/* pid is a forked copy of ppid's image gen (the sampler profiled it from its
 * birth as its parent): should pid be gone (or exec'ed) before its code
 * objects and native frames are named, they are named from ppid's memory
 * and mappings, which hold the same at the same addresses.  Its process
 * entry gets ppid's names if its own cannot be read.  Nothing is done
 * where ppid is not that image (any more); -1: out of memory. */
int naming_set_copy(struct naming *n, struct profile *p, int pid, int ppid, uint32_t gen);
bool naming_is_python(const struct naming *n, int pid);
/* the generation pid's current image was given, 0: none */
uint32_t naming_gen(const struct naming *n, int pid);
/* pid's image gen runs asyncio as a describes (copied): stacks that ran a
 * task are named as the task's frames under <task NAME> frames of the task
 * and of those awaiting it.  -1: out of memory. */
int naming_set_async(struct naming *n, int pid, uint32_t gen, const struct pyasync *a);
/* pid exited at now: its image is kept aside for NATIVE_EXITED_KEEP_NS, so
 * that a stack of it announced after its exit (sampled while its exit hook
 * ran, or in a thread that ran on into the exit) is still named from it,
 * native frames too (native_proc_exited); then naming_sweep_exited lets it
 * go. */
void naming_exited(struct naming *n, int pid, uint64_t now);
void naming_sweep_exited(struct naming *n, uint64_t now);
/* Name s and record it in p under (pid, gen, hash); a key already known with
 * the same raw frames is not named again.  -1: out of memory. */
int naming_add_stack(struct naming *n, struct profile *p, const struct raw_stack *s);
/* The raw stack of a sampler record. */
void naming_raw_of_event(const struct ev_stack *ev, struct raw_stack *out);
/* Name every kernel frame of p not named yet, with the kernel's own lookup
 * through sampler s (a few µs an address), or where that cannot run (s
 * NULL, an error) from /proc/kallsyms (~60 ms of system time a pass);
 * frames that cannot be named are "[unknown]".  Before writing p. */
void naming_name_kernel(struct profile *p, struct sampler *s);

/* Give thread tid of pid (a thread p knows) its Python name, read through
 * the thread state the sampler s found for it: its threading.Thread's name,
 * "MainThread" for the process's first thread.  Once a thread has one it is
 * looked up again only when `again` (before a profile is written: renamed
 * threads); one without is looked for at most once a second. */
void naming_python_thread(struct naming *n, struct profile *p, struct sampler *s, int pid,
			  uint32_t tid, bool again);
/* The same for every thread p knows. */
void naming_python_threads(struct naming *n, struct profile *p, struct sampler *s);

#endif
