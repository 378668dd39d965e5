// SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0-only)
/* native_unwind.bpf.h - the native half of the sampler's walk: unwind the
 * sampled thread's user stack from the CFI tables the loader built.  A part
 * of pyperf.bpf.c, included after its maps, its helpers and the Python walk
 * (one program, one compilation: the verifier sees it whole). */
#ifndef PYPERF_NATIVE_UNWIND_BPF_H
#define PYPERF_NATIVE_UNWIND_BPF_H

/* ---- unwinding the native user stack ----
 *
 * Without frame pointers: the loader turned each binary's CFI into rows
 * (pyperf.h, struct unwind_row).  Per frame: find the mapping holding pc
 * (binary search in the process's native_maps), then the row for pc in that
 * binary's table (binary search in its rows array), compute the CFA, read the
 * return address at CFA - 8 and, if the row says so, the caller's rbp.
 * Mappings without CFI (JIT code) are followed by frame pointers or left by
 * a scan of the stack (below). */

/* Binary searches keep their bounds in the scratch map through volatile
 * accesses: to the verifier they are then unknown numbers, and the states of
 * both branches of an iteration are the same, so it checks the loop body
 * once per iteration instead of once per path. */
#define VLOAD(x) (*(volatile __u32 *)&(x))
#define VSTORE(x, v) (*(volatile __u32 *)&(x) = (v))

/* Each binary search is a bpf_loop of its own, so the verifier checks one
 * step once rather than every unrolled iteration on every path to it;
 * without bpf_loop (loop.bpf.h), a bounded loop inside the native step's
 * chunk (27 steps at most). */
#ifdef PYPERF_NO_BPF_LOOP
#define SEARCH_LOOP(n, step, q)                                                 \
	({                                                                      \
		WALK_UNROLL                                                     \
		for (__u32 _i = 0; _i < (n); _i++)                              \
			if (step(_i, (q)))                                      \
				break;                                          \
	})
#else
#define SEARCH_LOOP(n, step, q) bpf_loop((n), step, (q), 0)
#endif
struct search {
	struct scratch *s;
	const void *base;        /* the native_maps, or a table's rows map */
	__u64 pc;
};

static long mapping_step(__u32 i, struct search *q)
{
	const struct native_maps *nm = q->base;
	struct scratch *s = q->s;
	__u32 lo = VLOAD(s->lo), hi = VLOAD(s->hi), mid;

	if (lo >= hi)
		return 1;
	mid = (lo + hi) / 2;
	if (nm->m[mid & (PYPERF_MAX_MAPPINGS - 1)].start <= q->pc)
		VSTORE(s->lo, mid + 1);
	else
		VSTORE(s->hi, mid);
	return 0;
}

/* 1 + the index of the mapping holding pc, or 0 */
VERIFIED_ONCE __u32 find_mapping(struct scratch *s, const struct native_maps *nm, __u64 pc)
{
	struct search q = { .s = s, .base = nm, .pc = pc };
	__u32 lo;

	if (!s || !nm)
		return 0;
	VSTORE(s->lo, 0);
	VSTORE(s->hi, nm->n > PYPERF_MAX_MAPPINGS ? PYPERF_MAX_MAPPINGS : nm->n);
	SEARCH_LOOP(10, mapping_step, &q); /* 2^10 > PYPERF_MAX_MAPPINGS */
	lo = VLOAD(s->lo);
	if (!lo || pc >= nm->m[(lo - 1) & (PYPERF_MAX_MAPPINGS - 1)].end)
		return 0;
	return lo;
}

static long row_step(__u32 i, struct search *q)
{
	struct scratch *s = q->s;
	const struct unwind_row *r;
	__u32 lo = VLOAD(s->lo), hi = VLOAD(s->hi), mid;

	if (lo >= hi)
		return 1;
	mid = lo + (hi - lo) / 2;
	r = bpf_map_lookup_elem((void *)q->base, &mid);
	if (!r) {
		VSTORE(s->lo, 0); /* cannot happen: the header's count is the size */
		VSTORE(s->hi, 0);
		return 1;
	}
	if (r->pc <= q->pc)
		VSTORE(s->lo, mid + 1);
	else
		VSTORE(s->hi, mid);
	return 0;
}

