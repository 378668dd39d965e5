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
 * The walks live in python_walk.bpf.h and native_unwind.bpf.h (with the
 * unwinder's step shared with user space, unwind_step.h); this file holds
 * the maps, the sampling program and the process lifecycle hooks.
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
#define PF_EXITING 0x00000004 /* include/linux/sched.h */
#define NEW_PID_RETRY_NS (50ULL * 1000 * 1000)   /* re-announce an unclassified pid */
#define NO_TSTATE_RETRY_NS (20ULL * 1000 * 1000)  /* re-walk threads for a native thread */
#define NO_TSTATE_RECHECK_NS (1000ULL * 1000 * 1000) /* ... even when no thread state is new */

/* Only sample processes in `targets` (-p, or a command and its children). */
const volatile bool filter_targets = false;
/* Add the kernel stack of samples taken in the kernel. */
const volatile bool kernel_stacks = true;
/* Unwind the native user stack (CFI tables from the loader). */
const volatile bool native_stacks = true;
/* code without CFI whose frame pointer chain fails is left by a scan of the
 * stack (native_unwind.bpf.h); false: it ends the walk */
const volatile bool stack_scan = true;
/* What one cpu-clock sample adds to its stack: 1 (--mode cpu, counts are
 * samples), or the sampling period in ns (--mode wall, counts are ns). */
const volatile __u64 cpu_weight = 1;
/* --gil: keep only samples of the thread that holds the GIL */
const volatile bool gil_only = false;
/* --mode wall|offcpu: blocks walked per second per thread, about (on_switch) */
const volatile __u32 offcpu_walk_hz = 200;
/* --mode wall|offcpu: the sched_switch hook runs, over 1 << offcpu_slot_bits
 * threads' slots (offcpu_slots) */
const volatile bool offcpu = false;
const volatile __u32 offcpu_slot_bits = 16;
/* --async: note the asyncio task each sample's thread runs */
const volatile bool async_stacks = false;
/* --mode faults: one page fault in about this many is picked, and walked
 * if on anonymous memory (0: not that mode; cpu_weight is then the bytes a
 * walk stands for) */
const volatile __u32 fault_every = 0;
/* --mode alloc: the mean number of bytes between two sampled allocations
 * (0: not that mode), a table of exponential gaps with that mean (in
 * 1/1024 of it) and the weight of a sampled allocation (in 1/1024 of the
 * interval) by its size (see alloc_seen) */
const volatile __u64 alloc_interval = 0;
const volatile __u32 alloc_gap[ALLOC_GAPS] = {};
const volatile __u32 alloc_weight[ALLOC_XSTEPS] = {};
/* `leaks`: keep each sampled allocation in live_allocs until it is freed */
const volatile bool alloc_live = false;
/* -f timeline: every counted sample also goes to the ring buffer with its
 * time (false: the verifier drops that code) */
const volatile bool timeline = false;

/* Which of the two counts maps the sampler fills; the loader flips it. */
__u32 active = 0;
/* Bumped by every change of `procs` (here and by the loader): a thread's
 * off-CPU state remembers the epoch its process was found in procs, and
 * skips that lookup, a good part of a context switch's cost, until the
 * next change. */
__u32 procs_epoch = 1;
/* counts[i] was found full: new keys are dropped without being announced
 * (which would cost a ring buffer record per sample) until the loader has
 * drained it and clears the flag. */
__u32 map_full[2] = {}; /* initialised: laid out where defined, in both objects */
/* the keys added to counts[i] since the loader last emptied it: from
 * counts_wake_at on, each new stack wakes the loader to drain it before it
 * fills (its next turn may be a second away) */
__u32 map_fill[2] = {};
const volatile __u32 counts_wake_at = PYPERF_COUNTS_ENTRIES / 2;
/* Bumped by the loader when it forgets stacks or threads' names (the
 * daemon, at the end of each interval): each stack is announced once more
 * (the announced map). */
__u32 announce_epoch = 0;

/* The loader's clock (CLOCK_MONOTONIC ns, bpf_ktime_get_ns's), set at each
 * turn of its loop (about once a second, sooner when woken): when a native
 * table was last used, to the turn (table_used).  A clock read in each
 * sample instead cost ~45 ns of ~3,700. */
__u64 table_clock = 0;

/* tgid -> interpreter address and offsets; written by the loader.  Not
 * preallocated where the kernel allows (6.1, sampler.c): a run profiles a
 * few processes, and a preallocated map is filled at every start (0.85
 * MiB of a -p run's, 3.4 of a host-wide one's). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u32);
	__type(value, struct proc_info);
} procs SEC(".maps");

/* tgid -> 1 for the processes to profile when filter_targets is set (not
 * preallocated where the kernel allows, as procs) */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__uint(map_flags, BPF_F_NO_PREALLOC);
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

/* the code objects of new stacks (struct code_id, pyperf.h), for the
 * loader to name those freed before it read them */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct code_id_key);
	__type(value, struct code_id);
} code_ids SEC(".maps");

/* The Python parts (frames, lines, globals, task) of the stacks the loader
 * was woken for: a new stack whose Python part is here (a merged run's new
 * native pcs under Python frames seen before) waits for the loader's next
 * poll, its code objects named already. */
struct py_part {
	__u32 tgid;
	__u32 gen;
	__u64 hash;
};
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 8192);
	__type(key, struct py_part);
	__type(value, __u8);
} py_seen SEC(".maps");

/* tid -> its PyThreadState (struct tstate_cache, pyperf.h) */
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

