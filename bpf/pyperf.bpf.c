// SPDX-License-Identifier: (BSD-2-Clause OR GPL-2.0-only)
/* pyperf.bpf.c - the in-kernel half of pyperf-bpf.
 *
 * A perf_event program (software cpu-clock, one per CPU) runs on every sample:
 *
 *   filter    is this process profiled, and do we know its interpreter?
 *   collect   find the thread's PyThreadState by matching its pthread id with
 *             the thread's FS base, then walk the frame chain with bpf_loop,
 *             keeping (code object, instruction offset, first line) per frame;
 *   aggregate hash the frames and add one to counts[active][pid, tid, hash].
 *             A key new to that map is also sent once on the ring buffer so
 *             the loader can name its code objects while the process lives.
 *
 * Processes are classified lazily: a process that runs but is in neither
 * `procs` nor `skip` is announced (EV_NEW_PID) and the loader decides.  Three
 * raw tracepoints keep that state honest: exec and fork reset a pid, exit tells
 * the loader.  Nothing is sent per sample; the loader drains counts maps.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "pyperf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define EEXIST 17
#define NEW_PID_RETRY_NS (50ULL * 1000 * 1000)   /* re-announce an unclassified pid */
#define NO_TSTATE_RETRY_NS (20ULL * 1000 * 1000)  /* re-walk threads for a native thread */

/* Only sample processes in `targets` (-p, or a command and its children). */
const volatile bool filter_targets = false;
/* Add the kernel stack of samples taken in the kernel. */
const volatile bool kernel_stacks = true;
/* Unwind the native user stack (CFI tables from the loader). */
const volatile bool native_stacks = true;

/* Which of the two counts maps the sampler fills; the loader flips it. */
__u32 active = 0;
/* counts[i] was found full: new keys are dropped without being announced
 * (which would cost a ring buffer record per sample) until the loader has
 * drained it and clears the flag. */
__u32 map_full[2];

/* tgid -> interpreter address and offsets; written by the loader */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct proc_info);
} procs SEC(".maps");

/* tgid -> 1 for the processes to profile when filter_targets is set */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, __u8);
} targets SEC(".maps");

/* tgid -> not (yet) a known Python process: when to announce it again */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, struct skip_info);
} skip SEC(".maps");

/* tid -> its PyThreadState (0: none, re-checked after NO_TSTATE_RETRY_NS) */
struct tstate_cache {
	__u32 tgid;
	__u32 pad;
	__u64 tstate;
	__u64 stamp_ns;
};
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, struct tstate_cache);
} tcache SEC(".maps");

/* stack key -> samples; two maps, one filled while the loader drains the other */
struct counts_map {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, PYPERF_COUNTS_ENTRIES);
	__type(key, struct stack_key);
	__type(value, __u64);
} counts0 SEC(".maps"), counts1 SEC(".maps");

/* kernel stacks of the samples in counts0 / counts1 (cleared with them) */
struct kstack_map {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(max_entries, PYPERF_KSTACK_ENTRIES);
	__type(key, __u32);
	__uint(value_size, PYPERF_KSTACK_DEPTH * sizeof(__u64));
} kstacks0 SEC(".maps"), kstacks1 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 2);
	__type(key, __u32);
	__array(values, struct counts_map);
} counts SEC(".maps") = {
	.values = { &counts0, &counts1 },
};

/* tgid -> its executable mappings, sorted, for the native unwinder */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__uint(map_flags, BPF_F_NO_PREALLOC); /* values are replaced whole: RCU-freed */
	__type(key, __u32);
	__type(value, struct native_maps);
} native_procs SEC(".maps");

/* Unwind tables, one BPF array per binary (pyperf.h): the loader creates
 * each when a sample first asks for it (EV_TABLE) and puts it in its slot. */
struct unwind_rows_map {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_INNER_MAP | BPF_F_MMAPABLE); /* sizes differ */
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct unwind_row);
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, PYPERF_MAX_TABLES);
	__type(key, __u32);
	__array(values, struct unwind_rows_map);
} unwind_tables SEC(".maps");

/* slot -> when a sample last used its table (ns), for evicting the coldest;
 * the loader reads it through mmap */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, PYPERF_MAX_TABLES);
	__type(key, __u32);
	__type(value, __u64);
} table_used SEC(".maps");

/* table id -> when it may be asked for again (EV_TABLE) */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u64);
} table_req SEC(".maps");

/* tgid -> when it may ask again for its mappings to be re-read (EV_MAPS):
 * soon, as samples in code mapped since are pending until then; stray pcs
 * back off by page (stray_pcs) */
#define MAPS_REREAD_NS (20ULL * 1000 * 1000)
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u64);
} maps_req SEC(".maps");

