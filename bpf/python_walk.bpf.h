// SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0-only)
/* python_walk.bpf.h - the Python half of the sampler's walk: find the
 * sampled thread's PyThreadState, then walk its frame chain, keeping (code
 * object, instruction offset, first line) per frame.  A part of
 * pyperf.bpf.c, included after its maps and helpers (one program, one
 * compilation: the verifier sees it whole). */
#ifndef PYPERF_PYTHON_WALK_BPF_H
#define PYPERF_PYTHON_WALK_BPF_H

/* ---- finding the thread's PyThreadState ---- */

/* The first TS_WINDOW bytes of the thread state found are read at once, as
 * its thread id is checked (find_tstate): its interpreter and its frame
 * (or cframe) lie there in every version, and are taken from that copy.
 * size: 4 or 8 (what py_state.h and top_frame read). */
static __always_inline long ts_read(struct scratch *s, __u64 addr, void *dst, __u32 size)
{
	__u32 off;

	if (s && s->ts_at && addr >= s->ts_at && addr + size <= s->ts_at + TS_WINDOW) {
		off = (__u32)(addr - s->ts_at) & (TS_WINDOW - 1);
		if (size == 8)
			*(__u64 *)dst = *(const __u64 *)(s->tsw + off);
		else
			*(__u32 *)dst = *(const __u32 *)(s->tsw + off);
		return 0;
	}
	return bpf_probe_read_user(dst, size, (void *)addr);
}

/* Is thread state tstate (whose head ts_fill read) active: its thread's
 * current state, holding the GIL (PY_TSTATE_ACTIVE)?  false where the
 * layout does not say. */
static __always_inline bool ts_active(struct scratch *s, __u64 tstate, const struct py_offsets *o)
{
	__u32 status = 0;

	if (o->tstate_status == PYPERF_NO_OFFSET)
		return false;
	ts_read(s, tstate + o->tstate_status, &status, sizeof(status));
	return status & PY_TSTATE_ACTIVE;
}

/* Read the head of thread state tstate into the scratch; its thread id, or
 * 0 if unreadable. */
static __always_inline __u64 ts_fill(struct scratch *s, __u64 tstate, __u16 id_off)
{
	s->ts_at = 0;
	if (id_off > TS_WINDOW - 8 || bpf_probe_read_user(s->tsw, TS_WINDOW, (void *)tstate))
		return read_ptr(tstate + id_off);
	s->ts_at = tstate;
	return *(const __u64 *)(s->tsw + (id_off & (TS_WINDOW - 1)));
}

/* the walk of the interpreter's thread states: struct thread_walk, in the
 * scratch map */
static long thread_step(__u32 i, struct walk_ctx *c)
{
	struct thread_walk *w = &c->s->tw;
	__u32 k;

	if (!w->tstate) {
		/* every interpreter: on to the next one's threads */
		if (!w->interp)
			return 1;
		w->interp = read_ptr(w->interp + w->interp_next);
		if (!w->interp)
			return 1;
		w->tstate = read_ptr(w->interp + w->interp_threads);
		return 0;
	}
	if (read_ptr(w->tstate + w->id_off) == w->want) {
		if (!w->interp) {
			w->found = w->tstate;
			return 1;
		}
		/* one state per interpreter: keep it, on to the next one */
		k = w->nfound;
		if (k < PYPERF_MAX_NEST) {
			w->all[k] = w->tstate;
			w->ids[k] = read_ptr(w->interp + w->interp_id);
			w->nfound = k + 1;
		}
		if (!w->found)
			w->found = w->tstate;
		w->tstate = 0;
		return 0;
	}
	w->tstate = read_ptr(w->tstate + w->next_off);
	return 0;
}
WALK_CHUNKS(thread_step, 32, 0)

/* The current task, and its FS base (a thread's pthread id): from the
 * task's BTF pointer where the kernel gives one (5.11), else read. */