/* The stacks announced to the loader, with the value of announce_epoch
 * then.  A stack new in the counts map that was announced
 * since the loader last forgot any is counted without announcing it again:
 * every drain makes every stack new in its map, and announcing each again
 * (a record of ~1 KiB, its code objects checked) was a good part of a
 * merged sample's cost.  LRU: a stack that falls out is announced again. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, PYPERF_COUNTS_ENTRIES);
	__type(key, struct stack_key);
	__type(value, __u32);
} announced SEC(".maps");

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
 * back off by page (stray_pcs), and the loader pauses a process's rereads
 * for longer after one that found nothing new */
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

/* new stacks and process events for the loader (the loader sizes it by
 * the CPUs: sampler.c) */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4 << 20);
} events SEC(".maps");
/* bytes waiting from which any new stack wakes the loader: a quarter */
const volatile __u32 ringbuf_wake_at = 1 << 20;
/* A record the loader must see now (a process event, a table or mappings
 * wanted, a new Python part, a filling map or ring) wakes it whatever is
 * waiting before it.  The ring's default (flags 0) wakes only a reader that
 * has read everything, and most new stacks go in without a wake-up: behind
 * one, a record with flags 0 would wait for the loader's next turn, which
 * is up to a second away (it sleeps until a task is due: session.c). */
#define RB_WAKE BPF_RB_FORCE_WAKEUP

/* A code address and its unwind row, cached per CPU: the same call sites
 * come back sample after sample (and frame after frame in recursion), and so
 * do the leaves of a hot loop; a hit skips both binary searches.  Keyed with
 * the process image (tgid, gen): addresses mean nothing across processes,
 * and a binary's rows never change once written. */
#define ROW_CACHE_SIZE 2048
struct row_cache_entry {
	__u64 pc;                /* the address looked up (a return address - 1) */
	__u32 tgid, gen;
	struct unwind_row row;
	__u64 leaf;              /* as a leaf, the pc pushed (its row's start); 0: its own */
	__u32 table;             /* the table the row came from, marked used on a hit */
	__u32 pad;
};

/* Where a scan of the stack found the return address of a frame without
 * CFI, by the frame's code (16-byte blocks of it), per CPU: a JIT kernel's
 * frame has the same size each time it is sampled at the same place, and a
 * hit checks one word instead of scanning up to it.  Keyed like the row
 * cache; a hit is checked as a scanned word is, a miss scans. */
#define SCAN_CACHE_SIZE 256
struct scan_cache_entry {
	__u64 block;             /* pc >> 4 */
	__u32 tgid, gen;
	__u32 words;             /* the return address at sp + 8 * words */
	__u32 pad;
};

/* The walks' state (loop.bpf.h: it lives in the scratch map, not on the
 * stack): the thread states' list (python_walk.bpf.h) ... */
struct thread_walk {
	__u64 tstate;
	__u64 want;               /* pthread id == FS base of the thread */
	__u64 found;
	__u16 next_off, id_off;
	/* every interpreter (3.12+): the one whose threads are walked, and the
	 * thread's states found, innermost (newest interpreter) first */
	__u16 interp_next, interp_threads, interp_id;
	__u16 nfound;
	__u64 interp;
	__u64 all[PYPERF_MAX_NEST];
	__u64 ids[PYPERF_MAX_NEST];
	struct tstate_cache fresh; /* the walk's entry for tcache (here, not on the
				  * stack: its values would keep the verifier's
				  * ways to the loop apart) */
};

/* ... the Python frames (python_walk.bpf.h) ... */
struct frame_walk {
	__u64 frame;
	__u64 before;            /* the frame walked before the current one */
	__u64 hash;
	__u32 flags;
	__u32 read_len;          /* bytes of a frame to read */
	__u32 win_size;          /* bytes to read below a frame (3.11+ frames are stacked) */
	__u16 code_lo, code_len; /* span of a code object holding the check fields */
	/* --async: the leaf-side run of frames up to the first shim, and the
	 * outermost coroutine frame in it (the running task's own coroutine) */
	__u64 anchor_frame;
	__u32 anchor_n;          /* frames up to and including it; 0: none */
	__u32 seg_closed;        /* a shim was passed: later frames are the
				  * event loop's, not the task's */
	/* a thread in a subinterpreter: the state whose frames are walked
	 * (tw.all[nest_at]) of the nest_n found, innermost first */
	__u32 nest_at, nest_n;
	__u32 nest_start;        /* ev.nframes when this interpreter's frames began */
	__u32 pad2;
	__u64 c_sp;              /* the thread's user stack pointer (frame_bytes) */
	__u64 tstate;            /* the thread state walked (0: none), kept here
				  * across the frame loop (walk_frames) */
};

/* A code object check_step has checked for the stack it names (a small
 * direct-mapped cache, emptied for each stack): a recursive function's
 * frames share one, read once.  Within one sample an address is one
 * object: the thread is stopped, and its frames hold their code objects. */
#define CODE_SEEN 8
struct code_seen {
	__u64 code;
	__u32 check;
	__u32 pad;
};

/* ... and the native frames (native_unwind.bpf.h) */
struct native_walk {
	struct unwind_regs g;    /* the frame being unwound */
	__u64 hash;
	__u64 scan_lo, scan_hi;  /* a scan's bounds: the first mapping's start, the last's end */
	__u32 gen;               /* the process image's (proc_info.gen) */
	__u32 pad;
};

/* `leaks`: a thread's sampled allocation between the allocator's entry and
 * its return (the address), key: tid (modes/alloc.bpf.h) */
struct pending_alloc {
	struct live_alloc a;
	__u64 out;                   /* posix_memalign: where the address goes; 0: returned */
};

