/* alloc.bpf.h - --mode alloc: the allocator probes, per process (uprobes on the C
 * library's malloc family), sampled by bytes
 * (included by pyperf.bpf.c through modes.bpf.h, after the helpers and the
 * stack walk). */
/* ---- allocations (--mode alloc) ---- */

/* `leaks`: sampled allocations not freed yet */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, struct live_key);
	__type(value, struct live_alloc);
} live_allocs SEC(".maps");

/* `leaks`: a thread's sampled allocation between the allocator's entry and
 * its return (the address), key: tid */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct pending_alloc);
} pending_allocs SEC(".maps");

/* `leaks`: objects (1/1024 units) sampled allocations stand for, by stack
 * (their bytes are in counts, the alloc_space profile) */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct stack_key);
	__type(value, __u64);
} alloc_objects SEC(".maps");

/* --mode alloc: pid -> its C library's code (written with its probes) */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct libc_text);
} libc_texts SEC(".maps");

/* per CPU, bytes still to allocate before the next sampled allocation */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __s64);
} alloc_left SEC(".maps");

/* A profiled thread asks its allocator for size bytes (the uprobes are
 * attached to the profiled processes only).  Bytes are sampled like
 * tcmalloc's and Go's heap profilers do: each byte is picked with
 * probability 1/alloc_interval (a countdown of bytes, per CPU, whose gaps are
 * drawn from an exponential distribution with that mean), and an
 * allocation that holds a picked byte is walked.  It was picked with
 * probability 1 - exp(-size/interval), so it stands for size / (1 -
 * exp(-size/interval)) bytes: about the interval for a small one, its own
 * size for a large one. */
static __always_inline void alloc_seen(struct pt_regs *ctx, __u64 size, __u64 out)
{
	__u64 id = bpf_get_current_pid_tgid(), weight, x, objs, *o;
	__u32 tgid = id >> 32, tid = (__u32)id, zero = 0, i, cpu;
	struct pending_alloc *pa;
	struct scratch *s;
	__s64 *left;

	if (!tgid || !size || !alloc_interval || !is_profiled(tgid))
		return;
	stat_inc(STAT_ALLOCS);
	left = bpf_map_lookup_elem(&alloc_left, &zero);
	if (!left)
		return;
	*left -= (__s64)size;
	if (*left > 0)
		return;
	i = bpf_get_prandom_u32() % ALLOC_GAPS;
	*left = (__s64)(alloc_gap[i & (ALLOC_GAPS - 1)] * alloc_interval / 1024) + 1;
	x = size * ALLOC_XSTEPS / (alloc_interval * ALLOC_XMAX);
	weight = x < ALLOC_XSTEPS ? alloc_weight[x & (ALLOC_XSTEPS - 1)] * alloc_interval / 1024
				  : size;
	stat_inc(STAT_ALLOC_WALKS);
	/* the pending allocation is built in the CPU's scratch, not on the
	 * stack (struct scratch says why) */
	cpu = bpf_get_smp_processor_id();
	s = bpf_map_lookup_elem(&scratch_map, &cpu);
	if (!s)
		return;
	pa = &s->alloc;
	if (!sample_current(ctx, (const struct ctx_regs *)ctx, weight, &pa->a.key) || !alloc_live)
		return;
	/* leaks: the address comes at the allocator's return */
	pa->a.weight = weight;
	pa->a.size = size;
	pa->a.ns = bpf_ktime_get_ns();
	pa->out = out;
	bpf_map_update_elem(&pending_allocs, &tid, pa, BPF_ANY);
	objs = weight * 1024 / size;
	o = bpf_map_lookup_elem(&alloc_objects, &pa->a.key);
	if (o)
		__sync_fetch_and_add(o, objs);
	else
		bpf_map_update_elem(&alloc_objects, &pa->a.key, &objs, BPF_NOEXIST);
}

/* leaks: the allocator returns the address of a sampled allocation (in
 * rax, or where posix_memalign was told to put it) */
SEC("uretprobe")
int BPF_KRETPROBE(on_alloc_ret, __u64 ret)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id;
	struct pending_alloc *pa = bpf_map_lookup_elem(&pending_allocs, &tid);
	struct live_key k = { .pid = id >> 32 };

	if (!pa)
		return 0;
	k.addr = ret == ~0ULL ? 0 : ret; /* mmap's MAP_FAILED */
	if (pa->out && bpf_probe_read_user(&k.addr, sizeof(k.addr), (void *)pa->out))
		k.addr = 0;
	if (pa->out && ret) /* posix_memalign failed: an error number */
		k.addr = 0;
	if (k.addr && bpf_map_update_elem(&live_allocs, &k, &pa->a, BPF_ANY))
		stat_inc(STAT_LIVE_FULL);
	bpf_map_delete_elem(&pending_allocs, &tid);
	return 0;
}

/* leaks: memory given back; only sampled allocations are in the map */
static __always_inline void alloc_gone(__u64 addr)
{
	struct live_key k = { .pid = bpf_get_current_pid_tgid() >> 32, .addr = addr };

	if (addr)
		bpf_map_delete_elem(&live_allocs, &k);
}

SEC("uprobe")
int BPF_KPROBE(on_free, __u64 addr)
{
	alloc_gone(addr);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(on_malloc, __u64 size)
{
	alloc_seen(ctx, size, 0);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(on_calloc, __u64 n, __u64 size)
{
	alloc_seen(ctx, n * size, 0);
	return 0;
}

/* realloc: the block it had is given back (a new one may be sampled) */
SEC("uprobe")
int BPF_KPROBE(on_realloc, __u64 addr, __u64 size)
{
	if (alloc_live)
		alloc_gone(addr);
	alloc_seen(ctx, size, 0);
	return 0;
}

/* aligned_alloc and memalign: the size is the second argument */
SEC("uprobe")
int BPF_KPROBE(on_alloc_arg2, __u64 a, __u64 size)
{
	alloc_seen(ctx, size, 0);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(on_posix_memalign, __u64 out, __u64 align, __u64 size)
{
	alloc_seen(ctx, size, out);
	return 0;
}

/* 1: the mmap whose stack pointer is sp was called from the C library's
 * own text (or its return address cannot be read).  A function of its own,
 * so that its stack is not added to that of the walk alloc_seen makes:
 * without bpf_loop (5.10) that chain of calls comes near 5.10's limit of
 * 512 bytes (scripts/bpf-stack). */
static __noinline int mmap_by_libc(__u64 sp)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct libc_text *t = bpf_map_lookup_elem(&libc_texts, &tgid);
	__u64 ret = 0;

	if (bpf_probe_read_user(&ret, sizeof(ret), (void *)sp))
		return 1;
	return t && ret >= t->lo && ret < t->hi;
}

/* Anonymous memory mapped by the program itself: pymalloc's arenas (small
 * objects' growth shows as the arenas it needed), buffers that extensions
 * map.  malloc maps its large blocks with the same function, from inside
 * the C library: those were counted at malloc and are left out here (as
 * are thread stacks, which the C library maps too). */
SEC("uprobe")
int BPF_KPROBE(on_mmap, __u64 addr, __u64 len, __u64 prot, __u64 flags)
{
	if (!(flags & 0x20)) /* MAP_ANONYMOUS */
		return 0;
	if (mmap_by_libc(PT_REGS_SP(ctx)))
		return 0;
	alloc_seen(ctx, len, 0);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(on_munmap, __u64 addr)
{
	if (alloc_live)
		alloc_gone(addr);
	return 0;
}