static __always_inline __u64 current_fsbase(void)
{
#ifdef PYPERF_NO_BPF_LOOP
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();

	return BPF_CORE_READ(task, thread.fsbase);
#else
	return bpf_get_current_task_btf()->thread.fsbase;
#endif
}

/* Is the current task a user process (kernel threads have no mm)?  Read,
 * not through the task's BTF pointer: the verifier looks each pointer field
 * loaded through one up by name among all the kernel's types (is it
 * trusted?), a linear search per path that cost ~0.8 ms of every start. */
static __always_inline bool current_has_mm(void)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();

	return BPF_CORE_READ(task, mm) != NULL;
}

/* find_tstate's way when the cached state does not hold as it is: the
 * interpreters' head read, then the cache's say, else the list walked.
 * tc: the thread's cache entry (all 0 without one); ids: tgid << 32 | tid;
 * hit: tc's state is the thread's (but not active).  A function of its
 * own, verified once: find_tstate comes here in several states, and the
 * thread loop's step was checked once for each.  For the same reason the
 * tests of tc read it each time (the verifier then has no known flag that
 * keeps one way apart from another), and with no interpreter (interp 0)
 * its words are read anyway, from below the lowest page a process may map:
 * the read fails, and gives 0. */
VERIFIED_ONCE __u64 find_tstate_slow(struct scratch *s, const struct proc_info *p,
				     const struct tstate_cache *tc, __u64 ids, __u32 hit)
{
	__u32 tgid = ids >> 32, tid = (__u32)ids;
	struct walk_ctx c = { .s = s, .tgid = tgid };
	struct tstate_cache *fresh, entry;
	const struct py_offsets *o;
	struct thread_walk *w;
	__u64 interp, now, head;
	bool multi;

	if (!s || !p || !tc)
		return 0;
	o = &p->off;
	w = &s->tw;
	fresh = &w->fresh;
	sstat(s, STAT_INTERP_HEAD_READS, 1);
	interp = read_ptr(p->runtime_addr + o->runtime_interp_head);
	if (hit && tc->interps == interp)
		return tc->tstate; /* not active (the GIL released): two reads */
	s->ts_at = 0;
	now = bpf_ktime_get_ns();
	/* none found last time */
	if (tc->tgid == tgid && !tc->tstate && now - tc->stamp_ns < NO_TSTATE_RETRY_NS)
		return 0;
	head = read_ptr(interp + o->interp_threads_head);
	multi = o->interp_next != PYPERF_NO_OFFSET && read_ptr(interp + o->interp_next);
	if (!head && !multi)
		return 0; /* interpreter not (yet) running: nothing worth caching */
	/* A thread without a state, walked for twice already, is walked for
	 * again when a thread state is new (CPython puts new ones at the head
	 * of the list: a thread that starts, or a native one that takes the
	 * GIL), else at most every NO_TSTATE_RECHECK_NS: a pool of native
	 * threads would walk the list at most samples otherwise.  The second
	 * walk comes NO_TSTATE_RETRY_NS after the first whatever the head, for
	 * a Python thread sampled before it bound its state to its thread.
	 * From 3.12 a state goes to the head before it is bound (its thread
	 * id 0): a native thread's own new state, while PyGILState_Ensure
	 * makes it, is not yet its own.  Such a head is not taken as seen
	 * (it would hide the state, bound a moment later, for a second, and
	 * did under load): walked again NO_TSTATE_RETRY_NS on. */
	if (tc->tgid == tgid && !tc->tstate && tc->head == head &&
	    now - tc->stamp_ns < NO_TSTATE_RECHECK_NS)
		return 0;
	fresh->head = 0;
	if (tc->tgid == tgid && !tc->tstate && head && read_ptr(head + o->tstate_thread_id))
		fresh->head = head;
	fresh->tgid = tgid;
	fresh->interps = interp;
	fresh->multi = multi;
	w->tstate = head;
	w->want = current_fsbase();
	w->next_off = o->tstate_next;
	w->id_off = o->tstate_thread_id;
	w->found = 0;
	w->interp = multi ? interp : 0;
	w->interp_next = o->interp_next;
	w->interp_threads = o->interp_threads_head;
	w->interp_id = o->interp_id;
	WALK_LOOP(thread_step, 32, PYPERF_MAX_THREADS, &c);
	/* with several interpreters the cache is for the loader alone (the
	 * walk looks again every time): the outermost state, whose bottom
	 * frame is the thread's own (its Python name) */
	fresh->tstate = w->found;
	if (w->nfound > 1 && w->nfound <= PYPERF_MAX_NEST)
		fresh->tstate = w->all[(w->nfound - 1) & (PYPERF_MAX_NEST - 1)];
	fresh->stamp_ns = now;
	/* from the stack: 6.1's verifier takes a map's value only from there
	 * or from another map's value, and s is plain memory here */
	entry = *fresh;
	bpf_map_update_elem(&tcache, &tid, &entry, BPF_ANY);
	return w->found;
}