/* per-CPU scratch: the stack being built, a window of frame memory, a code
 * object, and what would otherwise sit on the BPF stack.  The programs'
 * stacks and those of the functions they call add up, and every kernel
 * before private stacks (6.13) refuses a chain of calls over 512 bytes:
 * what is big or only passed through lives here instead.
 *
 * The walk's small fields come first, right after the counts, its buffers
 * after them: an instruction reaches a field at up to 32 KiB from the
 * scratch's address in its own offset, and beyond that must compute the
 * address first.  With the walks' state at the end, past the 16 KiB event,
 * each access was two instructions and a register more: on 6.18 the
 * verifier processed 13 % more of on_sample, ~1.4 ms of a recording's
 * start-up. */
struct scratch {
	__u64 stat[STAT_SLOTS];  /* this CPU's counts of the sampler's own walks
				  * (sstat): first, where the loader reads them */
	struct frame_walk fw;
	struct native_walk nw;
	struct stack_key key;     /* the key of the sample being taken (sample_current) */
	struct unwind_regs regs0; /* the user registers the native walk starts from */
	__u64 win_lo, win_hi;    /* target addresses held in window (kept here, not on
				  * the stack, so the verifier does not track them) */
	__u64 ts_at;             /* the thread state whose first TS_WINDOW bytes tsw holds
				  * (find_tstate); 0: none */
	__u32 epoch;             /* announce_epoch, as count_stack read it */
	__u32 lo, hi;            /* binary search bounds, kept here so the verifier
				  * sees unknown values and prunes the loop */
	__u64 stk_lo, stk_hi;    /* user stack addresses held in stk */
	__u64 now;               /* table_clock when the sample was taken (table_used) */
	struct unwind_row row;   /* the frame's rule, while native_step uses it */
	__u32 last;              /* 1 + the mapping of the last frame; 0: none */
	__u32 used;              /* the table last marked used in this sample */
	__u64 hash;              /* the stack's hash, into and out of unwind_native */
	__u64 py_hash;           /* its Python part's (walk_current), for py_seen */
	__u32 nflags;            /* STACK_NATIVE* of the walk (here, not on the stack:
				  * each new value would make the verifier check
				  * native_step again) */
	__u32 scan_mark;         /* the next frame pushed was found by a scan */
	__u32 scan_wanted;       /* a native step asks unwind_native to scan */
	__u32 then;              /* what follows the frame native_frame pushes */
	__u64 scan_sp, scan_pc;  /* what the scan found (0: nothing) */
	struct code_seen cseen[CODE_SEEN]; /* the code objects check_step checked
				  * for the stack being announced */
	struct thread_walk tw;
	__u8 tsw[TS_WINDOW + 8];
	struct ev_stack ev;
	__u8 window[PYPERF_WINDOW + PYPERF_FRAME_READ_MAX + 8];
	__u8 code_buf[PYPERF_FRAME_READ_MAX + 8];
	__u8 stk[PYPERF_STACK_WINDOW + 8];
	struct row_cache_entry rcache[ROW_CACHE_SIZE];
	struct scan_cache_entry scache[SCAN_CACHE_SIZE];
	struct unwind_regs fp_g;  /* a frame-pointer step being tried (fp_step_plausible) */
	__u8 code8[16];           /* the bytes before a return address (after_call) */
	struct pending_alloc alloc; /* --mode alloc: the allocation being sampled */
	struct code_id cid;       /* a code object's identity, for code_ids */
	struct code_id_key cid_key;
	__u8 wire[EV_WIRE_MAX];  /* ev packed for the ring buffer (pyperf.h) */
	struct tstate_cache no_tc; /* never written: find_tstate_slow's entry for a
				  * thread not in tcache */
};
/* the walk's state within an instruction's reach (above) */
_Static_assert(__builtin_offsetof(struct scratch, ev) < 32768 - 256,
	       "the walk's small fields lie within 32 KiB of the scratch's start");
/* One struct scratch per CPU, indexed by CPU number (a per-CPU array value
 * is limited to 32 KB, and this is more); the loader sets max_entries to the
 * number of possible CPUs.  on_sample and on_switch use it; neither nests
 * in the other (the cpu-clock event is an hrtimer interrupt, and the
 * scheduler switches tasks with interrupts off).  Mappable (5.5): the
 * loader reads the counts at its head in place, not 160 KB a CPU copied. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct scratch);
} scratch_map SEC(".maps");
/* the loader reads each CPU's counts at the start of its value (mmap'ed:
 * sampler_stats) */
_Static_assert(__builtin_offsetof(struct scratch, stat) == 0 && STAT_NR <= STAT_SLOTS,
	       "struct scratch opens with the counts");

/* enum stat_idx -> count, per CPU: the counts of the programs beside
 * on_sample's walk (modes, probes, events); the walk's own are in each
 * CPU's struct scratch (sstat), and the loader adds both up */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, STAT_NR);
	__type(key, __u32);
	__type(value, __u64);
} stats SEC(".maps");

/* v, at most max, in a form every verifier keeps: one 64-bit compare and
 * move on the register itself.  A C clamp may be compiled as a compare of
 * a copy (or of its low 32 bits), whose bound the verifiers before 6.x do
 * not carry over to the register then used (Linux 6.1 refused pack_stack
 * so).  The verifier walks a jump's fall-through first: that is the path
 * that keeps v, [0, max], so the path that sets v = max, walked later,
 * meets that state where the two join and is done (the other way round,
 * each clamp doubled the paths after it). */
#define CLAMP(v, max) asm volatile("if %0 > %1 goto +1; goto +1; %0 = %1" : "+r"(v) : "i"(max))

/* v & mask as an index the verifier sees bounded.  The compiler drops a
 * mask it proves redundant (an index checked against the array's length
 * just before), and 5.10's verifier then loses that check's bound on the
 * way to the access (it refused frame_step so); this mask stays. */
#define MASKED(v, mask)                                                         \
	({                                                                      \
		__u64 _m = (v);                                                 \
		asm volatile("%0 &= %1" : "+r"(_m) : "i"(mask));                \
		_m;                                                             \
	})