/* (tgid, page) -> no reread for a pc in that page before this time: written
 * by the loader when a reread found no mapping for such a pc (a stray
 * return address), backing off; other pages still ask at once */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, struct stray_key);
	__type(value, __u64);
} stray_pcs SEC(".maps");

/* new stacks and process events for the loader */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4 << 20);
} events SEC(".maps");
#define RINGBUF_WAKE_AT (1 << 20) /* bytes waiting: any new stack wakes the loader */

/* A return address and its unwind row, cached per CPU: the same call sites
 * come back sample after sample (and frame after frame in recursion), and a
 * hit skips both binary searches.  Keyed with the process image (tgid, gen):
 * addresses mean nothing across processes, and a binary's rows never change
 * once written. */
#define ROW_CACHE_SIZE 2048
struct row_cache_entry {
	__u64 pc;
	__u32 tgid, gen;
	struct unwind_row row;
};

/* per-CPU scratch: the stack being built, a window of frame memory, a code object */
struct scratch {
	struct ev_stack ev;
	__u64 win_lo, win_hi;    /* target addresses held in window (kept here, not on
				  * the stack, so the verifier does not track them) */
	__u8 window[PYPERF_WINDOW + PYPERF_FRAME_READ_MAX + 8];
	__u8 code_buf[PYPERF_FRAME_READ_MAX + 8];
	__u32 lo, hi;            /* binary search bounds, kept here so the verifier
				  * sees unknown values and prunes the loop */
	__u64 stk_lo, stk_hi;    /* user stack addresses held in stk */
	__u64 now;               /* when the sample was taken, for table_used */
	struct unwind_row row;   /* the frame's rule, while native_step uses it */
	__u32 last;              /* 1 + the mapping of the last frame; 0: none */
	__u32 used;              /* the table last marked used in this sample */
	__u64 hash;              /* the stack's hash, into and out of unwind_native */
	__u32 nflags;            /* STACK_NATIVE* of the walk (here, not on the stack:
				  * each new value would make the verifier check
				  * native_step again) */
	__u8 stk[PYPERF_STACK_WINDOW + 8];
	struct row_cache_entry rcache[ROW_CACHE_SIZE];
	__u8 wire[EV_WIRE_MAX];  /* ev packed for the ring buffer (pyperf.h) */
};
/* One struct scratch per CPU, indexed by CPU number (a per-CPU array value
 * is limited to 32 KB, and this is more); the loader sets max_entries to the
 * number of possible CPUs.  Only on_sample uses it, and a perf event's
 * program does not nest on its CPU. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct scratch);
} scratch_map SEC(".maps");

/* enum stat_idx -> count, per CPU */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, STAT_NR);
	__type(key, __u32);
	__type(value, __u64);
} stats SEC(".maps");

static __always_inline void stat_inc(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&stats, &idx);

	if (v)
		(*v)++;
}

static __always_inline __u64 read_ptr(__u64 addr)
{
	__u64 v = 0;

	if (bpf_probe_read_user(&v, sizeof(v), (void *)addr))
		return 0;
	return v;
}

static __always_inline bool is_profiled(__u32 tgid)
{
	return !filter_targets || bpf_map_lookup_elem(&targets, &tgid);
}

static __always_inline void send_event(__u32 kind, __u32 pid)
{
	struct ev_header ev = { .kind = kind, .pid = pid };

	bpf_ringbuf_output(&events, &ev, sizeof(ev), 0);
}

/* A process we cannot sample yet: ask the loader, at most every 50 ms (the
 * loader may push retry_after further out for processes that are not Python). */
static __always_inline void announce_unknown(__u32 tgid)
{
	struct skip_info *s = bpf_map_lookup_elem(&skip, &tgid);
	__u64 now = bpf_ktime_get_ns();
	struct skip_info next = { .retry_after_ns = now + NEW_PID_RETRY_NS };
	struct ev_header ev = { .kind = EV_NEW_PID, .pid = tgid };

	if (s && now < s->retry_after_ns)
		return;
	bpf_map_update_elem(&skip, &tgid, &next, BPF_ANY);
	if (bpf_ringbuf_output(&events, &ev, sizeof(ev), 0) == 0)
		stat_inc(STAT_NEW_PID_EVENTS);
}

/* ---- finding the thread's PyThreadState ---- */

struct thread_walk {
	__u64 tstate;
	__u64 want;               /* pthread id == FS base of the thread */
	__u16 next_off, id_off;
	__u64 found;
};

static long thread_step(__u32 i, struct thread_walk *w)
{
	if (!w->tstate)
		return 1;
	if (read_ptr(w->tstate + w->id_off) == w->want) {
		w->found = w->tstate;
		return 1;
	}
	w->tstate = read_ptr(w->tstate + w->next_off);
	return 0;
}