/* Into s->row, the row covering pc (an ELF address) in the rows [1, 1 +
 * nrows) of the table in slot: only among the rows of its page when the
 * table's page index covers it (bpf/pyperf.h).  1: found, and its rule can
 * be followed. */
VERIFIED_ONCE int find_row(struct scratch *s, __u32 slot, __u32 nrows, __u32 pc)
{
	struct search q = { .s = s, .pc = pc };
	const struct unwind_row *meta, *e0, *e1, *r;
	__u32 mid, k = 0, lo = 1, hi = 1 + nrows;
	void *rows;

	if (!s)
		return 0;
	rows = bpf_map_lookup_elem(&unwind_tables, &slot);
	if (!rows)
		return 0;
	q.base = rows;
	mid = 1 + nrows;
	meta = bpf_map_lookup_elem(rows, &mid);
	if (meta && unwind_index_page(meta, pc, &k)) {
		mid = unwind_index_elem(nrows, k);
		e0 = bpf_map_lookup_elem(rows, &mid);
		/* entries k and k + 1 share an element when k is even */
		e1 = e0;
		if (k & 1) {
			mid = unwind_index_elem(nrows, k + 1);
			e1 = bpf_map_lookup_elem(rows, &mid);
		}
		if (e0 && e1) {
			lo = ((const __u32 *)e0)[k & 1] + 1;
			hi = ((const __u32 *)e1)[(k + 1) & 1] + 1;
		}
	}
	VSTORE(s->lo, lo);
	VSTORE(s->hi, hi);
	SEARCH_LOOP(27, row_step, &q); /* 2^27 rows at most */
	mid = VLOAD(s->lo);
	if (mid <= 1)
		return 0;
	mid -= 1;
	r = bpf_map_lookup_elem(rows, &mid);
	if (!r || r->cfa_kind == CFA_NONE || r->cfa_kind == CFA_UNSUPPORTED)
		return 0;
	s->row = *r;
	return 1;
}

/* ask the loader for a table it has not loaded (yet), at most every 100 ms */
VERIFIED_ONCE int request_table(__u32 tgid, __u32 table)
{
	__u64 now = bpf_ktime_get_ns(), next = now + 100ULL * 1000 * 1000, *t;
	struct ev_table ev = { .kind = EV_TABLE, .pid = tgid, .table = table };

	t = bpf_map_lookup_elem(&table_req, &table);
	if (t && now < *t)
		return 0;
	bpf_map_update_elem(&table_req, &table, &next, BPF_ANY);
	bpf_ringbuf_output(&events, &ev, sizeof(ev), RB_WAKE);
	return 0;
}

/* ask the loader to read the process's mappings again, at most every
 * MAPS_REREAD_NS, and not for a pc in a page it backs off from.  Returns
 * true for such a page (a stray pc, known not to be mapped): else the pc
 * may be code mapped since the last read, and the mappings are pending. */
VERIFIED_ONCE int request_maps(__u32 tgid, __u64 pc)
{
	__u64 now = bpf_ktime_get_ns(), next = now + MAPS_REREAD_NS, *t;
	struct stray_key k = { .tgid = tgid, .page = pc >> 12 };
	struct ev_maps ev = { .kind = EV_MAPS, .pid = tgid, .pc = pc };

	t = bpf_map_lookup_elem(&stray_pcs, &k);
	if (t && now < *t)
		return 1;
	t = bpf_map_lookup_elem(&maps_req, &tgid);
	if (t && now < *t)
		return 0;
	bpf_map_update_elem(&maps_req, &tgid, &next, BPF_ANY);
	bpf_ringbuf_output(&events, &ev, sizeof(ev), RB_WAKE);
	return 0;
}