static __always_inline void stat_add(__u32 idx, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(&stats, &idx);

	if (v)
		*v += n;
}

static __always_inline void stat_inc(__u32 idx)
{
	stat_add(idx, 1);
}

/* A count of the sampler's walk, in the CPU's scratch: no map lookup (a
 * lookup's test of its result splits the verifier's paths, and each
 * lookup is a call the verifier rewrites in place, which copies the whole
 * program), and, with a condition's bit for n, no branch either. */
#define sstat(s, idx, n) ((s)->stat[(idx)] += (n))
/* 1 if flags has bit (a power of 2) set, 0 if not, without a branch */
#define BIT_OF(flags, bit) (((flags) / (bit)) & 1)
/* 1 if the address (below 2^63) is not 0, 0 if it is: without a branch,
 * which would split the verifier's paths into a 0 and a non-0 one */
#define NONZERO(a) ((((__u64)(a)) | -((__u64)(a))) >> 63)

/* The word at addr in the current task's memory, 0 if unreadable: the
 * helper zeroes what it could not copy.  Not tested: a test of its result
 * splits every path after it in two (a 0 here, an unknown there), and the
 * verifier walked both. */
static __always_inline __u64 read_ptr(__u64 addr)
{
	__u64 v;

	bpf_probe_read_user(&v, sizeof(v), (void *)addr);
	return v;
}

static __always_inline bool is_profiled(__u32 tgid)
{
	return !filter_targets || bpf_map_lookup_elem(&targets, &tgid);
}

static __always_inline void send_event(__u32 kind, __u32 pid)
{
	struct ev_header ev = { .kind = kind, .pid = pid };

	bpf_ringbuf_output(&events, &ev, sizeof(ev), RB_WAKE);
}

/* A process we cannot sample yet: ask the loader, at most every 50 ms (the
 * loader may push retry_after further out for processes that are not Python).
 * weight: what this event would have counted (a CPU sample's), added up for
 * a process the loader refused (never announced again) and for no other. */
static __always_inline void announce_unknown(__u32 tgid, __u64 weight)
{
	struct skip_info *s = bpf_map_lookup_elem(&skip, &tgid);
	__u64 now = bpf_ktime_get_ns();
	struct skip_info next = { .retry_after_ns = now + NEW_PID_RETRY_NS };
	struct ev_header ev = { .kind = EV_NEW_PID, .pid = tgid };

	if (s && now < s->retry_after_ns) {
		if (s->refused && weight)
			__sync_fetch_and_add(&s->weight, weight);
		return;
	}
	bpf_map_update_elem(&skip, &tgid, &next, BPF_ANY);
	if (bpf_ringbuf_output(&events, &ev, sizeof(ev), RB_WAKE) == 0)
		stat_inc(STAT_NEW_PID_EVENTS);
}

/* the walks' loops, the Python walk (thread state, frames), then the
 * native unwinder */
#include "loop.bpf.h"
#include "python_walk.bpf.h"
#include "native_unwind.bpf.h"

/* Pack the CPU's s->ev into s->wire (see EV_WIRE_HEAD); returns its
 * length, 0 on a failed copy.  VERIFIED_ONCE, with no argument: inlined,
 * its three copies of lengths that may be 0 split every later path of
 * count_stack in eight (their sums differ), 1,500 of the 14,600
 * instructions the verifier processed for on_sample; nor does it test
 * the lengths (a copy of 0 bytes is allowed, and does nothing). */
VERIFIED_ONCE __u64 pack_stack(void)
{
	__u32 cpu = bpf_get_smp_processor_id();
	struct scratch *s = bpf_map_lookup_elem(&scratch_map, &cpu);
	__u64 nf, nn, nk, fbytes, nbytes, kbytes;

	if (!s)
		return 0;
	nf = s->ev.nframes;
	nn = s->ev.nnative;
	nk = s->ev.nkernel;
	CLAMP(nf, PYPERF_MAX_FRAMES);
	CLAMP(nn, PYPERF_MAX_NATIVE);
	CLAMP(nk, PYPERF_KSTACK_DEPTH);
	fbytes = nf * sizeof(struct py_frame);
	nbytes = nn * 8;
	kbytes = nk * 8;
	if (bpf_probe_read_kernel(s->wire, EV_WIRE_HEAD, &s->ev))
		return 0;
	if (bpf_probe_read_kernel(s->wire + EV_WIRE_HEAD, fbytes, s->ev.frames) ||
	    bpf_probe_read_kernel(s->wire + EV_WIRE_HEAD + fbytes, nbytes, s->ev.native) ||
	    bpf_probe_read_kernel(s->wire + EV_WIRE_HEAD + fbytes + nbytes, kbytes, s->ev.kernel))
		return 0;
	return EV_WIRE_HEAD + fbytes + nbytes + kbytes;
}

/* -f timeline: this sample in time.  Wakes nobody unless the ring is
 * filling: the loader takes the records at its next turn (within a second),
 * and the stack it names was announced before it. */
static __always_inline void timeline_note(const struct stack_key *key, __u64 ts, __u64 dur,
					  __u64 weight, __u32 flags)
{
	struct ev_sample *e;

	if (!timeline || !weight)
		return;
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		stat_inc(STAT_TIMELINE_LOST);
		return;
	}
	e->kind = EV_SAMPLE;
	e->pid = key->pid;
	e->tid = key->tid;
	e->gen = key->gen;
	e->hash = key->hash;
	e->ts = ts;
	e->dur = dur;
	e->weight = weight;
	e->flags = flags;
	e->cpu = bpf_get_smp_processor_id();
	bpf_ringbuf_submit(e, bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) > ringbuf_wake_at ?
			      RB_WAKE : BPF_RB_NO_WAKEUP);
}