static __always_inline __u64 find_tstate(const struct proc_info *p, __u32 tgid, __u32 tid)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u64 fsbase = task->thread.fsbase, interp, now;
	const struct py_offsets *o = &p->off;
	struct tstate_cache *c = bpf_map_lookup_elem(&tcache, &tid);
	struct tstate_cache fresh = { .tgid = tgid };
	struct thread_walk w = { .want = fsbase, .next_off = o->tstate_next,
				 .id_off = o->tstate_thread_id };

	if (c && c->tgid == tgid && c->tstate &&
	    read_ptr(c->tstate + o->tstate_thread_id) == fsbase)
		return c->tstate; /* the common case: one map lookup, one read */
	now = bpf_ktime_get_ns();
	if (c && c->tgid == tgid && !c->tstate && now - c->stamp_ns < NO_TSTATE_RETRY_NS)
		return 0;
	interp = read_ptr(p->runtime_addr + o->runtime_interp_head);
	if (interp)
		w.tstate = read_ptr(interp + o->interp_threads_head);
	if (!w.tstate)
		return 0; /* interpreter not (yet) running: nothing worth caching */
	bpf_loop(PYPERF_MAX_THREADS, thread_step, &w, 0);
	fresh.tstate = w.found;
	fresh.stamp_ns = now;
	bpf_map_update_elem(&tcache, &tid, &fresh, BPF_ANY);
	return w.found;
}

/* ---- walking the frames ---- */

struct frame_walk {
	struct scratch *s;
	const struct py_offsets *o;
	__u64 frame;
	__u64 hash;
	__u32 flags;
	__u32 read_len;          /* bytes of a frame to read */
	__u32 win_size;          /* bytes to read below a frame (3.11+ frames are stacked) */
	__u16 code_lo, code_len; /* span of a code object holding the check fields */
};

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
static __always_inline __u32 code_check(struct frame_walk *w, __u64 code)
{
	const struct py_offsets *o = w->o;
	__u8 *buf = w->s->code_buf;
	__u32 len = w->code_len, first;

	if (len > PYPERF_FRAME_READ_MAX)
		len = PYPERF_FRAME_READ_MAX;
	if (bpf_probe_read_user(buf, len, (void *)(code + w->code_lo)))
		return 0;
	first = *(__u32 *)(buf + ((o->code_firstlineno - w->code_lo) & (PYPERF_FRAME_READ_MAX - 1)));
	return py_code_check(first, buf_u64(buf, o->code_filename - w->code_lo),
			     buf_u64(buf, o->code_name - w->code_lo));
}

/* second pass, only for a stack new in this counts map: identify its code objects */
static long check_step(__u32 i, struct frame_walk *w)
{
	struct py_frame *f;

	if (i >= w->s->ev.nframes)
		return 1;
	f = &w->s->ev.frames[i & (PYPERF_MAX_FRAMES - 1)];
	f->check = code_check(w, f->code);
	return 0;
}

/* The bytes of the frame at w->frame, from the window or read into it.  3.11+
 * keeps frames of Python-to-Python calls stacked in one memory area, callers
 * below callees, so one read below the leaf covers several frames.  The
 * window never reaches below the frame's own page, so reading it fails only
 * where reading the frame alone would. */
static __always_inline __u8 *frame_bytes(struct frame_walk *w)
{
	struct scratch *s = w->s;
	__u64 fr = w->frame, end = fr + w->read_len, lo;
	__u32 len;

	if (fr < s->win_lo || end > s->win_hi) {
		lo = end - w->win_size;
		if (lo < (fr & ~4095ULL))
			lo = fr & ~4095ULL;
		if (lo > fr)
			lo = fr;
		/* end - lo <= max(win_size, read_len) <= PYPERF_WINDOW; the mask
		 * states the bound in a form the verifier keeps */
		len = (end - lo) & (2 * PYPERF_WINDOW - 1);
		if (len > PYPERF_WINDOW)
			return NULL;
		if (bpf_probe_read_user(s->window, len, (void *)lo))
			return NULL;
		s->win_lo = lo;
		s->win_hi = end;
	}
	return s->window + ((fr - s->win_lo) & (PYPERF_WINDOW - 1));
}