static __always_inline __u64 find_tstate(struct walk_ctx *c, __u32 tgid, __u32 tid)
{
	const struct py_offsets *o = c->o;
	__u64 fsbase = current_fsbase();
	struct tstate_cache *tc = bpf_map_lookup_elem(&tcache, &tid);
	bool hit;

	c->s->tw.nfound = 0;
	/* 3.12+: the interpreters' list head.  A state cached with one
	 * interpreter holds while it is active or the head is the same (a new
	 * interpreter goes to the head, and a thread that enters it leaves
	 * its state inactive); with several, each of the thread's states is
	 * looked for every time, as threads enter and leave them. */
	hit = tc && tc->tgid == tgid && tc->tstate && !tc->multi &&
	      ts_fill(c->s, tc->tstate, o->tstate_thread_id) == fsbase;
	/* the common case: one map lookup, one read.  From 3.12 a state that
	 * is active is its thread's current one, in whatever interpreter: it
	 * holds without a look at the list's head, a word of _PyRuntime that
	 * is seldom in the CPU's cache (its read was ~85 ns of a ~2,000 ns
	 * --python-only sample) */
	if (hit && (o->interp_next == PYPERF_NO_OFFSET || ts_active(c->s, tc->tstate, o)))
		return tc->tstate;
	return find_tstate_slow(c->s, c->p, tc ? tc : &c->s->no_tc, (__u64)tgid << 32 | tid, hit);
}

/* ---- walking the frames ---- */

static __always_inline __u64 mix(__u64 h, __u64 v)
{
	h ^= v;
	h *= 0x9e3779b97f4a7c15ULL;
	return h ^ (h >> 31);
}

static __always_inline __u64 buf_u64(const __u8 *buf, __u16 off)
{
	return *(const __u64 *)(buf + (off & (PYPERF_FRAME_READ_MAX - 1)));
}

/* A code object's identity beyond its address, which the allocator reuses:
 * co_firstlineno mixed with the addresses of co_filename and co_name.  The
 * loader computes the same from the object it reads (py_code_check). */
static __always_inline __u32 code_check(struct walk_ctx *c, __u64 code, struct code_id *id)
{
	const struct py_offsets *o = c->o;
	struct frame_walk *w = &c->s->fw;
	__u8 *buf = c->s->code_buf;
	__u32 len = w->code_len;

	if (len > PYPERF_FRAME_READ_MAX)
		len = PYPERF_FRAME_READ_MAX;
	sstat(c->s, STAT_CODE_READS, 1);
	if (bpf_probe_read_user(buf, len, (void *)(code + w->code_lo)))
		return 0;
	id->firstlineno =
		*(__u32 *)(buf + ((o->code_firstlineno - w->code_lo) & (PYPERF_FRAME_READ_MAX - 1)));
	id->filename = buf_u64(buf, o->code_filename - w->code_lo);
	id->name = buf_u64(buf, o->code_name - w->code_lo);
	id->check = py_code_check(id->firstlineno, id->filename, id->name);
	return id->check;
}

/* a str's length, hash and last bytes: what the loader checks the str at
 * that address against when it names a code object freed since, and names
 * it by when the process is gone (str_seen, pyperf.h; the state bits as
 * pyread.c reads them).  Verified once, not at each of its two calls. */