/* Add weight to this stack (one sample, or nanoseconds).  When the key is new
 * in this counts map and was not announced since the loader last forgot
 * stacks (announced), name its code objects (check_step) and announce it;
 * samples of a known key read no code object at all.  false: not counted
 * (map or ring buffer full). */
#ifdef PYPERF_NO_BPF_LOOP
/* a function of its own all the same: inlined, its stack would be the
 * caller's, on top of the native walk's chain (5.10's 512 bytes) */
static __noinline
#else
VERIFIED_ONCE
#endif
int count_stack(struct proc_info *p, const struct stack_key *key_in, __u32 idx, __u64 weight)
{
	/* A global function's pointer arguments are plain memory to the
	 * verifier, which older kernels' map helpers refuse as keys and
	 * values (6.1's did): the scratch is looked up again (a map value),
	 * the key copied to the stack. */
	struct walk_ctx c = { .p = p };
	void *m = bpf_map_lookup_elem(&counts, &idx);
	struct stack_key key;
	struct py_part part;
	struct scratch *s;
	__u64 *v, size;
	__u32 *seen;
	__u8 one = 1;
	bool wake;
	long err;

	if (!m || !p || !key_in || !walk_ctx_of(&c, key_in->pid, 0))
		return false;
	s = c.s;
	key = *key_in;
	c.o = &p->off;
	v = bpf_map_lookup_elem(m, &key);
	if (v) {
		/* an off-CPU walk counts 0 now (its block counts when it ends):
		 * an atomic add of a constant 0 is compiled as an atomic or,
		 * which kernels before 5.12 refuse */
		if (weight)
			__sync_fetch_and_add(v, weight);
		sstat(s, STAT_STACKS, 1);
		return true;
	}
	if (map_full[idx & 1]) {
		sstat(s, STAT_MAP_FULL, 1);
		return false;
	}
	seen = bpf_map_lookup_elem(&announced, &key);
	/* in the scratch map, not on the stack (the value of the update
	 * below): the bounded-loop object's chains are at 5.10's limit */
	s->epoch = announce_epoch;
	if (seen && *seen == s->epoch)
		goto count;
	__builtin_memset(s->cseen, 0, sizeof(s->cseen));
	WALK_LOOP(check_step, 16, PYPERF_MAX_FRAMES, &c);
	bpf_get_current_comm(s->ev.comm, sizeof(s->ev.comm));
	size = pack_stack();
	CLAMP(size, EV_WIRE_MAX); /* a global function's result is any number */
	/* a new stack with a Python part not seen before wakes the loader at
	 * once: it names the code objects while they exist (an imported
	 * module's code is freed once it has run).  One whose Python part the
	 * loader was woken for already (most new stacks of a merged run: new
	 * native pcs under known frames) or without Python frames (a BLAS or
	 * OpenMP worker's) waits for the loader's next turn (a second at most),
	 * unless the ring is filling up */
	wake = false;
	if (s->ev.nframes) {
		part.tgid = key.pid;
		part.gen = key.gen;
		part.hash = s->py_hash;
		wake = !bpf_map_lookup_elem(&py_seen, &part);
	}
	if (!size || bpf_ringbuf_output(&events, s->wire, size,
					wake || map_fill[idx & 1] >= counts_wake_at ||
					bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) > ringbuf_wake_at ?
					RB_WAKE : BPF_RB_NO_WAKEUP)) {
		sstat(s, STAT_RINGBUF_FULL, 1);
		return false;
	}
	if (wake) /* announced: the loader names its code objects now */
		bpf_map_update_elem(&py_seen, &part, &one, BPF_ANY);
	bpf_map_update_elem(&announced, &key, &s->epoch, BPF_ANY);
	sstat(s, STAT_ANNOUNCED, 1);
count:
	err = bpf_map_update_elem(m, &key, &weight, BPF_NOEXIST);
	if (err == -EEXIST) {
		v = bpf_map_lookup_elem(m, &key);
		if (v && weight)
			__sync_fetch_and_add(v, weight);
	} else if (err) {
		map_full[idx & 1] = 1;
		sstat(s, STAT_MAP_FULL, 1);
		return false;
	} else {
		__sync_fetch_and_add(&map_fill[idx & 1], 1);
	}
	sstat(s, STAT_STACKS, 1);
	return true;
}

/* The registers a perf_event or uprobe program's context holds, in the
 * x86-64 ABI's fixed layout (the uapi struct pt_regs, ptrace's
 * user_regs_struct).  Read as this struct, not through CO-RE: the kernel's
 * own struct pt_regs has cs and ss as unsigned long up to 6.8 and as u16 in
 * a union since (FRED), so a CO-RE read of cs is relocated to a field of
 * another size on one side or the other, and libbpf refuses the program.
 * The context's words do not move. */
struct ctx_regs {
	__u64 r15, r14, r13, r12, bp, bx, r11, r10, r9, r8, ax, cx, dx, si, di, orig_ax;
	__u64 ip, cs, flags, sp, ss;
};

/* was the context interrupted in user mode? */
static __always_inline bool ctx_user_mode(const struct ctx_regs *regs)
{
	return (*(volatile const __u64 *)&regs->cs & 3) == 3;
}

/* The current task's user registers into s->regs0: from the interrupted
 * context when it was in user mode (regs, may be NULL), else those saved at
 * kernel entry. */