/* Mark the table of this frame's row used now, to the loader's turn
 * (table_used, table_clock: the loader evicts the coldest), once a sample
 * per table.  In the scratch map, not on
 * the stack: the verifier then sees the same state whether or not the store
 * was made.  Looked up and stored, not updated: the helper would want the
 * value on the stack, where s is plain memory (a global function's
 * argument) that older kernels' map helpers refuse (6.1's did). */
static __always_inline void table_touch(struct scratch *s, __u32 table)
{
	__u32 slot = TABLE_SLOT(table);
	__u64 *t;

	if (VLOAD(s->used) == table)
		return;
	VSTORE(s->used, table);
	t = bpf_map_lookup_elem(&table_used, &slot);
	if (t)
		*t = s->now;
}

/* Inline, as are stack_word and cfi_step below: each is called only from
 * functions verified once (native_frame and the other VERIFIED_ONCE ones),
 * so inlining costs the verifier little (8,300 -> 9,700 instructions), and
 * as calls, several a frame, they cost 0.45 us a sample at depth 25. */
static __always_inline void native_push(struct scratch *s, __u32 n, __u64 pc)
{
	if (VLOAD(s->scan_mark)) {
		VSTORE(s->scan_mark, 0);
		pc |= NATIVE_PC_SCANNED;
	}
	s->ev.native[MASKED(n, PYPERF_MAX_NATIVE - 1)] = pc;
	s->ev.nnative = n + 1;
	s->nw.hash = mix(s->nw.hash, pc);
}

/* A word of the user stack.  Callers' frames lie above (at higher
 * addresses), so one read of PYPERF_STACK_WINDOW bytes from the lowest word
 * a frame needs serves several frames. */
static __always_inline int stack_word(struct scratch *s, __u64 addr, __u64 *val)
{
	if (addr < s->stk_lo || addr + 8 > s->stk_hi) {
		if (bpf_probe_read_user(s->stk, PYPERF_STACK_WINDOW, (void *)addr)) {
			/* the window would run past the end of the stack */
			s->stk_lo = s->stk_hi = 0;
			return bpf_probe_read_user(val, sizeof(*val), (void *)addr);
		}
		s->stk_lo = addr;
		s->stk_hi = addr + PYPERF_STACK_WINDOW;
	}
	*val = *(__u64 *)(s->stk + ((addr - s->stk_lo) & (PYPERF_STACK_WINDOW - 1)));
	return 0;
}

/* the unwinder's step, shared with user space: it reads the stack through
 * the scratch map's window */
#define UNWIND_READ(ctx, addr, dst) stack_word((struct scratch *)(ctx), (addr), (dst))
#include "unwind_step.h"

/* the step by the row found (s->row) from s->nw.g */
static __always_inline int cfi_step(struct scratch *s)
{
	return unwind_cfi_step(s, &s->row, &s->nw.g);
}

/* ---- code without CFI ----
 *
 * JIT code (oneDNN's kernels, LLVM's as numba uses it, V8, CPython's own
 * JIT) has no CFI.  Its frame pointer is followed while the chain is
 * plausible: the caller's rbp above this one (or 0) and a return address in
 * a known mapping.  Code that uses rbp for data (oneDNN's xbyak kernels
 * do) fails that; then the stack is scanned, from the frame's sp up, for
 * the first word that is a return address into a binary with CFI: a
 * mapped file whose code before that address is a call instruction.  The
 * walk goes on from there with CFI, and that frame is marked. */

/* one length of an FF /2 call (k = i + 2), as a loop's step: the six,
 * unrolled, were 470 instructions for the verifier to follow */
static long call_len_step(__u32 i, struct walk_ctx *c)
{
	__u32 at = (6 - i) & 7; /* 8 - k, masked: the verifier sees its bound */

	if (unwind_call_at(c->s->code8 + at, 8 - at)) {
		c->s->code8[15] = 1; /* past the 8 bytes decoded: the answer */
		return 1;
	}
	return 0;
}
WALK_CHUNKS(call_len_step, 6, 0)

