/* events.bpf.h - --events: CPython's own USDT markers, timed in the kernel.
 *
 * Interpreters built with --with-dtrace (Debian's, Fedora's) carry
 * SystemTap notes at their collector's and importer's start and end.  The
 * loader attaches these programs once per interpreter binary (libbpf's USDT
 * support: the note's address, its argument specs and its semaphore), for
 * every process that maps it; a hit of a process the sampler does not
 * profile returns at once.  Start times are kept per thread (a collection
 * does not nest; imports do, PYPERF_IMPORT_DEPTH deep), and each end sends
 * one record with the duration on the ring buffer.  Nothing here runs
 * unless --events asks for it (the programs are not even loaded). */
#include <bpf/usdt.bpf.h>

struct gc_start {
	__u64 ns;
	__s32 generation;
	__u32 pad;
};

/* tid -> the collection it runs */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct gc_start);
} gc_starts SEC(".maps");

struct import_starts {
	__u32 depth;
	__u32 pad;
	__u64 ns[PYPERF_IMPORT_DEPTH];
};

/* tid -> the imports it is in, outermost first */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct import_starts);
} import_starts SEC(".maps");

static __always_inline bool event_wanted(__u32 tgid)
{
	return bpf_map_lookup_elem(&procs, &tgid) != NULL;
}

SEC("usdt")
int BPF_USDT(on_gc_start, int generation)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id;
	struct gc_start g = { .ns = bpf_ktime_get_ns(), .generation = generation };

	if (!event_wanted(id >> 32))
		return 0;
	bpf_map_update_elem(&gc_starts, &tid, &g, BPF_ANY);
	return 0;
}

SEC("usdt")
int BPF_USDT(on_gc_done, long collected)
{
	__u64 id = bpf_get_current_pid_tgid(), now = bpf_ktime_get_ns();
	__u32 tid = (__u32)id;
	struct gc_start *g = bpf_map_lookup_elem(&gc_starts, &tid);
	struct ev_gc *e;

	if (!g)
		return 0;
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (e) {
		e->kind = EV_GC;
		e->pid = id >> 32;
		e->tid = tid;
		e->generation = g->generation;
		e->start_ns = g->ns;
		e->ns = now - g->ns;
		e->collected = collected;
		bpf_ringbuf_submit(e, 0);
	} else {
		stat_inc(STAT_EVENTS_LOST);
	}
	bpf_map_delete_elem(&gc_starts, &tid);
	return 0;
}

SEC("usdt")
int BPF_USDT(on_import_start, void *name)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id, d;
	struct import_starts *st, fresh = {};

	if (!event_wanted(id >> 32))
		return 0;
	st = bpf_map_lookup_elem(&import_starts, &tid);
	if (!st) {
		bpf_map_update_elem(&import_starts, &tid, &fresh, BPF_NOEXIST);
		st = bpf_map_lookup_elem(&import_starts, &tid);
		if (!st)
			return 0;
	}
	d = st->depth;
	if (d < PYPERF_IMPORT_DEPTH)
		st->ns[d] = bpf_ktime_get_ns();
	st->depth = d + 1; /* deeper ones are counted, not timed */
	return 0;
}

SEC("usdt")
int BPF_USDT(on_import_done, void *name, int found)
{
	__u64 id = bpf_get_current_pid_tgid(), now = bpf_ktime_get_ns();
	__u32 tid = (__u32)id, d;
	struct import_starts *st = bpf_map_lookup_elem(&import_starts, &tid);
	struct ev_import *e;

	if (!st || !st->depth)
		return 0;
	d = --st->depth;
	if (d >= PYPERF_IMPORT_DEPTH)
		return 0;
	/* the mask, kept through the compiler, bounds the index for the verifier */
	d &= PYPERF_IMPORT_DEPTH - 1;
	asm volatile("" : "+r"(d));
	d &= PYPERF_IMPORT_DEPTH - 1;
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		stat_inc(STAT_EVENTS_LOST);
		return 0;
	}
	e->kind = EV_IMPORT;
	e->pid = id >> 32;
	e->tid = tid;
	e->depth = d;
	e->start_ns = st->ns[d];
	e->ns = now - e->start_ns;
	if (bpf_probe_read_user_str(e->name, sizeof(e->name), name) < 0)
		e->name[0] = 0;
	bpf_ringbuf_submit(e, 0);
	return 0;
}