static __always_inline void user_regs_of(struct scratch *s, const struct ctx_regs *regs)
{
	struct pt_regs *u;

	/* whole-word loads: the verifier allows only those on a perf context */
	if (regs && ctx_user_mode(regs)) {
		s->regs0.pc = *(volatile const __u64 *)&regs->ip;
		s->regs0.sp = *(volatile const __u64 *)&regs->sp;
		s->regs0.bp = *(volatile const __u64 *)&regs->bp;
		s->regs0.bx = *(volatile const __u64 *)&regs->bx;
		return;
	}
#ifdef PYPERF_NO_BPF_LOOP
	{
		/* no bpf_task_pt_regs (5.15): x86-64 keeps them at the top of
		 * the task's kernel stack, THREAD_SIZE (16 KiB without KASAN)
		 * above its base, with no padding */
		struct task_struct *task = (struct task_struct *)bpf_get_current_task();
		__u64 top = (__u64)BPF_CORE_READ(task, stack);

		u = top ? (struct pt_regs *)(top + 16384 - bpf_core_type_size(struct pt_regs)) : NULL;
	}
#else
	u = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
#endif
	if (!u) {
		s->regs0.pc = s->regs0.sp = 0;
		return;
	}
	s->regs0.pc = BPF_CORE_READ(u, ip);
	s->regs0.sp = BPF_CORE_READ(u, sp);
	s->regs0.bp = BPF_CORE_READ(u, bp);
	s->regs0.bx = BPF_CORE_READ(u, bx);
}

/* the thread state's own fields (its interpreter) from the scratch's copy */
#define PY_STATE_READ(ctx, addr, dst, size) ts_read((struct scratch *)(ctx), (addr), (dst), (size))
#include "py_state.h"

static __always_inline bool holds_gil(struct scratch *s, const struct proc_info *p, __u64 tstate)
{
	return py_holds_gil(s, &p->off, p->runtime_addr, tstate);
}

static __always_inline bool runs_gc(struct scratch *s, const struct proc_info *p, __u64 tstate)
{
	return py_runs_gc(s, &p->off, p->runtime_addr, tstate);
}

/* walk_python's second half: the frames of thread state tstate (0: none)
 * into s->ev.frames, then the running asyncio task.  A function of its own,
 * verified once: walk_python reaches this point in several states (a thread
 * with a state or without, found in the cache or by a walk), and the frame
 * loop's step, checked in its caller's state, was checked once per state
 * (8,826 instructions processed for the merged program, 1,270 of them the
 * step's). */
VERIFIED_ONCE __u32 walk_frames(struct scratch *s, struct proc_info *p, __u32 tgid, __u64 tstate)
{
	struct walk_ctx c = { .s = s, .p = p, .tgid = tgid };
	struct frame_walk *w;

	if (!s || !p)
		return 0;
	c.o = &p->off;
	c.gen = p->gen;
	w = &s->fw;
	/* one path whether or not the thread has Python frames (frame_step
	 * stops at once without one); tstate is read back after the loop, so
	 * that the ways here meet before it, each with no copy of it */
	w->tstate = tstate;
	w->frame = tstate ? top_frame(s, tstate, &p->off) : 0;
	w->before = 0;
	w->c_sp = s->regs0.sp;
	w->read_len = py_frame_read_len(&p->off);
	w->win_size = p->off.instr_kind == INSTR_POINTER ? PYPERF_WINDOW : w->read_len;
	s->win_lo = s->win_hi = 0; /* memory of another process, or changed since */
	py_code_span(&p->off, &w->code_lo, &w->code_len);
	s->ev.nframes = 0;
	w->anchor_frame = 0;
	w->anchor_n = 0;
	w->seg_closed = 0;
	w->nest_at = w->nest_start = 0;
	w->nest_n = tstate ? s->tw.nfound : 0;
	WALK_LOOP(frame_step, 16, PYPERF_MAX_FRAMES + 64, &c);
	tstate = *(volatile __u64 *)&w->tstate;
	if (w->frame && !(w->flags & STACK_BAD_READ))
		w->flags |= STACK_TRUNCATED;
	s->ev.task = s->ev.task_name = 0;
	s->ev.anchor = 0;
	if (async_stacks && w->anchor_n && p->off.gen_iframe != PYPERF_NO_OFFSET) {
		/* the coroutine object holds its frame inline */
		s->ev.task = running_task(p, tstate, w->anchor_frame - p->off.gen_iframe);
		/* with no task found the anchor still tells the loader that
		 * coroutines run here (it then looks for asyncio) */
		s->ev.anchor = w->anchor_n;
		if (s->ev.task) {
			s->ev.task_name = read_ptr(s->ev.task + p->async.task_name);
			w->hash = mix(mix(mix(w->hash, s->ev.task), s->ev.task_name), w->anchor_n);
		}
	}
	sstat(s, STAT_TRUNCATED, BIT_OF(w->flags, STACK_TRUNCATED));
	sstat(s, STAT_BAD_READ, BIT_OF(w->flags, STACK_BAD_READ));
	if (!s->ev.nframes) {
		sstat(s, STAT_NO_FRAMES, NONZERO(tstate));
		/* a thread running no Python code (a BLAS or OpenMP pool, a C++
		 * worker, a thread before its first frame): with native stacks
		 * it is still sampled, with its native and kernel frames (the
		 * loader tells it by nframes == 0) */
		if (!native_stacks)
			return 0;
	}
	return 1;
}

/* The Python half of the walk of the current thread of process tgid into
 * the CPU's scratch: its thread state, its frames (into ev.frames), their
 * hash and flags (fw.hash, fw.flags; flags start as extra, STACK_OFFCPU;
 * hash_in folds in what the caller adds, the off-CPU kernel frames), the
 * running asyncio task.  0: nothing to count.  A global function: the
 * verifier checks it once, not once per program that walks, and its stack
 * is not added to the native walk's (each kernel refuses a chain of calls
 * whose stacks add up to more than 512 bytes). */