VERIFIED_ONCE int str_seen(const struct py_offsets *o, __u64 str, struct str_seen *out)
{
	__u32 state, kind;
	__u64 bytes, data;

	if (!o || !out)
		return 0;
	out->tail_len = 0;
	out->kind = 0;
	*(__u64 *)out->tail = 0;
	/* PyASCIIObject: the length, then the hash, in every version */
	if (bpf_probe_read_user(out, 16, (void *)(str + o->unicode_length))) {
		out->length = -1;
		return 0;
	}
	if (bpf_probe_read_user(&state, sizeof(state), (void *)(str + o->unicode_state)))
		return 0;
	kind = (state >> 2) & 7;
	if (!((state >> 5) & 1) || (kind != 1 && kind != 2 && kind != 4) || out->length <= 0 ||
	    out->length > (1 << 24))
		return 0;
	bytes = (__u64)out->length * kind;
	out->kind = kind;
	data = str + (((state >> 6) & 1) ? o->unicode_ascii_size : o->unicode_compact_size);
	if (bytes >= STR_TAIL) {
		if (!bpf_probe_read_user(out->tail, STR_TAIL, (void *)(data + bytes - STR_TAIL)))
			out->tail_len = STR_TAIL;
	} else if (!bpf_probe_read_user(out->tail, bytes & (STR_TAIL - 1), (void *)data)) {
		out->tail_len = bytes & (STR_TAIL - 1);
	}
	return 0;
}

/* second pass, only for a stack new in this counts map: identify its code
 * objects (the code_id is built in the scratch map: struct scratch says why) */
static long check_step(__u32 i, struct walk_ctx *c)
{
	struct scratch *s = c->s;
	struct code_id *id = &s->cid;
	struct code_seen *cs;
	struct py_frame *f;

	if (i >= s->ev.nframes)
		return 1;
	f = &s->ev.frames[MASKED(i, PYPERF_MAX_FRAMES - 1)];
	cs = &s->cseen[MASKED((f->code >> 4) ^ (f->code >> 10), CODE_SEEN - 1)];
	if (cs->code == f->code) {
		f->check = cs->check; /* a frame of this stack had it: checked */
		return 0;
	}
	__builtin_memset(id, 0, sizeof(*id));
	s->cid_key.tgid = s->ev.pid;
	f->check = code_check(c, f->code, id);
	cs->code = f->code;
	cs->check = f->check;
	if (f->check) { /* kept for the loader, should the object be gone by then */
		s->cid_key.code = f->code;
		s->cid_key.check = f->check;
		/* kept already (each drain announces its stacks again): the
		 * same code object, whose strings it holds, so the same strings */
		if (bpf_map_lookup_elem(&code_ids, &s->cid_key))
			return 0;
		str_seen(c->o, id->filename, &id->file_seen);
		str_seen(c->o, id->name, &id->name_seen);
		bpf_map_update_elem(&code_ids, &s->cid_key, id, BPF_ANY);
		sstat(s, STAT_CODE_IDS, 1);
	}
	return 0;
}
WALK_CHUNKS(check_step, 16, WALK_NEEDS_PROC)

/* The bytes of the frame at w->frame, from the window or read into it.  3.11+
 * keeps frames of Python-to-Python calls stacked in one memory area, callers
 * below callees, so one read below the leaf covers several frames.  The
 * window never reaches below the frame's own page, so reading it fails only
 * where reading the frame alone would.  A frame on the thread's C stack
 * (from 3.12 the entry frame of each eval-loop call, below its first Python
 * frame) has none of its callers next to it: it is read alone, not with up
 * to a page of the C stack below it. */
