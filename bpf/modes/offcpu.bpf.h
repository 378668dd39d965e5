/* offcpu.bpf.h - --mode wall|offcpu: off-CPU time from the scheduler's switches
 * (included by pyperf.bpf.c through modes.bpf.h, after the helpers and the
 * stack walk). */

/* each profiled thread's off-CPU state (--mode wall|offcpu), in a table
 * the sched_switch hook reads on every context switch of the host.  An
 * array's lookup is inlined by the verifier (a few ns); task-local storage
 * cost about 80 ns a lookup here and a hash map more, most of a switch's
 * budget.  A thread lives in one of two slots, its tid's low bits and a
 * hash of it, so two threads whose tids clash in one find room in the
 * other; a slot is tagged with its thread's pid and tid and freed when the
 * thread exits (on_exit).  A profiled thread that finds both taken evicts
 * an owner with no block in flight, else the first (its block is counted
 * lost, STAT_OFFCPU_LOST).  The loader leaves the table one slot long
 * unless the mode needs it, and shrinks it for tests. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE); /* the loader credits blocks in flight */
	__uint(max_entries, 1 << 16); /* 1 << offcpu_slot_bits */
	__type(key, __u32);
	__type(value, struct offcpu_thread);
} offcpu_slots SEC(".maps");


/* the slots thread `id` (tgid << 32 | tid) may live in */
static __always_inline __u32 slot_first(__u32 tid)
{
	return tid & ((1u << offcpu_slot_bits) - 1);
}

static __always_inline __u32 slot_second(__u32 tid)
{
	return (tid * 2654435761u) >> (32 - offcpu_slot_bits); /* a multiplicative hash's top bits */
}

/* thread `id`'s slot, or NULL; the idle tasks (tid 0) have none */
static __always_inline struct offcpu_thread *slot_find(__u64 id)
{
	__u32 i = slot_first((__u32)id);
	struct offcpu_thread *t;

	if (!(__u32)id)
		return NULL;
	t = bpf_map_lookup_elem(&offcpu_slots, &i);
	if (t && t->id == id)
		return t;
	i = slot_second((__u32)id);
	t = bpf_map_lookup_elem(&offcpu_slots, &i);
	return t && t->id == id ? t : NULL;
}

/* a slot for profiled thread `id`, which has none: a free one, else one
 * whose owner has no block in flight, else the first */
static __always_inline struct offcpu_thread *slot_claim(__u64 id)
{
	__u32 i = slot_first((__u32)id), j = slot_second((__u32)id);
	struct offcpu_thread *a = bpf_map_lookup_elem(&offcpu_slots, &i);
	struct offcpu_thread *b = bpf_map_lookup_elem(&offcpu_slots, &j);
	struct offcpu_thread *t;
	__u64 old;

	if (!a || !b)
		return NULL;
	if (!a->id || (a->out_ns == 0 && b->id))
		t = a;
	else if (!b->id || b->out_ns == 0)
		t = b;
	else
		t = a;
	old = t->id;
#ifdef PYPERF_NO_BPF_LOOP
	/* no compare-and-swap before 5.12: two CPUs that claim one slot in
	 * the same instant both write it, and the later thread keeps it */
	t->id = id;
#else
	if (__sync_val_compare_and_swap(&t->id, old, id) != old)
		return NULL; /* another CPU claimed it this instant */
#endif
	if (old && t->out_ns)
		stat_inc(STAT_OFFCPU_LOST);
	t->out_ns = 0;
	t->win_ns = t->last_ns = 0;
	t->win_switches = t->prev_switches = 0;
	t->every = t->countdown = t->gap = 0;
	return t;
}

/* A walked block of task `task` ends: its time off the CPU, divided by the
 * probability it was walked with, goes to the stack walked. */
static __always_inline void block_ends(struct task_struct *task)
{
	struct offcpu_thread *t = slot_find((__u64)task->tgid << 32 | (__u32)task->pid);
	__u32 idx = active & 1;
	__u64 weight, *v, now, start;
	void *m;

	if (!t || !t->out_ns)
		return;
	now = bpf_ktime_get_ns(); /* only here and for a walked block: a clock read
				   * costs much of a switch's budget in a VM */
	/* taken and cleared at once: the loader credits a block still in
	 * flight at a drain by moving its start (sampler_flush_blocks) */
#ifdef PYPERF_NO_BPF_LOOP
	start = t->out_ns; /* no exchange before 5.12: a drain in this instant
			    * can count the time since the last one twice */
	t->out_ns = 0;
#else
	start = __sync_lock_test_and_set(&t->out_ns, 0);
#endif
	if (!start || now <= start)
		return;
	weight = (now - start) * (t->every ? t->every : 1);
	m = bpf_map_lookup_elem(&counts, &idx);
	if (!m)
		return;
	/* announced when walked; in the other map if the loader drained since */
	v = bpf_map_lookup_elem(m, &t->key);
	if (v)
		__sync_fetch_and_add(v, weight);
	else if (bpf_map_update_elem(m, &t->key, &weight, BPF_NOEXIST)) {
		v = bpf_map_lookup_elem(m, &t->key);
		if (!v) {
			stat_inc(STAT_MAP_FULL);
			return;
		}
		__sync_fetch_and_add(v, weight);
	} else {
		__sync_fetch_and_add(&map_fill[idx & 1], 1);
	}
	stat_inc(STAT_OFFCPU_BLOCKS);
	if (timeline)
		timeline_note(&t->key, start, now - start, weight, STACK_OFFCPU);
}