static long frame_step(__u32 i, struct frame_walk *w)
{
	const struct py_offsets *o = w->o;
	__u8 *buf;
	__u64 code, instr_raw;
	__u32 instr, n = w->s->ev.nframes; /* in the map value: untracked, so
						* the verifier need not unroll the loop */
	struct py_frame *f;

	if (!w->frame)
		return 1;
	if (n >= PYPERF_MAX_FRAMES) {
		w->flags |= STACK_TRUNCATED;
		return 1;
	}
	buf = frame_bytes(w);
	if (!buf) {
		w->flags |= STACK_BAD_READ;
		return 1;
	}
	code = py_frame_code(o, buf_u64(buf, o->frame_code));
	w->frame = buf_u64(buf, o->frame_back);
	if (py_frame_is_shim(o, buf[o->frame_owner & (PYPERF_FRAME_READ_MAX - 1)])) {
		/* an entry shim (3.12+): not Python code, but the frame above it
		 * is the first one of an eval-loop call */
		if (n > 0 && n <= PYPERF_MAX_FRAMES) {
			w->s->ev.frames[(n - 1) & (PYPERF_MAX_FRAMES - 1)].instr |= PY_FRAME_ENTRY;
			w->hash = mix(w->hash, n);
		}
		return 0;
	}
	if (!code)
		return 0;
	instr_raw = buf_u64(buf, o->frame_instr);
	if (o->instr_kind == INSTR_POINTER)
		instr = (__u32)(instr_raw - (code + o->code_adaptive));
	else if (o->instr_kind == INSTR_LASTI_UNITS)
		instr = (__s32)instr_raw < 0 ? (__u32)-1 : (__u32)instr_raw * 2;
	else
		instr = (__u32)instr_raw;
	instr = PY_FRAME_INSTR(instr);
	if (o->frame_is_entry != PYPERF_NO_OFFSET) {
		if (buf[o->frame_is_entry & (PYPERF_FRAME_READ_MAX - 1)])
			instr |= PY_FRAME_ENTRY; /* 3.11 */
	} else if (o->frame_owner == PYPERF_NO_OFFSET) {
		instr |= PY_FRAME_ENTRY; /* up to 3.10 every frame has its own eval call */
	}
	f = &w->s->ev.frames[n & (PYPERF_MAX_FRAMES - 1)];
	f->code = code;
	f->instr = instr;
	w->hash = mix(mix(w->hash, code), instr);
	w->s->ev.nframes = n + 1;
	return 0;
}

/* first Python frame of the thread, or 0 */
static __always_inline __u64 top_frame(__u64 tstate, const struct py_offsets *o)
{
	__u64 f = read_ptr(tstate + o->tstate_frame);

	if (f && o->cframe_current_frame != PYPERF_NO_OFFSET)
		f = read_ptr(f + o->cframe_current_frame);
	return f;
}

static __always_inline __u32 frame_read_len(const struct py_offsets *o)
{
	__u32 m = o->frame_back;

	if (o->frame_code > m)
		m = o->frame_code;
	if (o->frame_instr > m)
		m = o->frame_instr;
	m += 8;
	if (o->frame_owner != PYPERF_NO_OFFSET && o->frame_owner + 1 > m)
		m = o->frame_owner + 1;
	if (o->frame_is_entry != PYPERF_NO_OFFSET && o->frame_is_entry + 1 > m)
		m = o->frame_is_entry + 1;
	return m > PYPERF_FRAME_READ_MAX ? PYPERF_FRAME_READ_MAX : m;
}

static __always_inline void code_span(const struct py_offsets *o, __u16 *lo, __u16 *len)
{
	__u16 a = o->code_firstlineno, b = o->code_filename, c = o->code_name;
	__u16 min = a < b ? a : b, max = a > b ? a : b;

	if (c < min)
		min = c;
	if (c > max)
		max = c;
	*lo = min;
	*len = max + 8 - min;
}

/* ---- unwinding the native user stack ----
 *
 * Without frame pointers: the loader turned each binary's CFI into rows
 * (pyperf.h, struct unwind_row).  Per frame: find the mapping holding pc
 * (binary search in the process's native_maps), then the row for pc in that
 * binary's table (binary search in its rows array), compute the CFA, read the
 * return address at CFA - 8 and, if the row says so, the caller's rbp.
 * Mappings without CFI (JIT code such as perf trampolines) are followed by
 * frame pointers. */

struct native_walk {
	struct scratch *s;
	const struct native_maps *nm;
	struct unwind_regs g;    /* the frame being unwound */
	__u64 hash;
	__u32 tgid, gen;
};

/* Binary searches keep their bounds in the scratch map through volatile
 * accesses: to the verifier they are then unknown numbers, and the states of
 * both branches of an iteration are the same, so it checks the loop body
 * once per iteration instead of once per path. */
#define VLOAD(x) (*(volatile __u32 *)&(x))
#define VSTORE(x, v) (*(volatile __u32 *)&(x) = (v))

