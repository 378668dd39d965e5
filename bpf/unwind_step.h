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
#ifdef __bpf__
#define UNWIND_UNROLL _Pragma("unroll")
#else
#define UNWIND_UNROLL
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

/* ---- leaving code without CFI (see native_unwind.bpf.h) ---- */

#define UNWIND_FP_FRAME_MAX (1ULL << 20) /* a caller's frame pointer this far up at most */

/* Is a step of the frame-pointer chain, from `from` to `to`, plausible?
 * The caller's rbp above this one (or 0) and not too far. (That the return
 * address is mapped is the caller's to check.) */
static __always_inline int unwind_fp_plausible(const struct unwind_regs *from,
					       const struct unwind_regs *to)
{
	return !to->bp || (to->bp > from->bp && to->bp - from->bp <= UNWIND_FP_FRAME_MAX);
}

/* Is op[0..k-1] an FF /2 (call through a register or memory) of k bytes,
 * its ModRM, SIB and displacement included?  op[1], op[2] must be
 * readable (zero past the code read). */
static __always_inline int unwind_call_at(const __u8 *op, __u32 k)
{
	__u8 modrm = op[1], mod = modrm >> 6, rm = modrm & 7;
	__u32 len = 2;

	if (op[0] != 0xff || ((modrm >> 3) & 7) != 2)
		return 0;
	if (mod != 3 && rm == 4) {
		len++;
		if (mod == 0 && (op[2] & 7) == 5)
			len += 4;
	}
	if (mod == 1)
		len += 1;
	else if (mod == 2 || (mod == 0 && rm == 5))
		len += 4;
	return len == k;
}

/* Is the instruction that ends where b[8] would be an E8 rel32 call?  (b as
 * unwind_code_is_call's) */
static __always_inline int unwind_call_rel32(const __u8 *b)
{
	return b[3] == 0xe8;
}

/* Is the instruction that ends where b[8] would be a call?  b[0..7] are the
 * 8 bytes before a return address, b[8..15] zero.  E8 rel32, or FF /2 in
 * any of its ModRM forms (register, memory, SIB, disp8, disp32, rip).  (The
 * BPF program runs unwind_call_at as a loop's step, checked once.) */
static __always_inline int unwind_code_is_call(const __u8 *b)
{
	if (unwind_call_rel32(b))
		return 1;
	/* FF, its ModRM (and SIB, displacement) ending at the address: k bytes */
UNWIND_UNROLL
	for (__u32 k = 2; k <= 7; k++)
		if (unwind_call_at(b + 8 - k, k))
			return 1;
	return 0;
}

/* After a scan found a caller (g->pc, g->sp just above its return
 * address): rbp is callee-saved, so it is kept when it points into the
 * stack above (unwind_scan_bp_kept); else the callee used it for data, and
 * its prologue pushed the caller's right below the return address: the
 * first of the words k = 2..7 below (unwind_scan_bp_word, nonzero to stop)
 * that points into the stack above is taken. */
static __always_inline int unwind_scan_bp_kept(const struct unwind_regs *g)
{
	return g->bp > g->sp && g->bp - g->sp <= UNWIND_FP_FRAME_MAX;
}

static __always_inline int unwind_scan_bp_word(void *ctx, struct unwind_regs *g, __u32 k)
{
	__u64 w;

	if (UNWIND_READ(ctx, g->sp - 8 * k, &w))
		return 1;
	if (w > g->sp && w - g->sp <= UNWIND_FP_FRAME_MAX) {
		g->bp = w;
		return 1;
	}
	return 0;
}

static __always_inline void unwind_scan_bp(void *ctx, struct unwind_regs *g)
{
	if (unwind_scan_bp_kept(g))
		return;
UNWIND_UNROLL
	for (__u32 k = 2; k <= 7; k++)
		if (unwind_scan_bp_word(ctx, g, k))
			break;
}

#endif
