/* unwind_step.h - one step of the native unwinder, defined once for the BPF
 * program (bpf/pyperf.bpf.c) and for `dump`'s walk in user space
 * (user/python/pywalk.c).
 *
 * Include it after defining UNWIND_READ(ctx, addr, dst): read the 8-byte
 * word at addr of the target's stack into *dst (a __u64), 0 on success.  The
 * rules are those of struct unwind_row (pyperf.h). */
#ifndef PYPERF_UNWIND_STEP_H
#define PYPERF_UNWIND_STEP_H

#include "pyperf.h"

#ifndef UNWIND_READ
#error "define UNWIND_READ(ctx, addr, dst) before including unwind_step.h"
#endif
#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif

enum unwind_step_result {
	UNWIND_STEPPED = 0,          /* g holds the caller's registers */
	UNWIND_END = 1,              /* the outermost frame: the stack is complete */
	UNWIND_STOP = 2,             /* the rule cannot be followed: the stack is cut */
};

/* From the frame at g->pc, whose row is r, to its caller: the CFA by the
 * row's rule, the caller's rbp where the row says it was saved, the return
 * address at CFA - 8. */
static __always_inline int unwind_cfi_step(void *ctx, const struct unwind_row *r,
					   struct unwind_regs *g)
{
	__u64 cfa, ra;

	switch (r->cfa_kind) {
	case CFA_END:
		return UNWIND_END;
	case CFA_RSP:
		cfa = g->sp + r->cfa_off;
		break;
	case CFA_RBP:
		if (!g->bp)
			return UNWIND_STOP;
		cfa = g->bp + r->cfa_off;
		break;
	case CFA_PLT:
		cfa = g->sp + 8 + ((g->pc & 15) >= (__u64)r->cfa_off ? 8 : 0);
		break;
	case CFA_RBP_DEREF:
		if (!g->bp || UNWIND_READ(ctx, g->bp - r->cfa_off, &cfa))
			return UNWIND_STOP;
		break;
	case CFA_RBX: /* only the leaf's rbx is known */
		if (!g->bx)
			return UNWIND_STOP;
		cfa = g->bx + r->cfa_off;
		break;
	default:
		return UNWIND_STOP;
	}
	/* the lower word first: a reader with a window then holds both */
	if (r->rbp_kind == RBP_AT_CFA) {
		if (UNWIND_READ(ctx, cfa + (__s64)r->rbp_off8 * 8, &g->bp))
			return UNWIND_STOP;
	} else if (r->rbp_kind == RBP_AT_RBP) {
		if (!g->bp || UNWIND_READ(ctx, g->bp + (__s64)r->rbp_off8 * 8, &g->bp))
			return UNWIND_STOP;
	} else if (r->rbp_kind == RBP_LOST) {
		g->bp = 0;
	}
	if (UNWIND_READ(ctx, cfa - 8, &ra))
		return UNWIND_STOP;
	g->sp = cfa;
	g->pc = ra;
	g->bx = 0;
	return UNWIND_STEPPED;
}

/* The same step for code without CFI (JIT code, perf trampolines without
 * their table): rbp is trusted to be a frame pointer. */
static __always_inline int unwind_fp_step(void *ctx, struct unwind_regs *g)
{
	__u64 cfa, ra;

	if (!g->bp || g->bp < g->sp)
		return UNWIND_STOP;
	cfa = g->bp + 16;
	if (UNWIND_READ(ctx, cfa - 16, &g->bp) || UNWIND_READ(ctx, cfa - 8, &ra))
		return UNWIND_STOP;
	g->sp = cfa;
	g->pc = ra;
	g->bx = 0;
	return UNWIND_STEPPED;
}

#endif
