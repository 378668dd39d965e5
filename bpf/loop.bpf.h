// SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0-only)
/* loop.bpf.h - the walks' loops, on kernels with bpf_loop and without.
 *
 * Every long walk (thread states, Python frames, their code objects, native
 * frames, a scan of the stack) is a step function `long step(__u32 i,
 * struct walk_ctx *c)` that returns nonzero to stop, run by WALK_LOOP up to
 * n times.  The walk's own state lives in the CPU's scratch map (struct
 * scratch), never on the stack, so a step needs nothing but a walk_ctx.
 *
 * From Linux 5.17 WALK_LOOP is bpf_loop: the verifier checks the step once.
 * Before (Debian 11's 5.10, Amazon Linux 2's, RHEL 8's 4.18 backports),
 * the same source is built a second time with PYPERF_NO_BPF_LOOP
 * (build/pyperf_compat.bpf.o) and the loader picks that object when a probe
 * of the kernel finds no bpf_loop (sampler.c).  There each walk is a
 * bounded loop of calls to a global function, STEP_chunk, that runs CHUNK
 * steps: a global function is verified once whoever calls it, so the
 * verifier's work is CHUNK steps plus n / CHUNK calls, not n steps; and
 * each call finds the scratch and the process's maps again, as a global
 * function takes only numbers.  Same depths, same output. */
#ifndef PYPERF_LOOP_BPF_H
#define PYPERF_LOOP_BPF_H

/* What a step may need besides the scratch (WALK_NEEDS_*). */
#define WALK_NEEDS_PROC 1      /* c->p, c->o: the process's procs entry */
#define WALK_NEEDS_MAPS 2      /* c->nm: its executable mappings */

struct walk_ctx {
	struct scratch *s;
	struct proc_info *p;
	const struct py_offsets *o;
	const struct native_maps *nm;
	__u32 tgid, gen;
};

/* Fill c for the current CPU and process tgid; false: something is gone
 * (the process exited or exec'ed since the walk began). */
static __always_inline bool walk_ctx_of(struct walk_ctx *c, __u32 tgid, __u32 needs)
{
	__u32 cpu = bpf_get_smp_processor_id();

	c->s = bpf_map_lookup_elem(&scratch_map, &cpu);
	if (!c->s)
		return false;
	c->tgid = tgid;
	if (needs & WALK_NEEDS_PROC) {
		c->p = bpf_map_lookup_elem(&procs, &tgid);
		if (!c->p)
			return false;
		c->o = &c->p->off;
		c->gen = c->p->gen;
	}
	if (needs & WALK_NEEDS_MAPS) {
		c->nm = bpf_map_lookup_elem(&native_procs, &tgid);
		if (!c->nm)
			return false;
	}
	return true;
}

/* VERIFIED_ONCE: a function called in many places, or from a loop's step,
 * is a global function where the kernel takes pointers to such (5.12): the
 * verifier checks it once, on its own, rather than inlined at every call
 * on every path of every state a callback is entered with (that was 150,000
 * instructions processed for a program of 4,400, and most of a recording's
 * start-up).  To the verifier a global function's pointer arguments may be
 * NULL, and what they point to is plain memory of the pointed type's size
 * (no pointers in it): each checks, and looks its maps up itself.  Before
 * 5.12 (the bounded-loop object) they stay inline. */
#ifdef PYPERF_NO_BPF_LOOP
#define VERIFIED_ONCE static __always_inline
#else
#define VERIFIED_ONCE __noinline
#endif

#ifdef PYPERF_NO_BPF_LOOP
/* Loops here are unrolled by the compiler: 5.10's verifier takes a loop
 * only when its back edge is a jump, and clang may close one by falling
 * through into a block above ("back-edge from insn ..."); unrolled, there
 * is no back edge at all. */
#define WALK_UNROLL _Pragma("unroll")

/* STEP_chunk(i0, tgid): steps i0 .. i0 + chunk - 1 of STEP; 1 when the walk
 * is over (a step stopped it, or its maps are gone), else 0. */
#define WALK_CHUNKS(step, chunk, needs)                                         \
	__noinline long step##_chunk(__u32 i0, __u32 tgid)                      \
	{                                                                       \
		struct walk_ctx c = {};                                         \
                                                                                \
		if (!walk_ctx_of(&c, tgid, (needs)))                            \
			return 1;                                               \
		WALK_UNROLL                                                     \
		for (__u32 k = 0; k < (chunk); k++)                             \
			if (step(i0 + k, &c))                                   \
				return 1;                                       \
		return 0;                                                       \
	}
#define WALK_LOOP(step, chunk, n, c)                                            \
	({                                                                      \
		WALK_UNROLL                                                     \
		for (__u32 _j = 0; _j < (n); _j += (chunk))                     \
			if (step##_chunk(_j, (c)->tgid))                        \
				break;                                          \
	})
#else
#define WALK_CHUNKS(step, chunk, needs)
#define WALK_LOOP(step, chunk, n, c) bpf_loop((n), step, (c), 0)
#endif

#endif
