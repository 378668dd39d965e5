/* py_state.h - two questions about a Python thread state, answered the same
 * way by the BPF program (bpf/pyperf.bpf.c: --gil, <GC> frames) and by user
 * space (user/python/pywalk.c: dump, the walk of threads already blocked):
 * does it hold its interpreter's GIL, and does the cyclic collector run on
 * it.  The offsets say where the GIL and the collector's flag live (the
 * runtime up to 3.8 or 3.11, the thread's own interpreter after;
 * GIL_UNKNOWN: nowhere known).
 *
 * Include it after defining PY_STATE_READ(ctx, addr, dst, size): read size
 * bytes of the target at addr into dst, 0 on success. */
#ifndef PYPERF_PY_STATE_H
#define PYPERF_PY_STATE_H

#include "pyperf.h"

#ifndef PY_STATE_READ
#error "define PY_STATE_READ(ctx, addr, dst, size) before including py_state.h"
#endif
#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif

/* the word at addr, 0 if unreadable */
static __always_inline __u64 py_state_word(void *ctx, __u64 addr)
{
	__u64 v = 0;

	return PY_STATE_READ(ctx, addr, &v, sizeof(v)) ? 0 : v;
}

/* Does tstate hold its interpreter's GIL?  (the GIL is locked and tstate
 * was its last holder; a layout without the GIL's place says yes, so that
 * --gil keeps every sample there).  From 3.12 each interpreter has a GIL
 * of its own, which a subinterpreter made with its own GIL (every API's
 * default) uses; one made to share the main interpreter's (a legacy
 * configuration) never takes its own, which then has had no holder. */
static __always_inline bool py_holds_gil(void *ctx, const struct py_offsets *o, __u64 runtime,
					 __u64 tstate)
{
	__u64 gil, interp;
	__u32 locked = 0;

	if (o->gil_in == GIL_IN_RUNTIME) {
		gil = runtime + o->gil_state;
	} else if (o->gil_in == GIL_IN_INTERP) {
		interp = tstate ? py_state_word(ctx, tstate + PY_TSTATE_INTERP) : 0;
		if (!interp)
			return false;
		gil = interp + o->gil_state;
		if (!py_state_word(ctx, gil + o->gil_holder))
			gil = py_state_word(ctx, runtime + o->runtime_interp_head +
							 PY_RUNTIME_MAIN_AFTER_HEAD) +
			      o->gil_state;
	} else {
		return true;
	}
	if (!tstate || PY_STATE_READ(ctx, gil + o->gil_locked, &locked, sizeof(locked)))
		return false;
	return locked && py_state_word(ctx, gil + o->gil_holder) == tstate;
}

/* Is the cyclic garbage collector running on this thread?  Its flag is the
 * thread's interpreter's (or, in 3.8, the runtime's), so of the threads
 * that run while it is set the one holding the GIL is the collector's; the
 * flag is read first, since it is almost always clear. */
static __always_inline bool py_runs_gc(void *ctx, const struct py_offsets *o, __u64 runtime,
				       __u64 tstate)
{
	__u64 base;
	__s32 collecting = 0;

	if (o->gc_in == GIL_IN_RUNTIME)
		base = runtime;
	else if (o->gc_in == GIL_IN_INTERP)
		base = tstate ? py_state_word(ctx, tstate + PY_TSTATE_INTERP) : 0;
	else
		return false;
	if (!base || PY_STATE_READ(ctx, base + o->gc_collecting, &collecting, sizeof(collecting)) ||
	    !collecting)
		return false;
	return py_holds_gil(ctx, o, runtime, tstate);
}

#endif