__noinline __u32 walk_python(__u32 tgid, __u32 tid, __u32 idx, __u32 extra, __u64 hash_in)
{
	struct walk_ctx c = {};
	struct frame_walk *w;
	struct proc_info *p;
	struct scratch *s;
	__u64 tstate;

	if (!walk_ctx_of(&c, tgid, WALK_NEEDS_PROC))
		return 0;
	s = c.s;
	p = c.p;
	w = &s->fw;
	/* the counts map's parity is part of the key: a stack announced again
	 * after the loader drained the other map never shares a key with it */
	w->hash = mix(mix(0x5eed + idx, tgid), hash_in);
	w->flags = extra;
	s->ts_at = 0;
	tstate = find_tstate(&c, tgid, tid);
	/* a call, on this rare path (a thread without a state), and not sstat:
	 * the verifier prunes at a call, and find_tstate's ways out meet
	 * there; without one --async's frame loop was checked for five states
	 * of this function, not three (1,900 more instructions) */
	if (!tstate)
		stat_inc(STAT_NO_TSTATE);
	if (gil_only && !holds_gil(s, p, tstate)) {
		sstat(s, STAT_NO_GIL, 1);
		return 0;
	}
	if (tstate && runs_gc(s, p, tstate))
		w->flags |= STACK_GC;
	return walk_frames(s, p, tgid, tstate);
}

/* Walk the current thread of profiled process p into s->ev and the key
 * (without its kernel stack): Python frames (walk_python), then native
 * ones from s->regs0 (unwind_native).  false: nothing to count. */
static __always_inline bool walk_current(struct scratch *s, struct proc_info *p, __u32 tgid,
					 __u32 tid, __u32 idx, __u32 extra, __u64 hash_in,
					 struct stack_key *key)
{
	__u32 flags;
	__u64 hash;

	if (!walk_python(tgid, tid, idx, extra, hash_in))
		return false;
	flags = s->fw.flags;
	hash = s->fw.hash;
	s->py_hash = mix(mix(hash, s->ev.nframes), flags);
	s->ev.nnative = 0;
	if (native_stacks) {
		s->hash = hash;
		flags |= unwind_native(tgid, p->gen);
		hash = s->hash;
	}
	s->ev.kind = EV_STACK;
	s->ev.pid = tgid;
	s->ev.tid = tid;
	s->ev.flags = flags;
	s->ev.gen = p->gen;
	s->ev.hash = mix(mix(hash, s->ev.nframes), flags);
	key->pid = tgid;
	key->tid = tid;
	key->gen = p->gen;
	key->pad = 0;
	key->hash = s->ev.hash;
	return true;
}

/* the kernel frames of a stack folded into its hash (s->hash) */
static long kernel_hash_step(__u32 i, struct walk_ctx *c)
{
	struct scratch *s = c->s;

	if (i >= s->ev.nkernel)
		return 1;
	/* the mask only shows the verifier a bound (the scratch value goes on
	 * after the array): PYPERF_KSTACK_DEPTH, 127, is no power of two, and
	 * nkernel is at most 127 (bpf_get_stack filled at most the array) */
	s->hash = mix(s->hash, s->ev.kernel[i & 127]);
	return 0;
}
WALK_CHUNKS(kernel_hash_step, 32, 0)

/* The current task's kernel stack, when take, into s->ev.kernel (leaf
 * first) and folded into s->hash; else none (0 frames, hash 0).  It is
 * part of the stack: hashed into its key and announced with it, once
 * (count_stack).  A stack trace map per counts map (bpf_get_stackid) cost
 * a megabyte a thousand stacks, filled at every start, and a lookup per
 * key per drain; and that helper took ~25 us a kernel sample here against
 * this one's ~15. */
static __always_inline void kernel_frames(void *ctx, struct scratch *s, bool take)
{
	struct walk_ctx c = { .s = s };
	long nk;

	s->ev.nkernel = 0;
	s->hash = 0;
	if (!take)
		return;
	nk = bpf_get_stack(ctx, s->ev.kernel, sizeof(s->ev.kernel), 0);
	s->ev.nkernel = nk > 0 ? (__u32)((__u64)nk >> 3) : 0;
	WALK_LOOP(kernel_hash_step, 32, PYPERF_KSTACK_DEPTH, &c);
}

/* The current thread's stack, counted with weight: the Python and native
 * user stacks from regs (user-mode registers, or kernel ones: the thread's
 * own at its kernel entry are used), and the kernel stack when regs are
 * kernel ones. */
static __always_inline bool sample_current(void *ctx, const struct ctx_regs *regs, __u64 weight,
					   struct stack_key *out)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, tid = (__u32)id, cpu;
	struct proc_info *p;
	struct scratch *s;
	struct stack_key *key;
	__u32 idx = active & 1;

	p = bpf_map_lookup_elem(&procs, &tgid);
	if (!p) {
		if (current_has_mm()) /* kernel threads are never Python */
			announce_unknown(tgid, weight);
		return false;
	}
	cpu = bpf_get_smp_processor_id();
	s = bpf_map_lookup_elem(&scratch_map, &cpu);
	if (!s)
		return false;
	sstat(s, STAT_SAMPLES, 1);
	key = &s->key; /* in the scratch map, not on the stack (struct scratch) */
	/* a sample taken in user mode has no kernel stack: not asked for */
	kernel_frames(ctx, s, kernel_stacks && !ctx_user_mode(regs));
	user_regs_of(s, regs);
	if (!walk_current(s, p, tgid, tid, idx, 0, s->hash, key))
		return false;
	if (!count_stack(p, key, idx, weight))
		return false;
	if (timeline)
		timeline_note(key, bpf_ktime_get_ns(), 0, weight, 0);
	if (out)
		*out = *key;
	return true;
}

/* Each mode's own maps, helpers and programs: every header in bpf/modes/,
 * listed by the build (modes.bpf.h); after the walk and the count, which
 * they call, and before on_sample, which calls theirs (faults: which faults
 * are walked). */
