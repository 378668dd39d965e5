/* faults.bpf.h - --mode faults: which page faults are walked
 * (included by pyperf.bpf.c through modes.bpf.h, after the helpers and the
 * stack walk). */

/* --mode faults: per CPU, page faults until the next pick */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} fault_countdown SEC(".maps");

#ifdef PYPERF_NO_BPF_LOOP
/* Before 5.17 there is no bpf_find_vma (nor bpf_loop: this object,
 * loop.bpf.h); those kernels keep a process's mappings in a red-black tree
 * (mm_rb, until the maple tree of 6.1), which is searched here instead.
 * The kernel's vmlinux.h comes from a newer kernel without these fields:
 * the ___rb flavours name them for CO-RE. */
struct mm_struct___rb {
	struct rb_root mm_rb;
} __attribute__((preserve_access_index));

struct vm_area_struct___rb {
	unsigned long vm_start, vm_end;
	struct rb_node vm_rb;
	struct file *vm_file;
} __attribute__((preserve_access_index));

/* is addr in an anonymous mapping of the current process?  A kernel with
 * neither bpf_find_vma nor the tree (this object forced onto a newer one,
 * PYPERF_BPF_LOOP=0) cannot tell: every picked fault is walked. */
static __always_inline bool addr_is_anon(__u64 addr)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	struct mm_struct___rb *mm = (struct mm_struct___rb *)BPF_CORE_READ(task, mm);
	struct vm_area_struct___rb *vma;
	struct rb_node *node;
	__u64 start, end;

	if (!bpf_core_field_exists(mm->mm_rb))
		return true;
	if (!mm)
		return false;
	node = BPF_CORE_READ(mm, mm_rb.rb_node);
	/* a red-black tree of 2^24 mappings is at most 48 deep */
	WALK_UNROLL
	for (int i = 0; i < 48; i++) {
		if (!node)
			break;
		vma = (struct vm_area_struct___rb *)((char *)node -
			bpf_core_field_offset(struct vm_area_struct___rb, vm_rb));
		start = BPF_CORE_READ(vma, vm_start);
		end = BPF_CORE_READ(vma, vm_end);
		if (addr < start)
			node = BPF_CORE_READ(node, rb_left);
		else if (addr >= end)
			node = BPF_CORE_READ(node, rb_right);
		else
			return !BPF_CORE_READ(vma, vm_file);
	}
	return false;
}
#else
/* bpf_find_vma's callback: is the mapping anonymous (no file behind it:
 * heap, anonymous mmap, stacks)? */
static long vma_is_anon(struct task_struct *task, struct vm_area_struct *vma, void *data)
{
	*(bool *)data = !vma->vm_file;
	return 0;
}

static __always_inline bool addr_is_anon(__u64 addr)
{
	bool anon = false;

	return !bpf_find_vma(bpf_get_current_task_btf(), addr, vma_is_anon, &anon, 0) && anon;
}
#endif

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

	stat_inc(STAT_FAULTS);
	left = bpf_map_lookup_elem(&fault_countdown, &zero);
	if (!left)
		return false;
	if (*left > 1) {
		(*left)--;
		return false;
	}
	*left = fault_every <= 1 ? 1 : 1 + bpf_get_prandom_u32() % (2 * fault_every - 1);
	if (!addr_is_anon(addr))
		return false;
	stat_inc(STAT_FAULT_WALKS);
	return true;
}