/* Is the instruction that ends at `ra` a call?  (unwind_step.h decodes) */
VERIFIED_ONCE int after_call(struct scratch *s, __u64 ra)
{
	struct walk_ctx c = { .s = s };
	__u8 *b;

	if (!s)
		return 0;
	b = s->code8;
	__builtin_memset(b, 0, sizeof(s->code8));
	if (ra < 8 || bpf_probe_read_user(b, 8, (void *)(ra - 8)))
		return false;
	if (unwind_call_rel32(b))
		return 1;
	WALK_LOOP(call_len_step, 6, 6, &c);
	return b[15];
}

/* one step of the frame-pointer chain, if it is plausible (the step is
 * tried in the scratch map: struct scratch says why) */
VERIFIED_ONCE int fp_step_plausible(struct scratch *s, const struct native_maps *nm)
{
	struct unwind_regs *g;

	if (!s)
		return 0;
	g = &s->fp_g;
	*g = s->nw.g;
	if (unwind_fp_step(s, g) != UNWIND_STEPPED || !unwind_fp_plausible(&s->nw.g, g) ||
	    !find_mapping(s, nm, g->pc))
		return 0;
	s->nw.g = *g;
	return 1;
}

/* Is the word at sp + 8 * i a return address into a binary with CFI?  1
 * (then scan_sp and scan_pc hold it), 0 no, -1 past the top of the stack.
 * The scan's bounds are nw.scan_lo and scan_hi. */
VERIFIED_ONCE int scan_word(struct scratch *s, const struct native_maps *nm, __u32 i)
{
	const struct native_mapping *m;
	__u64 addr, w;
	__u32 idx;

	if (!s || !nm)
		return -1;
	addr = s->nw.g.sp + (__u64)i * 8;
	if (stack_word(s, addr, &w))
		return -1;
	if (w < s->nw.scan_lo || w >= s->nw.scan_hi)
		return 0;
	idx = find_mapping(s, nm, w);
	if (!idx)
		return 0;
	m = &nm->m[(idx - 1) & (PYPERF_MAX_MAPPINGS - 1)];
	if (m->table == TABLE_NONE || !after_call(s, w))
		return 0;
	s->scan_sp = addr + 8;
	s->scan_pc = w;
	return 1;
}

static long scan_step(__u32 i, struct walk_ctx *c)
{
	return scan_word(c->s, c->nm, i) != 0;
}
WALK_CHUNKS(scan_step, 16, WALK_NEEDS_MAPS)

/* the words below a found return address, for the caller's rbp (k = i +
 * 2), as a loop's step: unrolled, with their reads of the stack, they were
 * 600 instructions for the verifier to follow */
static long scan_bp_step(__u32 i, struct walk_ctx *c)
{
	return unwind_scan_bp_word(c->s, &c->s->nw.g, i + 2);
}
WALK_CHUNKS(scan_bp_step, 6, 0)

/* Scan the stack for the caller of the frame at nw.g; on success nw.g is
 * that caller and its frame will be marked.  rbp is callee-saved: kept when
 * it points into the stack above, else taken from where the callee saved
 * it, if a word below the return address looks like it. */