#include "modes.bpf.h"

SEC("perf_event")
int on_sample(struct bpf_perf_event_data *ctx)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;

	if (!tgid || !is_profiled(tgid))
		return 0;
	if (alloc_interval) {
		/* --mode alloc: the clock only finds new processes, whose
		 * allocator is probed once the loader knows them */
		if (!bpf_map_lookup_elem(&procs, &tgid) && current_has_mm())
			announce_unknown(tgid, 0);
		return 0;
	}
	if (fault_every && !fault_walked(ctx->addr))
		return 0;
	sample_current(ctx, (const struct ctx_regs *)&ctx->regs, cpu_weight, NULL);
	return 0;
}

/* ---- kernel symbols, for the loader ---- */

/* The loader runs this (BPF_PROG_RUN) with one kernel address at a time and
 * reads the name from ksym_name: the kernel's own lookup ("%pB": the symbol
 * holding address - 1, as for a return address; the loader passes the
 * address + 1), a binary search.  Reading /proc/kallsyms instead makes the
 * kernel format all of its ~120k symbols: ~60 ms of system time a pass. */
char ksym_name[256] = {};

SEC("syscall")
int name_ksym(__u64 *addr)
{
	__u64 a = *addr;

	bpf_snprintf(ksym_name, sizeof(ksym_name), "%pB", &a, sizeof(a));
	return 0;
}

/* ---- process lifecycle ----
 * Raw tracepoints, not BTF-typed ones: a tp_btf program makes libbpf read
 * and parse the kernel's whole BTF even where CO-RE uses a copy
 * (sampler.c: the cached copy), and each typed field access makes the
 * verifier search that BTF for the type's trusted variants.  The task of
 * exec and exit is the current one; fork's child is read through CO-RE. */

/* a new program: whatever we knew about this pid is stale */
SEC("raw_tp/sched_process_exec")
int on_exec(void *ctx)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;

	if (!is_profiled(tgid))
		return 0;
	if (bpf_map_delete_elem(&procs, &tgid) == 0)
		__sync_fetch_and_add(&procs_epoch, 1);
	bpf_map_delete_elem(&skip, &tgid);
	bpf_map_delete_elem(&native_procs, &tgid);
	send_event(EV_EXEC, tgid);
	return 0;
}

/* a new process: children of targets are targets.  The child of a
 * profiled Python process is a copy of it (the same interpreter at the same
 * addresses): it is profiled from birth, with its parent's classification
 * and mappings, so a child that blocks at once (a multiprocessing worker
 * waiting for work) has that first block walked; the loader is told
 * (EV_FORK) and takes the child as its own.  Any other starts unclassified. */
SEC("raw_tp/sched_process_fork")
int BPF_PROG(on_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 ptgid = bpf_get_current_pid_tgid() >> 32, ctgid = BPF_CORE_READ(child, tgid);
	struct ev_fork ev = { .kind = EV_FORK, .pid = ctgid, .ppid = ptgid };
	struct proc_info *pi;
	struct native_maps *nm;
	__u8 one = 1;
	bool changed;

	if ((__u32)BPF_CORE_READ(child, pid) != ctgid)
		return 0; /* a new thread, not a new process */
	changed = bpf_map_delete_elem(&procs, &ctgid) == 0;
	bpf_map_delete_elem(&skip, &ctgid);
	bpf_map_delete_elem(&native_procs, &ctgid);
	if (filter_targets && bpf_map_lookup_elem(&targets, &ptgid))
		bpf_map_update_elem(&targets, &ctgid, &one, BPF_ANY);
	/* a vfork child (subprocess's, before its exec) shares its parent's
	 * memory until it execs, and then is another program: not a copy */
	pi = BPF_CORE_READ(child, mm) != BPF_CORE_READ(parent, mm) ?
		     bpf_map_lookup_elem(&procs, &ptgid) : NULL;
	/* The copy is written before the loader is told: the loader, on
	 * another CPU, may read the event at once, and takes a child it does
	 * not find in procs for one that exec'ed or ended meanwhile.  The
	 * child does not run before this hook returns, so a copy the loader
	 * could not be told of is taken back unseen, and the child is
	 * announced when it runs, as any. */
	if (pi && is_profiled(ctgid) && bpf_map_update_elem(&procs, &ctgid, pi, BPF_ANY) == 0) {
		ev.gen = pi->gen;
		nm = bpf_map_lookup_elem(&native_procs, &ptgid);
		if (nm)
			bpf_map_update_elem(&native_procs, &ctgid, nm, BPF_ANY);
		changed = true;
		if (bpf_ringbuf_output(&events, &ev, sizeof(ev), RB_WAKE)) {
			bpf_map_delete_elem(&procs, &ctgid);
			bpf_map_delete_elem(&native_procs, &ctgid);
		}
	}
	if (changed)
		__sync_fetch_and_add(&procs_epoch, 1);
	return 0;
}

SEC("raw_tp/sched_process_exit")
int on_exit(void *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, tid = (__u32)id;
	struct offcpu_thread *t;

	if (offcpu) { /* the thread's slot is free */
		t = slot_find((__u64)tgid << 32 | tid);
		if (t)
			t->id = 0;
	}
	if (tid != tgid || !is_profiled(tgid))
		return 0;
	if (bpf_map_lookup_elem(&procs, &tgid))
		send_event(EV_EXIT, tgid);
	if (bpf_map_delete_elem(&procs, &tgid) == 0)
		__sync_fetch_and_add(&procs_epoch, 1);
	bpf_map_delete_elem(&native_procs, &tgid);
	/* a dead target's pid may be reused by an unrelated process */
	bpf_map_delete_elem(&targets, &tgid);
	return 0;
}

#include "events.bpf.h"