#define C_STACK_SPAN (8ULL << 20)
static __always_inline __u8 *frame_bytes(struct scratch *s)
{
	struct frame_walk *w = &s->fw;
	__u64 fr = w->frame, end = fr + w->read_len, lo;
	__u32 len;

	if (fr < s->win_lo || end > s->win_hi) {
		lo = end - w->win_size;
		if (lo < (fr & ~4095ULL))
			lo = fr & ~4095ULL;
		if (fr - w->c_sp < C_STACK_SPAN) /* fr at or above sp, unsigned */
			lo = fr;
		if (lo > fr)
			lo = fr;
		/* end - lo <= max(win_size, read_len) <= PYPERF_WINDOW; the mask
		 * states the bound in a form the verifier keeps */
		len = (end - lo) & (2 * PYPERF_WINDOW - 1);
		if (len > PYPERF_WINDOW)
			return NULL;
		sstat(s, STAT_FRAME_READS, 1);
		sstat(s, STAT_FRAME_BYTES, len);
		if (bpf_probe_read_user(s->window, len, (void *)lo))
			return NULL;
		s->win_lo = lo;
		s->win_hi = end;
	}
	return s->window + ((fr - s->win_lo) & (PYPERF_WINDOW - 1));
}

/* first Python frame of the thread, or 0 */
static __always_inline __u64 top_frame(struct scratch *s, __u64 tstate, const struct py_offsets *o)
{
	__u64 f = 0;

	if (ts_read(s, tstate + o->tstate_frame, &f, sizeof(f)))
		f = 0;

	if (f && o->cframe_current_frame != PYPERF_NO_OFFSET)
		f = read_ptr(f + o->cframe_current_frame);
	return f;
}

/* The frames of one of the thread's interpreters ended (leaf first): when
 * it is a subinterpreter and ran frames, a mark says where they began (it
 * takes the eval-loop call's end from the last of them, so the merge pairs
 * the mark with them); then on to the next interpreter's state, if any.
 * false: no more. */
static __always_inline bool nest_next(struct walk_ctx *c)
{
	struct scratch *s = c->s;
	struct frame_walk *w = &s->fw;
	struct thread_walk *t = &s->tw;
	__u32 k = w->nest_at, n = s->ev.nframes, entry;
	struct py_frame *f;

	if (k >= w->nest_n || k >= PYPERF_MAX_NEST)
		return false;
	if (n > w->nest_start && n < PYPERF_MAX_FRAMES && t->ids[k & (PYPERF_MAX_NEST - 1)]) {
		f = &s->ev.frames[MASKED(n - 1, PYPERF_MAX_FRAMES - 1)];
		entry = f->instr & PY_FRAME_ENTRY;
		f->instr &= ~PY_FRAME_ENTRY;
		f = &s->ev.frames[MASKED(n, PYPERF_MAX_FRAMES - 1)];
		f->code = PY_INTERP_MARK;
		f->instr = ((__u32)t->ids[k & (PYPERF_MAX_NEST - 1)] & 0x7fffffffu) | entry;
		f->check = 0;
		w->hash = mix(mix(w->hash, PY_INTERP_MARK), f->instr);
		s->ev.nframes = n + 1;
	}
	k++;
	w->nest_at = k;
	if (k >= w->nest_n || k >= PYPERF_MAX_NEST)
		return false;
	w->frame = top_frame(s, t->all[k & (PYPERF_MAX_NEST - 1)], c->o);
	w->before = 0;
	w->nest_start = s->ev.nframes;
	return true;
}