static __always_inline bool scan_stack(struct walk_ctx *c)
{
	struct scratch *s = c->s;
	__u32 n = c->nm->n, words;
	__u64 block = s->nw.g.pc >> 4;
	struct scan_cache_entry *e = &s->scache[(block ^ (block >> 8)) & (SCAN_CACHE_SIZE - 1)];

	if (!n || n > PYPERF_MAX_MAPPINGS)
		return false;
	s->nw.scan_lo = c->nm->m[0].start;
	s->nw.scan_hi = c->nm->m[(n - 1) & (PYPERF_MAX_MAPPINGS - 1)].end;
	s->scan_pc = 0;
	if (!(e->block == block && e->tgid == c->tgid && e->gen == s->nw.gen &&
	      e->words < PYPERF_SCAN_WORDS && scan_word(s, c->nm, e->words) == 1)) {
		WALK_LOOP(scan_step, 16, PYPERF_SCAN_WORDS, c);
		if (!s->scan_pc)
			return false;
		words = (__u32)((s->scan_sp - 8 - s->nw.g.sp) / 8);
		e->block = block;
		e->tgid = c->tgid;
		e->gen = s->nw.gen;
		e->words = words;
	}
	s->nw.g.pc = s->scan_pc;
	s->nw.g.sp = s->scan_sp;
	s->nw.g.bx = 0;
	if (!unwind_scan_bp_kept(&s->nw.g))
		WALK_LOOP(scan_bp_step, 6, 6, c);
	VSTORE(s->scan_mark, 1);
	VSTORE(s->nflags, VLOAD(s->nflags) | STACK_NATIVE_SCANNED);
	return true;
}

/* a scan, its time counted */
static __always_inline bool timed_scan(struct walk_ctx *c)
{
	__u64 t0 = bpf_ktime_get_ns();
	bool found = scan_stack(c);

	sstat(c->s, STAT_SCAN_NS, bpf_ktime_get_ns() - t0);
	return found;
}

/* what follows a frame's push (scratch.then) */
#define THEN_CFI 0
#define THEN_FP 1
#define THEN_INCOMPLETE 2
#define THEN_STOP 3

/* One frame: push the pc at s->nw.g, find its caller; nonzero stops the
 * walk.  The loop's step calls it, so that the verifier checks a frame
 * once, not once for each state the loop's callback is entered with. */