/* Each binary search is a bpf_loop of its own, so the verifier checks one
 * step once rather than every unrolled iteration on every path to it. */
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
static __always_inline __u32 find_mapping(struct scratch *s, const struct native_maps *nm,
					  __u64 pc)
{
	struct search q = { .s = s, .base = nm, .pc = pc };
	__u32 lo;

	VSTORE(s->lo, 0);
	VSTORE(s->hi, nm->n > PYPERF_MAX_MAPPINGS ? PYPERF_MAX_MAPPINGS : nm->n);
	bpf_loop(10, mapping_step, &q, 0); /* 2^10 > PYPERF_MAX_MAPPINGS */
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

/* the row covering pc (an ELF address) in a table's rows [1, 1 + nrows):
 * only among the rows of its page when the table's page index covers it
 * (bpf/pyperf.h) */
static __always_inline const struct unwind_row *find_row(struct scratch *s, void *rows,
							 __u32 nrows, __u32 pc)
{
	struct search q = { .s = s, .base = rows, .pc = pc };
	const struct unwind_row *meta, *e0, *e1;
	__u32 mid, k = 0, lo = 1, hi = 1 + nrows;

	mid = 1 + nrows;
	meta = bpf_map_lookup_elem(rows, &mid);
	if (meta && unwind_index_page(meta, pc, &k)) {
		mid = unwind_index_elem(nrows, k);
		e0 = bpf_map_lookup_elem(rows, &mid);
		mid = unwind_index_elem(nrows, k + 1);
		e1 = bpf_map_lookup_elem(rows, &mid);
		if (e0 && e1) {
			lo = ((const __u32 *)e0)[k & 1] + 1;
			hi = ((const __u32 *)e1)[(k + 1) & 1] + 1;
		}
	}
	VSTORE(s->lo, lo);
	VSTORE(s->hi, hi);
	bpf_loop(27, row_step, &q, 0); /* 2^27 rows at most */
	mid = VLOAD(s->lo);
	if (mid <= 1)
		return NULL;
	mid -= 1;
	return bpf_map_lookup_elem(rows, &mid);
}

/* ask the loader for a table it has not loaded (yet), at most every 100 ms */
static __always_inline void request_table(__u32 tgid, __u32 table)
{
	__u64 now = bpf_ktime_get_ns(), next = now + 100ULL * 1000 * 1000, *t;
	struct ev_table ev = { .kind = EV_TABLE, .pid = tgid, .table = table };

	t = bpf_map_lookup_elem(&table_req, &table);
	if (t && now < *t)
		return;
	bpf_map_update_elem(&table_req, &table, &next, BPF_ANY);
	bpf_ringbuf_output(&events, &ev, sizeof(ev), 0);
}

/* ask the loader to read the process's mappings again, at most every
 * MAPS_REREAD_NS, and not for a pc in a page it backs off from.  Returns
 * true for such a page (a stray pc, known not to be mapped): else the pc
 * may be code mapped since the last read, and the mappings are pending. */
static __always_inline bool request_maps(__u32 tgid, __u64 pc)
{
	__u64 now = bpf_ktime_get_ns(), next = now + MAPS_REREAD_NS, *t;
	struct stray_key k = { .tgid = tgid, .page = pc >> 12 };
	struct ev_maps ev = { .kind = EV_MAPS, .pid = tgid, .pc = pc };

	t = bpf_map_lookup_elem(&stray_pcs, &k);
	if (t && now < *t)
		return true;
	t = bpf_map_lookup_elem(&maps_req, &tgid);
	if (t && now < *t)
		return false;
	bpf_map_update_elem(&maps_req, &tgid, &next, BPF_ANY);
	bpf_ringbuf_output(&events, &ev, sizeof(ev), 0);
	return false;
}

static __always_inline void native_push(struct native_walk *u, __u32 n, __u64 pc)
{
	u->s->ev.native[n & (PYPERF_MAX_NATIVE - 1)] = pc;
	u->s->ev.nnative = n + 1;
	u->hash = mix(u->hash, pc);
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

static long native_step(__u32 i, struct native_walk *u)
{
	__u32 n = u->s->ev.nnative;
	const struct native_mapping *m;
	const struct unwind_row *r, *hdr;
	struct row_cache_entry *c;
	__u64 pc = u->g.pc, look;
	__u32 slot, idx, zero = 0;
	void *rows;

	if (!pc)
		return 1; /* frame pointer chains end with 0 */
	if (n >= PYPERF_MAX_NATIVE) {
		VSTORE(u->s->nflags, VLOAD(u->s->nflags) | STACK_NATIVE_TRUNCATED);
		return 1;
	}
	/* a return address points after its call, which may be a function's
	 * last instruction: look up the call itself */
	look = pc - (n ? 1 : 0);
	c = &u->s->rcache[(look ^ (look >> 7)) & (ROW_CACHE_SIZE - 1)];
	if (n && c->pc == look && c->tgid == u->tgid && c->gen == u->gen) {
		u->s->row = c->row;
		native_push(u, n, pc);
		goto unwind;
	}
	/* consecutive frames often share a mapping; its index is kept in the
	 * scratch map, not the stack, so both ways on meet in one state */
	idx = VLOAD(u->s->last);
	m = &u->nm->m[(idx - 1) & (PYPERF_MAX_MAPPINGS - 1)];
	if (!idx || pc < m->start || pc >= m->end) {
		idx = find_mapping(u->s, u->nm, pc);
		VSTORE(u->s->last, idx);
		if (!idx) {
			/* code mapped after the loader last looked (dlopen, a new
			 * JIT or trampoline arena) is pending until it looks again;
			 * a pc it found unmapped is a stray: the stack is cut */
			native_push(u, n, pc);
			VSTORE(u->s->nflags, VLOAD(u->s->nflags) | STACK_NATIVE_INCOMPLETE |
					     (request_maps(u->tgid, pc) ? 0 : STACK_NATIVE_PENDING));
			return 1;
		}
		m = &u->nm->m[(idx - 1) & (PYPERF_MAX_MAPPINGS - 1)];
	}
	if (m->table == TABLE_NONE)
		goto frame_pointers;
	slot = TABLE_SLOT(m->table);
	rows = bpf_map_lookup_elem(&unwind_tables, &slot);
	hdr = rows ? bpf_map_lookup_elem(rows, &zero) : NULL;
	if (!hdr || hdr->pc != m->table) {
		/* not loaded yet, or evicted: the loader builds it */
		native_push(u, n, pc);
		request_table(u->tgid, m->table);
		VSTORE(u->s->nflags, VLOAD(u->s->nflags) | STACK_NATIVE_PENDING);
		goto incomplete;
	}
	if (VLOAD(u->s->used) != m->table) {
		/* in the scratch map, not on the stack: the verifier then sees
		 * the same state whether or not this branch was taken */
		VSTORE(u->s->used, m->table);
		bpf_map_update_elem(&table_used, &slot, &u->s->now, BPF_ANY);
	}
	if (!hdr->nrows)
		goto frame_pointers;
	if (hdr->nrows == UNWIND_NO_TABLE) {
		native_push(u, n, pc);
		goto incomplete;
	}
	r = find_row(u->s, rows, hdr->nrows, (__u32)(look - m->bias));
	if (!r || r->cfa_kind == CFA_NONE || r->cfa_kind == CFA_UNSUPPORTED) {
		native_push(u, n, pc);
		goto incomplete;
	}
	u->s->row = *r;
	if (n) {
		c->pc = look;
		c->tgid = u->tgid;
		c->gen = u->gen;
		c->row = *r;
	}
	/* the leaf's key is its row: samples anywhere in that stretch of code
	 * share one stack (a return address is already stable) */
	native_push(u, n, n ? pc : r->pc + m->bias);
unwind:
	/* both ways here leave the row in the scratch map, where the verifier
	 * does not track it: their states match and it checks what follows once */
	switch (unwind_cfi_step(u->s, &u->s->row, &u->g)) {
	case UNWIND_STEPPED:
		return 0;
	case UNWIND_END:
		return 1; /* the outermost frame: complete */
	default:
		goto incomplete;
	}
frame_pointers:
	/* no CFI: trust rbp to be a frame pointer */
	native_push(u, n, pc);
	if (unwind_fp_step(u->s, &u->g) == UNWIND_STEPPED)
		return 0;
incomplete:
	VSTORE(u->s->nflags, VLOAD(u->s->nflags) | STACK_NATIVE_INCOMPLETE);
	return 1;
}

/* Unwind the user stack of the current task into the CPU's scratch
 * ev.native; returns the STACK_NATIVE* flags and folds the frames into
 * scratch.hash.  A global function: the verifier checks it once, on its
 * own, not once for every state of on_sample that reaches it. */
__noinline __u32 unwind_native(struct bpf_perf_event_data *ctx, __u32 tgid, __u32 gen)
{
	__u32 cpu = bpf_get_smp_processor_id();
	struct scratch *s = bpf_map_lookup_elem(&scratch_map, &cpu);
	struct native_walk u = { .s = s, .tgid = tgid, .gen = gen };
	struct pt_regs *regs;
	__u32 flags;

	if (!s)
		return 0;
	u.hash = s->hash;
	s->ev.nnative = 0;
	u.nm = bpf_map_lookup_elem(&native_procs, &tgid);
	if (!u.nm) {
		/* the loader has not read this process's mappings (yet): the
		 * native part is missing, and the stack says so */
		request_maps(tgid, 0);
		stat_inc(STAT_NATIVE_INCOMPLETE);
		stat_inc(STAT_NATIVE_PENDING);
		return STACK_NATIVE | STACK_NATIVE_INCOMPLETE | STACK_NATIVE_PENDING;
	}
	/* whole-word loads: the verifier allows only those on the context */
	if ((*(volatile __u64 *)&ctx->regs.cs & 3) == 3) { /* interrupted in user mode */
		u.g.pc = *(volatile __u64 *)&ctx->regs.ip;
		u.g.sp = *(volatile __u64 *)&ctx->regs.sp;
		u.g.bp = *(volatile __u64 *)&ctx->regs.bp;
		u.g.bx = *(volatile __u64 *)&ctx->regs.bx;
	} else { /* in the kernel: the user registers saved at kernel entry */
		regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
		if (!regs)
			return STACK_NATIVE | STACK_NATIVE_INCOMPLETE;
		u.g.pc = BPF_CORE_READ(regs, ip);
		u.g.sp = BPF_CORE_READ(regs, sp);
		u.g.bp = BPF_CORE_READ(regs, bp);
		u.g.bx = BPF_CORE_READ(regs, bx);
	}
	s->nflags = STACK_NATIVE;
	s->now = bpf_ktime_get_ns();
	s->used = 0;
	s->last = 0;
	s->stk_lo = s->stk_hi = 0;
	bpf_loop(PYPERF_MAX_NATIVE + 1, native_step, &u, 0);
	flags = s->nflags;
	if (flags & STACK_NATIVE_INCOMPLETE)
		stat_inc(STAT_NATIVE_INCOMPLETE);
	if (flags & STACK_NATIVE_TRUNCATED)
		stat_inc(STAT_NATIVE_TRUNCATED);
	if (flags & STACK_NATIVE_PENDING)
		stat_inc(STAT_NATIVE_PENDING);
	s->hash = mix(u.hash, s->ev.nnative);
	return flags;
}

/* Pack s->ev into s->wire (see EV_WIRE_HEAD); returns its length, 0 on a
 * failed copy. */
static __always_inline __u64 pack_stack(struct scratch *s)
{
	__u64 nf = s->ev.nframes, nn = s->ev.nnative, fbytes, nbytes;

	if (nf > PYPERF_MAX_FRAMES)
		nf = PYPERF_MAX_FRAMES;
	if (nn > PYPERF_MAX_NATIVE)
		nn = PYPERF_MAX_NATIVE;
	fbytes = nf * sizeof(struct py_frame);
	nbytes = nn * 8;
	if (bpf_probe_read_kernel(s->wire, EV_WIRE_HEAD, &s->ev))
		return 0;
	if (fbytes && bpf_probe_read_kernel(s->wire + EV_WIRE_HEAD, fbytes, s->ev.frames))
		return 0;
	if (nbytes && bpf_probe_read_kernel(s->wire + EV_WIRE_HEAD + fbytes, nbytes, s->ev.native))
		return 0;
	return EV_WIRE_HEAD + fbytes + nbytes;
}

/* Add one sample of this stack.  When the key is new in this counts map, name
 * its code objects (check_step) and announce it; samples of a known key read
 * no code object at all. */
static __always_inline void count_stack(struct frame_walk *w, struct stack_key *key, __u32 idx)
{
	struct scratch *s = w->s;
	void *m = bpf_map_lookup_elem(&counts, &idx);
	__u64 one = 1, *v, size;
	long err;

	if (!m)
		return;
	v = bpf_map_lookup_elem(m, key);
	if (v) {
		__sync_fetch_and_add(v, 1);
		stat_inc(STAT_STACKS);
		return;
	}
	if (map_full[idx & 1]) {
		stat_inc(STAT_MAP_FULL);
		return;
	}
	bpf_loop(PYPERF_MAX_FRAMES, check_step, w, 0);
	bpf_get_current_comm(s->ev.comm, sizeof(s->ev.comm));
	size = pack_stack(s);
	/* a new stack with Python frames wakes the loader at once: it names
	 * the code objects while they exist (an imported module's code is
	 * freed once it has run); one without (a BLAS or OpenMP worker's)
	 * waits for the next wakeup or poll (100 ms at most), unless the ring
	 * is filling up */
	if (!size || bpf_ringbuf_output(&events, s->wire, size,
					s->ev.nframes ||
					bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) > RINGBUF_WAKE_AT ?
					0 : BPF_RB_NO_WAKEUP)) {
		stat_inc(STAT_RINGBUF_FULL);
		return;
	}
	err = bpf_map_update_elem(m, key, &one, BPF_NOEXIST);
	if (err == -EEXIST) {
		v = bpf_map_lookup_elem(m, key);
		if (v)
			__sync_fetch_and_add(v, 1);
	} else if (err) {
		map_full[idx & 1] = 1;
		stat_inc(STAT_MAP_FULL);
		return;
	}
	stat_inc(STAT_STACKS);
}

SEC("perf_event")
int on_sample(struct bpf_perf_event_data *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, tid = (__u32)id, cpu;
	struct proc_info *p;
	struct scratch *s;
	struct frame_walk w = {};
	struct stack_key key;
	__u64 tstate;
	__u32 idx = active & 1;

	if (!tgid || !is_profiled(tgid))
		return 0;
	p = bpf_map_lookup_elem(&procs, &tgid);
	if (!p) {
		if (bpf_get_current_task_btf()->mm) /* kernel threads are never Python */
			announce_unknown(tgid);
		return 0;
	}
	stat_inc(STAT_SAMPLES);
	cpu = bpf_get_smp_processor_id();
	s = bpf_map_lookup_elem(&scratch_map, &cpu);
	if (!s)
		return 0;
	w.s = s;
	w.o = &p->off;
	/* the counts map's parity is part of the key: a stack announced again
	 * after the loader drained the other map never shares a key with it */
	w.hash = mix(0x5eed + idx, tgid);
	tstate = find_tstate(p, tgid, tid);
	if (!tstate)
		stat_inc(STAT_NO_TSTATE);
	/* one path whether or not the thread has Python frames (frame_step
	 * stops at once without one), so the verifier walks the native
	 * unwinder below once, not once per case */
	w.frame = tstate ? top_frame(tstate, &p->off) : 0;
	w.read_len = frame_read_len(&p->off);
	w.win_size = p->off.instr_kind == INSTR_POINTER ? PYPERF_WINDOW : w.read_len;
	s->win_lo = s->win_hi = 0; /* memory of another process, or changed since */
	code_span(&p->off, &w.code_lo, &w.code_len);
	s->ev.nframes = 0;
	bpf_loop(PYPERF_MAX_FRAMES + 64, frame_step, &w, 0);
	if (w.frame && !(w.flags & STACK_BAD_READ))
		w.flags |= STACK_TRUNCATED;
	if (w.flags & STACK_TRUNCATED)
		stat_inc(STAT_TRUNCATED);
	if (w.flags & STACK_BAD_READ)
		stat_inc(STAT_BAD_READ);
	if (!s->ev.nframes) {
		if (tstate)
			stat_inc(STAT_NO_FRAMES);
		/* a thread running no Python code (a BLAS or OpenMP pool, a C++
		 * worker, a thread before its first frame): with native stacks
		 * it is still sampled, with its native and kernel frames (the
		 * loader tells it by nframes == 0) */
		if (!native_stacks)
			return 0;
	}

	s->ev.nnative = 0;
	if (native_stacks) {
		s->hash = w.hash;
		w.flags |= unwind_native(ctx, tgid, p->gen);
		w.hash = s->hash;
	}

	s->ev.kind = EV_STACK;
	s->ev.pid = tgid;
	s->ev.tid = tid;
	s->ev.flags = w.flags;
	s->ev.gen = p->gen;
	s->ev.hash = mix(mix(w.hash, s->ev.nframes), w.flags);
	key.pid = tgid;
	key.tid = tid;
	key.gen = p->gen;
	key.kstack = -1;
	/* a sample taken in user mode has no kernel stack: not asked for */
	if (kernel_stacks && (*(volatile __u64 *)&ctx->regs.cs & 3) != 3)
		key.kstack = idx ? bpf_get_stackid(ctx, &kstacks1, 0) : bpf_get_stackid(ctx, &kstacks0, 0);
	key.hash = s->ev.hash;
	count_stack(&w, &key, idx);
	return 0;
}

/* ---- process lifecycle ---- */

/* a new program: whatever we knew about this pid is stale */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(on_exec, struct task_struct *task, pid_t old_pid, struct linux_binprm *bprm)
{
	__u32 tgid = task->tgid;

	if (!is_profiled(tgid))
		return 0;
	bpf_map_delete_elem(&procs, &tgid);
	bpf_map_delete_elem(&skip, &tgid);
	bpf_map_delete_elem(&native_procs, &tgid);
	send_event(EV_EXEC, tgid);
	return 0;
}

/* a new process: starts unclassified; children of targets are targets */
SEC("tp_btf/sched_process_fork")
int BPF_PROG(on_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 ptgid = parent->tgid, ctgid = child->tgid;
	__u8 one = 1;

	if (child->pid != ctgid)
		return 0; /* a new thread, not a new process */
	bpf_map_delete_elem(&procs, &ctgid);
	bpf_map_delete_elem(&skip, &ctgid);
	bpf_map_delete_elem(&native_procs, &ctgid);
	if (filter_targets && bpf_map_lookup_elem(&targets, &ptgid))
		bpf_map_update_elem(&targets, &ctgid, &one, BPF_ANY);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(on_exit, struct task_struct *task)
{
	__u32 tgid = task->tgid;

	if (task->pid != tgid || !is_profiled(tgid))
		return 0;
	if (bpf_map_lookup_elem(&procs, &tgid))
		send_event(EV_EXIT, tgid);
	bpf_map_delete_elem(&procs, &tgid);
	bpf_map_delete_elem(&native_procs, &tgid);
	/* a dead target's pid may be reused by an unrelated process */
	bpf_map_delete_elem(&targets, &tgid);
	return 0;
}