static long frame_step(__u32 i, struct walk_ctx *c)
{
	const struct py_offsets *o = c->o;
	struct frame_walk *w = &c->s->fw;
	__u8 *buf, owner;
	__u64 code, at = w->frame;
	__u32 instr, n = c->s->ev.nframes; /* in the map value: untracked, so
						* the verifier need not unroll the loop */
	struct py_frame *f;

	if (!at)
		return nest_next(c) ? 0 : 1;
	if (n >= PYPERF_MAX_FRAMES) {
		w->flags |= STACK_TRUNCATED;
		return 1;
	}
	buf = frame_bytes(c->s);
	if (!buf) {
		w->flags |= STACK_BAD_READ;
		return 1;
	}
	code = py_frame_code(o, buf_u64(buf, o->frame_code));
	w->frame = buf_u64(buf, o->frame_back);
	/* a chain that loops back (broken by the target, or read mid-change)
	 * ends here, incomplete; a longer loop ends at the depth cap */
	if (w->frame && (w->frame == at || w->frame == w->before)) {
		w->flags |= STACK_BAD_READ;
		w->frame = 0;
	}
	w->before = at;
	owner = buf[o->frame_owner & (PYPERF_FRAME_READ_MAX - 1)];
	if (py_frame_is_shim(o, owner)) {
		/* an entry shim (3.12+): not Python code, but the frame above it
		 * is the first one of an eval-loop call */
		if (n > 0)
			w->seg_closed = true;
		if (n > 0 && n <= PYPERF_MAX_FRAMES) {
			c->s->ev.frames[MASKED(n - 1, PYPERF_MAX_FRAMES - 1)].instr |= PY_FRAME_ENTRY;
			w->hash = mix(w->hash, n);
		}
		return 0;
	}
	if (!code)
		return 0;
	instr = py_frame_instr(o, buf_u64(buf, o->frame_instr), code) |
		py_frame_entry(o, buf[o->frame_is_entry & (PYPERF_FRAME_READ_MAX - 1)]);
	if (async_stacks && !w->seg_closed && owner == PY_OWNED_BY_GENERATOR &&
	    o->frame_owner != PYPERF_NO_OFFSET) {
		w->anchor_frame = at;
		w->anchor_n = n + 1;
	}
	f = &c->s->ev.frames[MASKED(n, PYPERF_MAX_FRAMES - 1)];
	f->code = code;
	f->instr = instr;
	w->hash = mix(mix(w->hash, code), instr);
	if (o->frame_globals != PYPERF_NO_OFFSET)
		w->hash = mix(w->hash, buf_u64(buf, o->frame_globals));
	c->s->ev.nframes = n + 1;
	return 0;
}
WALK_CHUNKS(frame_step, 16, WALK_NEEDS_PROC)

/* ---- the running asyncio task (--async) ---- */

/* 3.12/3.13: the entry of the _asyncio module's current_tasks dict ({event
 * loop: task}, general keys: hash, key, value) whose task runs coroutine
 * coro; a loop per thread, so a few entries at most */
static __always_inline __u64 task_in_dict(const struct py_async *a, __u64 coro)
{
	__u64 keys = read_ptr(a->current_tasks + a->dict_keys), entries, e[3];
	__u8 hdr[32];

	if (!keys || bpf_probe_read_user(hdr, sizeof(hdr), (void *)keys))
		return 0;
	/* PyDictKeysObject: dk_log2_index_bytes at 9, dk_kind at 10 (0:
	 * general), dk_nentries at 24, the index then the entries from 32 */
	if (hdr[10] != 0 || hdr[9] > 16)
		return 0;
	entries = keys + 32 + (1ULL << hdr[9]);
	for (int i = 0; i < 8; i++) {
		if (i >= *(__s64 *)(hdr + 24))
			break;
		if (bpf_probe_read_user(e, sizeof(e), (void *)(entries + 24 * i)))
			break;
		if (e[2] && read_ptr(e[2] + a->task_coro) == coro)
			return e[2];
	}
	return 0;
}

/* The task running coroutine object coro in thread tstate, or 0.  3.14+
 * keeps it in the thread state; 3.12/3.13 in the module's dict.  Either
 * way it must run coro, the coroutine found on the stack. */
static __always_inline __u64 running_task(const struct proc_info *p, __u64 tstate, __u64 coro)
{
	const struct py_async *a = &p->async;
	__u64 t;

	if (!a->task_coro || !coro)
		return 0;
	if (a->tstate_task != PYPERF_NO_OFFSET) {
		t = tstate ? read_ptr(tstate + a->tstate_task) : 0;
		return t && read_ptr(t + a->task_coro) == coro ? t : 0;
	}
	return a->current_tasks ? task_in_dict(a, coro) : 0;
}

#endif