VERIFIED_ONCE long native_frame(struct scratch *s, const struct native_maps *nm, __u32 tgid)
{
	__u32 n;
	const struct native_mapping *m;
	const struct unwind_row *hdr;
	struct row_cache_entry *rc;
	__u64 pc, look, shown;
	__u32 slot, idx, zero = 0;
	void *rows;

	if (!s || !nm)
		return 1;
	n = s->ev.nnative;
	pc = s->nw.g.pc;
	if (!pc)
		return 1; /* frame pointer chains end with 0 */
	if (n >= PYPERF_MAX_NATIVE) {
		VSTORE(s->nflags, VLOAD(s->nflags) | STACK_NATIVE_TRUNCATED);
		return 1;
	}
	/* Every way on pushes the frame, at one place (push:), and says in the
	 * scratch map what follows (s->then, not a variable, so that the
	 * verifier's states meet there and it checks the push once). */
	shown = pc;
	/* a return address points after its call, which may be a function's
	 * last instruction: look up the call itself */
	look = pc - (n ? 1 : 0);
	rc = &s->rcache[(look ^ (look >> 7)) & (ROW_CACHE_SIZE - 1)];
	if (rc->pc == look && rc->tgid == tgid && rc->gen == s->nw.gen) {
		s->row = rc->row;
		table_touch(s, rc->table);
		goto cfi;
	}
	/* consecutive frames often share a mapping; its index is kept in the
	 * scratch map, not the stack, so both ways on meet in one state */
	idx = VLOAD(s->last);
	m = &nm->m[(idx - 1) & (PYPERF_MAX_MAPPINGS - 1)];
	if (!idx || pc < m->start || pc >= m->end) {
		idx = find_mapping(s, nm, pc);
		VSTORE(s->last, idx);
		if (!idx) {
			/* code mapped after the loader last looked (dlopen, a new
			 * JIT or trampoline arena) is pending until it looks again;
			 * a pc it found unmapped is a stray: the stack is cut */
			VSTORE(s->nflags, VLOAD(s->nflags) | STACK_NATIVE_INCOMPLETE |
					     (request_maps(tgid, pc) ? 0 : STACK_NATIVE_PENDING));
			VSTORE(s->then, THEN_STOP);
			goto push;
		}
		m = &nm->m[(idx - 1) & (PYPERF_MAX_MAPPINGS - 1)];
	}
	if (m->table == TABLE_NONE)
		goto frame_pointers;
	slot = TABLE_SLOT(m->table);
	rows = bpf_map_lookup_elem(&unwind_tables, &slot);
	hdr = rows ? bpf_map_lookup_elem(rows, &zero) : NULL;
	if (!hdr || hdr->pc != m->table) {
		/* not loaded yet, or evicted: the loader builds it */
		request_table(tgid, m->table);
		VSTORE(s->nflags, VLOAD(s->nflags) | STACK_NATIVE_PENDING);
		goto incomplete;
	}
	table_touch(s, m->table);
	if (!hdr->nrows)
		goto frame_pointers;
	if (hdr->nrows == UNWIND_NO_TABLE)
		goto incomplete;
	sstat(s, STAT_ROW_SEARCHES, 1);
	if (!find_row(s, slot, hdr->nrows, (__u32)(look - m->bias)))
		goto incomplete;
	/* the leaf's key is its row: samples anywhere in that stretch of code
	 * share one stack (a return address is already stable), unless the
	 * mapping's lines are wanted (Cython) */
	rc->pc = look;
	rc->tgid = tgid;
	rc->gen = s->nw.gen;
	rc->row = s->row;
	rc->leaf = m->flags & NATIVE_MAP_EXACT_LEAF ? 0 : s->row.pc + m->bias;
	rc->table = m->table;
cfi:
	if (!n && rc->leaf)
		shown = rc->leaf;
	VSTORE(s->then, THEN_CFI);
	goto push;
frame_pointers:
	VSTORE(s->then, THEN_FP);
	goto push;
incomplete:
	VSTORE(s->then, THEN_INCOMPLETE);
push:
	native_push(s, n, shown);
	switch (VLOAD(s->then)) {
	case THEN_CFI:
		/* the row is in the scratch map, where the verifier does not
		 * track it */
		switch (cfi_step(s)) {
		case UNWIND_STEPPED:
			return 0;
		case UNWIND_END:
			return 1; /* the outermost frame: complete */
		}
		break;
	case THEN_FP:
		/* no CFI: rbp as a frame pointer, else a scan (above) */
		if (fp_step_plausible(s, nm))
			return 0;
		if (stack_scan) {
			/* unwind_native scans, between two runs of steps: a
			 * scan's own loop run from inside a step would add two
			 * more stacks to the chain of calls (bpf_loop's
			 * callbacks count as calls), which 6.1 refused at 544
			 * bytes */
			VSTORE(s->scan_wanted, 1);
			return 1;
		}
		break;
	case THEN_STOP:
		return 1;
	}
	VSTORE(s->nflags, VLOAD(s->nflags) | STACK_NATIVE_INCOMPLETE);
	return 1;
}
static long native_step(__u32 i, struct walk_ctx *c)
{
	return native_frame(c->s, c->nm, c->tgid) != 0;
}
WALK_CHUNKS(native_step, 8, WALK_NEEDS_MAPS)

/* The scan a step asked for (scan_wanted); 1: found, the walk goes on.  A
 * global function, so that its stack is not added to the steps' one. */
__noinline long scan_asked(__u32 tgid)
{
	struct walk_ctx c = {};

	if (!walk_ctx_of(&c, tgid, WALK_NEEDS_MAPS))
		return 0;
	c.gen = c.s->nw.gen;
	if (timed_scan(&c))
		return 1;
	VSTORE(c.s->nflags, VLOAD(c.s->nflags) | STACK_NATIVE_INCOMPLETE);
	return 0;
}

