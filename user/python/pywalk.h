/* pywalk.h - the sampler's Python walk, done from user space.
 *
 * `dump` needs the stacks of threads that are not running, which the perf
 * event program never sees.  These functions read the target's memory with
 * process_vm_readv and produce exactly what the BPF walk (pyperf.bpf.c)
 * produces: py_frame records, leaf first, with the same PY_FRAME_ENTRY marks
 * and code checks, and native return addresses unwound with the same rows.
 * So the loader names and merges them with the code it uses for samples. */
#ifndef PYPERF_PYWALK_H
#define PYPERF_PYWALK_H

#include <stddef.h>
#include <stdint.h>
#include "pyperf.h"
#include "pyproc.h"

/* Every PyThreadState, in list order, and the id of its interpreter (ids
 * NULL: not wanted): of every interpreter, newest first, where the version
 * links them (3.12+: subinterpreters), else of the newest; returns how many
 * (at most cap), or -1 when the interpreter state cannot be read. */
int pywalk_threads(const struct pyproc *py, uint64_t *tstates, uint64_t *ids, size_t cap);
/* pthread id (FS base) of the thread that owns tstate, 0 if unreadable. */
uint64_t pywalk_thread_id(const struct pyproc *py, uint64_t tstate);
/* The kernel thread id of each of tstates[0..n) into tids (0: not found),
 * among the process's threads known[0..nknown): from 3.11 the state's
 * native_thread_id (just after thread_id), before that the tid the C
 * library keeps in the thread's descriptor (pthread_self, thread_id), at
 * the offset where every state's descriptor holds one of known (glibc's
 * 0x2d0 first; a scan otherwise).  Returns how many were found. */
int pywalk_thread_tids(const struct pyproc *py, const uint64_t *tstates, uint32_t n,
		       const uint32_t *known, uint32_t nknown, uint32_t *tids);
/* Does tstate hold its interpreter's GIL (locked, and tstate its last
 * holder; true when the layout has no GIL's place)?  Does the cyclic
 * collector run on it (the interpreter's collecting flag set, and tstate
 * the GIL's holder)?  As the sampler's holds_gil and runs_gc decide. */
bool pywalk_holds_gil(const struct pyproc *py, uint64_t tstate);
bool pywalk_runs_gc(const struct pyproc *py, uint64_t tstate);
/* py_code_check() of the code object at code, as the sampler takes it; 0
 * if unreadable. */
uint32_t pywalk_code_check(const struct pyproc *py, uint64_t code);
/* The same, given the process and its offsets. */
uint32_t pywalk_code_check_at(int pid, const struct py_offsets *o, uint64_t code);
/* The Python frames of tstate, leaf first, into out[0..cap) and, addrs not
 * NULL, the address of each frame into addrs[0..cap); returns how many, and
 * STACK_TRUNCATED / STACK_BAD_READ in *flags. */
uint32_t pywalk_frames(const struct pyproc *py, uint64_t tstate, struct py_frame *out,
		       uint64_t *addrs, uint32_t cap, uint32_t *flags);
/* The same for a thread with a state in each of n interpreters (tstates,
 * ids: innermost first, as pywalk_threads lists them): each one's frames in
 * turn, a subinterpreter's closed by its PY_INTERP_MARK as the sampler
 * writes it (addrs 0 there). */
uint32_t pywalk_frames_nested(const struct pyproc *py, const uint64_t *tstates,
			      const uint64_t *ids, uint32_t n, struct py_frame *out,
			      uint64_t *addrs, uint32_t cap, uint32_t *flags);

/* The unwind table a mapping names (native_mapping.table), header first as
 * the sampler sees it (pyperf.h), or NULL when it is not loaded. */
typedef const struct unwind_row *(*pywalk_table_fn)(void *ctx, uint32_t table);

/* Unwind pid's user stack from regs (struct unwind_regs, pyperf.h; rbx for
 * the leaf's CFA_RBX) with the process's mappings nm and the
 * tables they name, leaf first into pcs[0..cap): the leaf pc, then return
 * addresses.  Returns how many; *flags gets STACK_NATIVE and
 * STACK_NATIVE_TRUNCATED / STACK_NATIVE_INCOMPLETE as the sampler sets them. */
uint32_t pywalk_native(int pid, const struct native_maps *nm, pywalk_table_fn tables, void *ctx,
		       struct unwind_regs regs, __u64 *pcs, uint32_t cap, uint32_t *flags);

#endif
