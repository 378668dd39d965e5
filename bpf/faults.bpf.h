/* faults.bpf.h - --mode faults: which page faults are walked
 * (included by pyperf.bpf.c, after the helpers and the stack walk). */

/* --mode faults: per CPU, page faults until the next pick */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} fault_countdown SEC(".maps");

/* bpf_find_vma's callback: is the mapping anonymous (no file behind it:
 * heap, anonymous mmap, stacks)? */
static long vma_is_anon(struct task_struct *task, struct vm_area_struct *vma, void *data)
{
	*(bool *)data = !vma->vm_file;
	return 0;
}

/* --mode faults: should this page fault (at addr, of a profiled process) be
 * walked?  One fault in fault_every is picked: the gap to the next is drawn
 * uniformly from 1..2*fault_every-1 faults, per CPU, so each fault is picked
 * with probability 1/fault_every whatever its pattern.  A picked fault is
 * walked if it is on anonymous memory (heap, anonymous mmap, stack: new
 * memory for the process, from a first touch, copy on write or swap-in) and
 * then stands for fault_every such faults.  The mapping is looked up only
 * for picked faults: bpf_find_vma costs several microseconds here, far more
 * than the countdown. */
static __always_inline bool fault_walked(__u64 addr)
{
	__u32 zero = 0, *left;
	bool anon = false;

	stat_inc(STAT_FAULTS);
	left = bpf_map_lookup_elem(&fault_countdown, &zero);
	if (!left)
		return false;
	if (*left > 1) {
		(*left)--;
		return false;
	}
	*left = fault_every <= 1 ? 1 : 1 + bpf_get_prandom_u32() % (2 * fault_every - 1);
	if (bpf_find_vma(bpf_get_current_task_btf(), addr, vma_is_anon, &anon, 0) || !anon)
		return false;
	stat_inc(STAT_FAULT_WALKS);
	return true;
}