/* Runs of native steps, and the scans between them.  With bpf_loop a run
 * goes until the walk ends or a step asks for a scan, at most NATIVE_SCANS
 * scans a sample, and the runs are a bpf_loop of their own: written as a
 * loop of calls, the verifier walked its body once per pass (the counter
 * kept each pass's state apart), 800 of on_sample's instructions
 * processed.  Without, a run is a chunk of steps (loop.bpf.h), written with
 * the one back edge a conditional jump at the bottom (5.10's verifier
 * refuses a loop closed by falling through, and this one is too long to
 * unroll); there are twice the chunks the deepest stack needs, as a chunk
 * that ends in a scan leaves the rest of its steps unused. */
#define NATIVE_SCANS 32
#ifdef PYPERF_NO_BPF_LOOP
#define NATIVE_RUNS (2 * (PYPERF_MAX_NATIVE + 8))
#define NATIVE_LOOP(c)                                                          \
	({                                                                      \
		__u32 _j = 0;                                                   \
		bool _go = true;                                                \
                                                                                \
		do {                                                            \
			if (native_step_chunk(_j, (c)->tgid)) {                 \
				_go = VLOAD((c)->s->scan_wanted) &&             \
				      scan_asked((c)->tgid);                    \
				VSTORE((c)->s->scan_wanted, 0);                 \
			}                                                       \
			_j += 8;                                                \
		} while (_go && _j < NATIVE_RUNS);                              \
	})
#else
static long native_run(__u32 i, struct walk_ctx *c)
{
	bool go;

	bpf_loop(PYPERF_MAX_NATIVE + 1, native_step, c, 0);
	go = VLOAD(c->s->scan_wanted) && scan_asked(c->tgid);
	VSTORE(c->s->scan_wanted, 0);
	return !go;
}
#define NATIVE_LOOP(c) bpf_loop(NATIVE_SCANS + 1, native_run, (c), 0)
#endif

/* Unwind the user stack of the current task from the registers in the
 * CPU's scratch (regs0: user_regs_of) into its ev.native; returns the
 * STACK_NATIVE* flags and folds the frames into scratch.hash.  A global
 * function: the verifier checks it once, on its own, not once for every
 * state of the program that reaches it. */
__noinline __u32 unwind_native(__u32 tgid, __u32 gen)
{
	struct walk_ctx c = { .tgid = tgid };
	struct scratch *s;
	__u32 flags;

	if (!walk_ctx_of(&c, tgid, 0))
		return 0;
	s = c.s;
	s->ev.nnative = 0;
	c.nm = bpf_map_lookup_elem(&native_procs, &tgid);
	if (!c.nm) {
		/* the loader has not read this process's mappings (yet): the
		 * native part is missing, and the stack says so */
		request_maps(tgid, 0);
		sstat(s, STAT_NATIVE_INCOMPLETE, 1);
		sstat(s, STAT_NATIVE_PENDING, 1);
		return STACK_NATIVE | STACK_NATIVE_INCOMPLETE | STACK_NATIVE_PENDING;
	}
	if (!s->regs0.pc && !s->regs0.sp)
		return STACK_NATIVE | STACK_NATIVE_INCOMPLETE; /* no user registers */
	s->nw.g = s->regs0;
	s->nw.hash = s->hash;
	s->nw.gen = gen;
	s->nflags = STACK_NATIVE;
	s->scan_mark = 0;
	s->now = table_clock;
	s->used = 0;
	s->last = 0;
	s->stk_lo = s->stk_hi = 0;
	s->scan_wanted = 0;
	NATIVE_LOOP(&c);
	flags = s->nflags;
	sstat(s, STAT_NATIVE_INCOMPLETE, BIT_OF(flags, STACK_NATIVE_INCOMPLETE));
	sstat(s, STAT_NATIVE_TRUNCATED, BIT_OF(flags, STACK_NATIVE_TRUNCATED));
	sstat(s, STAT_NATIVE_PENDING, BIT_OF(flags, STACK_NATIVE_PENDING));
	sstat(s, STAT_NATIVE_SCANNED, BIT_OF(flags, STACK_NATIVE_SCANNED));
	s->hash = mix(s->nw.hash, s->ev.nnative);
	return flags;
}

#endif