/* A profiled thread leaves the CPU (it is still current).  Its blocks are
 * walked about offcpu_walk_hz times a second at most, however often it
 * switches: with r its switch outs a second (the last whole second's, or
 * this one's so far scaled to a second, whichever is more), one block in
 * k = r / offcpu_walk_hz is walked (every block when k <= 1) and stands for
 * k.  Which one: the gap to the next walk is drawn uniformly from 1..2k-1
 * (mean k), so each block is walked with probability 1/k in the long run,
 * and no periodic pattern of the thread's blocks can alias with the walks.
 * A switch that is not walked costs a countdown, not a random draw. */
static __always_inline void block_starts(void *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, tid = (__u32)id, idx = active & 1, cpu;
	struct offcpu_thread *t;
	struct proc_info *p;
	struct scratch *s;
	__u64 rate, k, now, span;

	if (!tgid)
		return; /* an idle task */
	/* a thread found profiled since procs last changed needs no lookup;
	 * procs holds profiled processes only */
	t = slot_find(id);
	if (!t || t->epoch != procs_epoch) {
		__u32 epoch = procs_epoch;

		p = bpf_map_lookup_elem(&procs, &tgid);
		if (!p) {
			if (t)
				t->epoch = 0;
			if (is_profiled(tgid) && current_has_mm())
				announce_unknown(tgid, 0);
			return;
		}
		if (!t)
			t = slot_claim(id);
		if (!t)
			return;
		t->epoch = epoch;
	}
	t->out_ns = 0;
	/* the one-second window needs no exact time: a clock read (much of a
	 * switch's budget in a VM) every 64 switches, or the time of the last
	 * walk, which a thread that switches seldom has at every switch */
	if ((++t->win_switches & 63) == 0)
		t->last_ns = bpf_ktime_get_ns();
	if (t->countdown > 1) {
		t->countdown--;
		return;
	}
	stat_add(STAT_SWITCHES, t->gap ? t->gap : 1);
	now = t->last_ns;
	if (now - t->win_ns >= 1000000000ULL) {
		t->prev_switches = now - t->win_ns < 2000000000ULL ? t->win_switches : 0;
		t->win_switches = 0;
		t->win_ns = now;
	}
	/* this window's rate so far, over at least 100 ms: a thread's first
	 * window does not walk most of its blocks while its count grows */
	span = now - t->win_ns;
	if (span < 100000000ULL)
		span = 100000000ULL;
	rate = (__u64)t->win_switches * 1000000000ULL / span;
	if (rate < t->prev_switches)
		rate = t->prev_switches;
	k = offcpu_walk_hz ? rate / offcpu_walk_hz : 1;
	if (k < 1)
		k = 1;
	if (k > 65536)
		k = 65536;
	t->countdown = k == 1 ? 1 : 1 + bpf_get_prandom_u32() % (__u32)(2 * k - 1);
	t->gap = t->countdown;
	t->every = (__u32)k;
	p = bpf_map_lookup_elem(&procs, &tgid);
	cpu = bpf_get_smp_processor_id();
	s = bpf_map_lookup_elem(&scratch_map, &cpu);
	if (!p || !s)
		return;
	stat_inc(STAT_OFFCPU_WALKS);
	kernel_frames(ctx, s, kernel_stacks);
	user_regs_of(s, NULL);
	if (!walk_current(s, p, tgid, tid, idx, STACK_OFFCPU, s->hash, &t->key))
		return;
	/* announced now, counted when the thread runs again */
	if (!count_stack(p, &t->key, idx, 0))
		return;
	/* the block starts now, the walk done: it ran on the CPU */
	t->out_ns = t->last_ns = bpf_ktime_get_ns();
}

SEC("tp_btf/sched_switch")
int BPF_PROG(on_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	block_ends(next);
	if (!(prev->flags & PF_EXITING)) /* a thread that ends never comes back */
		block_starts(ctx);
	return 0;
}
