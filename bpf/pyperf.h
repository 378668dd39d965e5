/* pyperf.h - the structures the BPF sampler and the user-space loader share.
 *
 * One sample travels like this: the perf_event program (pyperf.bpf.c) finds the
 * interrupted thread's PyThreadState, walks its frame chain into a `struct
 * py_stack`, hashes it, and adds one to `counts[active]` under a `struct
 * stack_key`.  The first time a key appears in the current map it also sends the
 * whole stack to user space on the ring buffer (`struct ev_stack`), so the
 * loader can name the code objects while the process is still alive.  The loader
 * flips `active`, drains the other map, and joins counts with stacks by key.
 *
 * This header is compiled by clang for BPF (vmlinux.h types) and by the C
 * compiler for user space (<linux/types.h>), so it uses only the kernel's
 * fixed-width __uN types.
 */
#ifndef PYPERF_H
#define PYPERF_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define PYPERF_MAX_FRAMES 1024   /* Python frames kept per sample (leaf side) */
#define PYPERF_MAX_THREADS 4096  /* PyThreadState list walk bound */
#define PYPERF_COUNTS_ENTRIES 32768
#define PYPERF_COMM_LEN 16
#define PYPERF_KSTACK_DEPTH 127  /* kernel frames kept (PERF_MAX_STACK_DEPTH) */
#define PYPERF_NO_OFFSET 0xffff  /* field absent in this version */
#define PYPERF_FRAME_READ_MAX 128 /* bytes of a frame read at once */
#define PYPERF_WINDOW 4096        /* bytes of a 3.11+ frame stack read at once */
#define TS_WINDOW 256             /* bytes of a thread state's head read at once */
#define PYPERF_MAX_NATIVE 2048    /* native user frames kept per sample (leaf side): up
				   * to 3.10 each Python call costs about three native
				   * frames, so merged stacks stay whole past 600 Python
				   * frames */
#define PYPERF_MAX_MAPPINGS 512   /* executable mappings per process the unwinder knows */
#define PYPERF_STACK_WINDOW 1024  /* bytes of the user stack read at once */
#define PYPERF_MAX_TABLES 8192   /* unwind tables loaded at once (slots; a power of 2) */
#define PYPERF_UNWIND_MB 256     /* default cap on the unwind tables' memory */

/* How a frame says where it is in its code. */
enum py_instr_kind {
	INSTR_LASTI_BYTES = 0, /* int f_lasti, byte offset (3.8, 3.9) */
	INSTR_LASTI_UNITS = 1, /* int f_lasti, 2-byte code units (3.10) */
	INSTR_POINTER = 2,     /* _Py_CODEUNIT *prev_instr / instr_ptr (3.11+) */
};

/* Struct offsets for one CPython layout.  Everything the BPF walk needs, plus
 * what the loader needs to read code objects.  PYPERF_NO_OFFSET marks a field
 * the version does not have. */
struct py_offsets {
	/* _PyRuntimeState -> first interpreter */
	__u16 runtime_interp_head;
	/* PyInterpreterState */
	__u16 interp_threads_head;
	/* PyThreadState */
	__u16 tstate_next;
	__u16 tstate_thread_id;      /* pthread_self() of the thread */
	__u16 tstate_frame;          /* ->frame / ->cframe / ->current_frame */
	__u16 cframe_current_frame;  /* _PyCFrame.current_frame (3.11, 3.12) */
	/* PyFrameObject (<= 3.10) or _PyInterpreterFrame (3.11+) */
	__u16 frame_back;
	__u16 frame_code;
	__u16 frame_instr;
	__u16 frame_owner;           /* char owner (3.12+) */
	__u16 frame_is_entry;        /* bool is_entry (3.11 only): first frame of an eval call */
	__u16 frame_globals;         /* f_globals: part of a stack's key, so that two
				      * code objects run one after the other at one
				      * address (modules' bodies, freed once run)
				      * stay apart; PYPERF_NO_OFFSET: not used */
	__u8 instr_kind;             /* enum py_instr_kind */
	__u8 owner_shim;             /* frames owned by this value or above are not
				      * Python code: the C-stack/entry shim below each
				      * eval-loop call (3.12+), 3.15's base frame;
				      * 0xff: none */
	/* PyCodeObject */
	__u16 code_firstlineno;
	__u16 code_adaptive;         /* co_code_adaptive (3.11+) */
	__u16 code_filename;
	__u16 code_name;
	__u16 code_qualname;         /* 3.11+ */
	__u16 code_linetable;        /* co_lnotab (3.8, 3.9) or co_linetable */
	__u8 linetable_kind;         /* enum py_linetable_kind, see linetable.h */
	__u8 code_tag_bits;          /* low bits of frame_code to clear: 3.14+ hold a
				      * tagged _PyStackRef there (Py_TAG_BITS) */
	/* str and bytes objects */
	__u16 unicode_state;
	__u16 unicode_length;
	__u16 unicode_ascii_size;    /* sizeof(PyASCIIObject) */
	__u16 unicode_compact_size;  /* sizeof(PyCompactUnicodeObject) */
	__u16 bytes_size;            /* ob_size */
	__u16 bytes_sval;            /* ob_sval */
	/* the GIL, struct _gil_runtime_state (--gil) */
	__u8 gil_in;                 /* where it is: enum py_gil_in */
	__u16 gil_state;             /* its offset there */
	__u16 gil_locked;            /* int locked */
	__u16 gil_holder;            /* PyThreadState *last_holder */
	/* the cyclic garbage collector's `int collecting` (struct
	 * _gc_runtime_state): in _PyRuntime in 3.8, in each interpreter after;
	 * samples taken while it is set, of the thread holding the GIL, are
	 * marked STACK_GC */
	__u8 gc_in;                  /* where: enum py_gil_in's values */
	__u16 gc_collecting;         /* its offset there */
	/* asyncio (--async, 3.12+) */
	__u16 interp_modules;        /* PyInterpreterState.imports.modules (sys.modules) */
	__u16 gen_iframe;            /* PyGenObject.gi_iframe: a generator's or
				      * coroutine's own frame, inside the object (3.11+) */
	__u16 frame_localsplus;      /* _PyInterpreterFrame.localsplus (3.11+), f_localsplus before */
	__u16 frame_stack;           /* its value stack's top: int stacktop or
				      * _PyStackRef *stackpointer (stack_kind) */
	__u8 stack_kind;             /* enum py_stack_kind */
	/* loader only: a frame's local variables (dump --locals) and the
	 * attributes of an instance (Python thread names); frame_localsplus
	 * above is PyFrameObject.f_localsplus up to 3.10 */
	__u16 code_argcount;         /* int co_argcount (without *args) */
	__u16 code_kwonlyargcount;   /* int co_kwonlyargcount */
	__u16 code_flags;            /* int co_flags (CO_VARARGS, CO_VARKEYWORDS) */
	__u16 code_nlocals;          /* int co_nlocals; co_nlocalsplus (3.11+) */
	__u16 code_varnames;         /* co_varnames; co_localsplusnames (3.11+) */
	__u16 code_localskinds;      /* co_localspluskinds (3.11+) */
	__u16 code_cellvars;         /* co_cellvars (up to 3.10) */
	__u16 tuple_items;           /* PyTupleObject.ob_item (3.14+: after ob_hash) */
	__u16 type_flags;            /* PyTypeObject.tp_flags */
	__u16 type_dictoffset;       /* PyTypeObject.tp_dictoffset */
	__u16 type_cached_keys;      /* PyHeapTypeObject.ht_cached_keys */
	__u8 obj_layout;             /* enum py_obj_layout */
	/* subinterpreters (3.12+; PYPERF_NO_OFFSET before: only the newest
	 * interpreter's threads are looked at) */
	__u16 interp_next;           /* PyInterpreterState.next: the list, newest first */
	__u16 interp_id;             /* PyInterpreterState.id (int64_t; 0: the main one) */
	__u16 tstate_status;         /* PyThreadState._status, whose bit PY_TSTATE_ACTIVE
				      * says the state is its thread's current one
				      * (3.12+; PYPERF_NO_OFFSET: not known) */
};

/* Where an instance of a Python class keeps its attributes, and how a dict
 * and an int are laid out (loader only, python/pyobj.c). */
enum py_obj_layout {
	PYOBJ_UNKNOWN = 0,
	PYOBJ_310 = 10,              /* a dict at tp_dictoffset; dict keys with
				      * dk_size, 24-byte entries (3.8-3.10) */
	PYOBJ_311 = 11,              /* values at obj - 32, a dict at obj - 24
				      * (managed); dk_log2_* keys */
	PYOBJ_312 = 12,              /* obj - 24 holds the dict, or the values
				      * tagged | 1; ints with lv_tag */
	PYOBJ_313 = 13,              /* values inline after the object, a dict
				      * at obj - 24 once one is made (3.13+) */
};

/* How a frame records the top of its value stack, which holds the object a
 * suspended coroutine awaits (loader only: where an asyncio task waits). */
enum py_stack_kind {
	PYSTACK_NONE = 0,            /* not known */
	PYSTACK_INDEX = 1,           /* int stacktop: slots used in localsplus (3.11-3.13) */
	PYSTACK_POINTER = 2,         /* _PyStackRef *stackpointer, tagged (3.14+) */
};

enum py_gil_in {
	GIL_UNKNOWN = 0,
	GIL_IN_RUNTIME = 1,          /* _PyRuntime.ceval.gil (3.8-3.11) */
	GIL_IN_INTERP = 2,           /* the thread's interpreter's own _gil (3.12+),
				      * else the main one's (py_state.h) */
};

/* PyThreadState begins prev, next, interp in every version; and from 3.12
 * _PyRuntime.interpreters holds the main interpreter right after the head
 * of its list (the newest) */
#define PY_TSTATE_INTERP 16
#define PY_RUNTIME_MAIN_AFTER_HEAD 8
/* PyThreadState._status.active, the fifth of its one-bit fields (3.12 to
 * 3.15; GCC lays bit-fields out from the low bit): set while the state is
 * its thread's current one and the thread holds the GIL (tstate_activate;
 * a thread that releases the GIL, or switches to a subinterpreter's
 * state, clears it) */
#define PY_TSTATE_ACTIVE (1u << 4)

/* How the sampler finds the asyncio task a thread is running (--async),
 * per process: the loader fills it once the process has imported asyncio
 * (python/pyasync.c); task_coro 0: not (yet). */
struct py_async {
	__u64 current_tasks;         /* 3.12/3.13: the _asyncio module's dict
				      * {event loop: running task} */
	__u16 tstate_task;           /* 3.14+: the thread state's asyncio_running_task;
				      * PYPERF_NO_OFFSET on 3.12/3.13 */
	__u16 task_coro;             /* TaskObj.task_coro */
	__u16 task_name;             /* TaskObj.task_name */
	__u16 dict_keys;             /* PyDictObject.ma_keys (3.12/3.13) */
};

/* A thread's PyThreadState as the sampler found it (map tcache, key: tid;
 * the loader reads it to name Python threads); tstate 0: none found (a
 * native thread, or a Python one before it bound its state), looked for
 * again as find_tstate says. */
struct tstate_cache {
	__u32 tgid;
	__u32 multi;             /* several interpreters: tstate is the outermost
				  * state, for the loader; the walk looks again */
	__u64 tstate;
	__u64 stamp_ns;          /* when the threads were last walked */
	__u64 head;              /* with tstate 0: the thread list's head then,
				  * 0 after the first walk that found none */
	__u64 interps;           /* the interpreters' list head when cached (3.12+):
				  * a new interpreter makes the entry stale */
};

/* A thread running a subinterpreter has a thread state in each interpreter
 * it went through: the walk takes up to this many, innermost first. */
#define PYPERF_MAX_NEST 4

/* In a stack's Python frames, where one interpreter's frames begin (leaf
 * first: after them): code PY_INTERP_MARK, instr that interpreter's id
 * (| PY_FRAME_ENTRY: the mark closes the eval-loop call the interpreter
 * was entered with).  Never an object's address. */
#define PY_INTERP_MARK 1ULL

/* A code object as the walk of a new stack saw it (map code_ids): the
 * loader names from it one that was freed before the stack was named (a
 * module's body, run once at import, whose memory is soon reused): the
 * strings its name and file were usually outlive it. */
struct code_id_key {
	__u32 tgid;
	__u32 check;                 /* two code objects made at one address one
				      * after the other, both kept */
	__u64 code;
};
/* A str as the walk saw it: its length, cached hash (-1: not computed yet)
 * and last characters, which tell whether the object at its address is
 * still that str (a file name's hash is often never computed, and another
 * "<gen 215>" has the length of "<gen 109>").  When they are all of it (a
 * name, most file paths), they name the code even once its process has
 * ended before the loader read anything of it. */
#define STR_TAIL 128
struct str_seen {
	__s64 length;                /* -1: not read */
	__s64 hash;
	__u8 tail[STR_TAIL];         /* the last bytes of its characters, zero-padded */
	__u32 tail_len;              /* how many: 0 when not read (not compact) */
	__u32 kind;                  /* bytes a character (1, 2, 4) when tail_len is set */
};
struct code_id {
	__u64 filename, name;        /* co_filename, co_name */
	__u32 firstlineno;
	__u32 check;                 /* py_code_check() of the three */
	struct str_seen file_seen, name_seen;
};

/* Per-process configuration, key: tgid. Written by the loader. */
struct proc_info {
	__u64 runtime_addr;          /* &_PyRuntime in the target */
	__u32 gen;                   /* loader's id for this process image (pid reuse, exec) */
	__u32 pad;
	struct py_offsets off;
	struct py_async async;
};

/* One Python frame as the sampler sees it: compact, names come later. */
struct py_frame {
	__u64 code;                  /* PyCodeObject address */
	__u32 instr;                 /* byte offset of the instruction in the code,
				      * | PY_FRAME_ENTRY */
	__u32 check;                 /* py_code_check(): guards against address reuse */
};

/* In py_frame.instr: this frame is the first one a C call of the eval loop
 * ran (every frame up to 3.10; is_entry in 3.11; the frame above a C-stack
 * shim from 3.12).  The merge with native frames pairs each eval-loop native
 * frame with the Python frames up to the next such frame. */
#define PY_FRAME_ENTRY 0x80000000u
#define PY_FRAME_INSTR(x) ((x) & 0x7fffffffu)

/* Identity check of a code object, computed the same way on both sides from
 * co_firstlineno and the addresses of co_filename and co_name. */
static inline __u32 py_code_check(__u32 firstlineno, __u64 filename, __u64 name)
{
	__u64 h = (filename ^ (name << 1)) * 0x9e3779b97f4a7c15ULL;

	return firstlineno ^ (__u32)(h >> 32);
}

/* The code object a frame runs, from the frame's code field: 3.14+ hold a
 * _PyStackRef there whose low bits are tags, not address. */
static inline __u64 py_frame_code(const struct py_offsets *o, __u64 raw)
{
	return raw & ~(__u64)o->code_tag_bits;
}

/* Whether a frame with this owner value is a shim rather than Python code:
 * the entry frame each eval-loop call pushes (owner FRAME_OWNED_BY_CSTACK in
 * 3.12/3.13, FRAME_OWNED_BY_INTERPRETER from 3.14, where CSTACK = 4 is
 * defined but never set) and 3.15's base frame at the bottom of every thread.
 * CPython's own readers skip owner >= FRAME_OWNED_BY_INTERPRETER the same
 * way (_PyFrame_IsIncomplete). */
static inline int py_frame_is_shim(const struct py_offsets *o, __u8 owner)
{
	return o->frame_owner != PYPERF_NO_OFFSET && o->owner_shim != 0xff &&
	       owner >= o->owner_shim;
}

/* The owner of a generator's or coroutine's frame, which lives inside the
 * generator object (FRAME_OWNED_BY_GENERATOR, the same 3.11 to 3.15). */
#define PY_OWNED_BY_GENERATOR 1

/* The rest of one step of the frame walk, the same for the BPF program
 * (python_walk.bpf.h) and for dump's walk from user space (pywalk.c). */

/* Bytes of a frame that hold every field the walk reads. */
static inline __u32 py_frame_read_len(const struct py_offsets *o)
{
	__u32 m = o->frame_back;

	if (o->frame_code > m)
		m = o->frame_code;
	if (o->frame_instr > m)
		m = o->frame_instr;
	m += 8;
	if (o->frame_owner != PYPERF_NO_OFFSET && o->frame_owner + 1u > m)
		m = o->frame_owner + 1u;
	if (o->frame_globals != PYPERF_NO_OFFSET && o->frame_globals + 8u > m)
		m = o->frame_globals + 8u;
	if (o->frame_is_entry != PYPERF_NO_OFFSET && o->frame_is_entry + 1u > m)
		m = o->frame_is_entry + 1u;
	return m > PYPERF_FRAME_READ_MAX ? PYPERF_FRAME_READ_MAX : m;
}

/* The byte offset of the frame's instruction in code, from the frame's
 * instruction field (a pointer into co_code_adaptive from 3.11, f_lasti in
 * code units in 3.10, in bytes before); a frame not started yet (f_lasti -1)
 * gives 0x7fffffff. */
static inline __u32 py_frame_instr(const struct py_offsets *o, __u64 raw, __u64 code)
{
	__u32 instr;

	if (o->instr_kind == INSTR_POINTER)
		instr = (__u32)(raw - (code + o->code_adaptive));
	else if (o->instr_kind == INSTR_LASTI_UNITS)
		instr = (__s32)raw < 0 ? (__u32)-1 : (__u32)raw * 2;
	else
		instr = (__u32)raw;
	return PY_FRAME_INSTR(instr);
}

/* PY_FRAME_ENTRY if a frame of Python code is the first of its eval-loop
 * call as the frame itself tells (3.11's is_entry byte, given whatever the
 * version; every frame up to 3.10), else 0.  From 3.12 the shim below says
 * it instead (py_frame_is_shim): the walk marks the frame before the shim. */
static inline __u32 py_frame_entry(const struct py_offsets *o, __u8 is_entry)
{
	if (o->frame_is_entry != PYPERF_NO_OFFSET)
		return is_entry ? PY_FRAME_ENTRY : 0;
	return o->frame_owner == PYPERF_NO_OFFSET ? PY_FRAME_ENTRY : 0;
}

/* The span of a code object that holds the fields py_code_check reads. */
static inline void py_code_span(const struct py_offsets *o, __u16 *lo, __u16 *len)
{
	__u16 a = o->code_firstlineno, b = o->code_filename, c = o->code_name;
	__u16 min = a < b ? a : b, max = a > b ? a : b;

	if (c < min)
		min = c;
	if (c > max)
		max = c;
	*lo = min;
	*len = (__u16)(max + 8 - min);
}


/* --mode alloc: the byte sampler's tables (rodata, filled by the loader):
 * ALLOC_GAPS quantiles of an exponential gap, and the weight of a sampled
 * allocation of x = size/interval for x < ALLOC_XMAX, in 1/1024 units. */
#define ALLOC_GAPS 256
#define ALLOC_XSTEPS 256
#define ALLOC_XMAX 8

/* stack flags */
#define STACK_TRUNCATED 1u       /* frames above PYPERF_MAX_FRAMES were cut (root side) */
#define STACK_BAD_READ 2u        /* walk stopped on an unreadable frame */
#define STACK_NATIVE 4u          /* native frames were unwound (they may be 0) */
#define STACK_NATIVE_TRUNCATED 8u  /* more than PYPERF_MAX_NATIVE native frames */
#define STACK_NATIVE_INCOMPLETE 16u /* native unwinding stopped before the outermost frame */
#define STACK_NO_PYTHON 32u        /* set by the loader: the thread ran no Python frame
				    * (native and kernel frames only) */
#define STACK_NATIVE_PENDING 64u   /* with INCOMPLETE: stopped at a binary whose
				    * unwind table the loader is still building */
#define STACK_OFFCPU 128u          /* taken as the thread left the CPU (--mode
				    * wall|offcpu); its count is nanoseconds off */
#define STACK_AWAITING 256u        /* set by the loader: where an asyncio task that
				    * is not running waits (--async, wall|offcpu) */
#define STACK_NATIVE_SCANNED 512u  /* a caller of code without CFI was found by
				    * scanning the stack for a return address */
#define STACK_GC 1024u             /* taken while the thread ran the cyclic garbage
				    * collector (the loader adds a <GC> frame) */

/* In ev.native: the frame was found by that scan (bit 63: user addresses
 * are below 2^47); the loader clears it and marks the frame */
#define NATIVE_PC_SCANNED (1ull << 63)
/* words of the stack scanned from a frame without CFI for a return address */
#define PYPERF_SCAN_WORDS 256

struct stack_key {
	__u32 pid;                   /* tgid */
	__u32 tid;
	__u32 gen;                   /* proc_info.gen when sampled */
	__u32 pad;                   /* 0 */
	__u64 hash;                  /* of pid, nframes, flags and frames (Python,
				      * native and kernel ones) */
};

/* `leaks`: a sampled allocation not freed yet, key: the process and the
 * address the allocator returned */
struct live_key {
	__u32 pid;
	__u32 pad;
	__u64 addr;
};

/* --mode alloc: a process's C library code, [lo, hi): an anonymous mmap
 * called from there is malloc's own (already counted at malloc) */
struct libc_text {
	__u64 lo, hi;
};

struct live_alloc {
	struct stack_key key;        /* where it was allocated (announced when sampled) */
	__u64 weight;                /* the bytes it stands for */
	__u64 size;                  /* its own size */
	__u64 ns;                    /* when (CLOCK_MONOTONIC) */
};

/* Ring buffer records. */
enum ev_kind {
	EV_STACK = 1,    /* a stack key first seen in the active counts map */
	EV_NEW_PID = 2,  /* a process not yet classified ran on a CPU */
	EV_EXEC = 3,     /* a process exec'ed a new program */
	EV_EXIT = 4,     /* a process exited */
	EV_MAPS = 5,     /* a profiled process ran code in a mapping the unwinder lacks
			  * (struct ev_maps) */
	EV_TABLE = 6,    /* a sample needs a binary's unwind table (struct ev_table) */
	EV_GC = 7,       /* --events gc: a collection ended (struct ev_gc) */
	EV_IMPORT = 8,   /* --events import: a module's import ended (struct ev_import) */
	EV_SAMPLE = 9,   /* -f timeline: one counted sample, when (struct ev_sample) */
	EV_FORK = 10,    /* a profiled process forked: the child is profiled as its
			  * copy until the loader takes it (struct ev_fork) */
};

struct ev_header {
	__u32 kind;
	__u32 pid;
};

struct ev_table {
	__u32 kind;
	__u32 pid;
	__u32 table;                 /* native_mapping.table */
	__u32 pad;
};

struct ev_fork {
	__u32 kind;
	__u32 pid;                   /* the child */
	__u32 ppid;                  /* the parent, profiled */
	__u32 gen;                   /* the parent's proc_info.gen, the child's for now */
};

struct ev_maps {
	__u32 kind;
	__u32 pid;
	__u64 pc;                    /* the address no known mapping holds */
};

/* stray_pcs key: a page of a process where a pc held by no mapping was
 * seen, and a reread of the mappings did not find one */
struct stray_key {
	__u32 tgid;
	__u32 pad;
	__u64 page;                  /* pc >> 12 */
};

/* --events (events.bpf.h): what CPython's USDT markers told, timed in the
 * kernel (CLOCK_MONOTONIC ns).  The marker's arguments: gc__start(int
 * generation), gc__done(Py_ssize_t collected); import__find__load__start
 * (const char *name), import__find__load__done(const char *name, int found). */
#define PYPERF_MODNAME_LEN 96    /* bytes of a module's name kept */
#define PYPERF_IMPORT_DEPTH 16   /* nested imports timed per thread */
struct ev_gc {
	__u32 kind;
	__u32 pid;
	__u32 tid;
	__s32 generation;
	__u64 start_ns;
	__u64 ns;                    /* how long it ran */
	__s64 collected;             /* objects it freed */
};
struct ev_import {
	__u32 kind;
	__u32 pid;
	__u32 tid;
	__u32 depth;                 /* imports it ran inside (0: outermost) */
	__u64 start_ns;
	__u64 ns;                    /* how long finding and loading it took, the
				      * imports it ran included */
	char name[PYPERF_MODNAME_LEN];
};

/* -f timeline: a sample (or an off-CPU block) as it was counted, so that the
 * loader can put it in time; its stack is the key's, announced before it */
struct ev_sample {
	__u32 kind;
	__u32 pid;
	__u32 tid;
	__u32 gen;
	__u64 hash;
	__u64 ts;                    /* when it was taken; an off-CPU block: when it
				      * began (CLOCK_MONOTONIC ns) */
	__u64 dur;                   /* an off-CPU block: how long it lasted (ns);
				      * a sample: 0 */
	__u64 weight;                /* what it added to its stack's count */
	__u32 flags;                 /* STACK_OFFCPU for a block */
	__u32 cpu;
};

struct ev_stack {
	__u32 kind;
	__u32 pid;
	__u32 tid;
	__u32 nframes;
	__u64 hash;
	__u32 gen;
	__u32 flags;
	__u32 nnative;
	__u32 nkernel;               /* kernel frames (a sample taken in the kernel, or
				      * an off-CPU stack: STACK_OFFCPU) */
	/* --async: the asyncio task the thread was running (its TaskObj, and
	 * the task's name object, for identity), 0: none; anchor: frames[0..
	 * anchor) are the task's coroutine frames and what they called, the
	 * last of them the task's own coroutine; 0: no coroutine was running */
	__u64 task;
	__u64 task_name;
	__u32 anchor;
	__u32 pad2;
	char comm[PYPERF_COMM_LEN];  /* thread name */
	/* native user frames, leaf first: return addresses, except the leaf's,
	 * which is the start of its unwind row (so samples anywhere in one
	 * stretch of a function share a key) */
	__u64 native[PYPERF_MAX_NATIVE];
	struct py_frame frames[PYPERF_MAX_FRAMES]; /* leaf first */
	/* kernel frames, leaf first: part of the stack's identity (its hash),
	 * so a stack is announced once with them and counted without */
	__u64 kernel[PYPERF_KSTACK_DEPTH];
};

#define EV_STACK_HDR_SIZE (sizeof(struct ev_stack) - sizeof(struct py_frame) * PYPERF_MAX_FRAMES)

/* On the ring buffer a stack travels packed: the fields up to `native`
 * (EV_WIRE_HEAD bytes), then nframes py_frames, nnative native addresses and
 * nkernel kernel ones, so a shallow stack costs a few hundred bytes however
 * large the limits are.  The loader unpacks it into a struct ev_stack
 * (session/sampler.c). */
#define EV_WIRE_HEAD __builtin_offsetof(struct ev_stack, native)
#define EV_WIRE_MAX (EV_WIRE_HEAD + sizeof(struct py_frame) * PYPERF_MAX_FRAMES + \
		     8 * PYPERF_MAX_NATIVE + 8 * PYPERF_KSTACK_DEPTH)

/* A thread of a profiled process off the CPU (--mode wall|offcpu), key: tid.
 * At the switch out the thread is current, so its stacks are readable: the
 * block is walked there with probability p (see on_switch), its key kept;
 * at the switch back in, the time it was off, divided by p, is added to
 * that key, so the totals stay unbiased whatever p is. */
struct offcpu_thread {
	__u64 id;                    /* tgid << 32 | tid of the thread in this slot; 0: free */
	__u64 out_ns;                /* when it left the CPU; 0: not walked */
	__u64 win_ns;                /* start of the current one-second window */
	__u64 last_ns;               /* the clock when last read for this thread */
	__u32 win_switches;          /* switch outs in it so far */
	__u32 prev_switches;         /* in the window before */
	__u32 every;                 /* the walked block stands for this many (1/p) */
	__u32 countdown;             /* switch outs until the next walk */
	__u32 gap;                   /* the countdown drawn last */
	__u32 pad;
	__u32 epoch;                 /* procs_epoch when its process was last found
				      * in procs; 0: it was not */
	struct stack_key key;        /* the walked stack */
};

/* ---- native unwinding (x86-64) ----
 *
 * The loader turns a binary's CFI (.eh_frame, .debug_frame) into a compact
 * table of `struct unwind_row`, sorted by pc, when a sample first needs it.
 * A row holds from its pc (an ELF virtual address of the binary, i.e. runtime
 * pc - load bias) up to the next row's pc.  On x86-64 the return address is
 * always at CFA - 8, so a row only says how to find the CFA and where the
 * caller's rbp was saved.
 *
 * Each table is its own BPF array, in slot (table & (PYPERF_MAX_TABLES - 1))
 * of the `unwind_tables` array of maps, shared by every process that maps the
 * binary.  Its element 0 is a header: `pc` is the table's full id (slot and
 * a tag that changes each time the slot is reused, so a mapping that still
 * names an evicted table never reads another binary's rows) and `nrows` the
 * rows that follow; nrows 0 says the binary has no CFI (follow frame
 * pointers) and UNWIND_NO_TABLE that its table could not be loaded. */
enum unwind_cfa_kind {
	CFA_NONE = 0,      /* no CFI covers this pc (gap between functions) */
	CFA_RSP = 1,       /* CFA = rsp + cfa_off */
	CFA_RBP = 2,       /* CFA = rbp + cfa_off */
	CFA_PLT = 3,       /* PLT stubs: CFA = rsp + 8, + 8 more when (pc & 15) >= cfa_off */
	CFA_END = 4,       /* outermost frame (return address undefined): stack ends here */
	CFA_UNSUPPORTED = 5, /* a rule the unwinder does not follow: stop */
	CFA_RBP_DEREF = 6, /* CFA = *(rbp - cfa_off): functions that realign the stack
			    * (AVX code) keep the caller's rsp in a slot below rbp */
	CFA_RBX = 7,       /* CFA = rbx + cfa_off, for the leaf frame only (its rbx is
			    * the sampled one): a guess from the prologue of code
			    * without CFI that keeps its entry rsp in rbx
			    * (user/native/prologue.h) */
};

enum unwind_rbp_kind {
	RBP_SAME = 0,      /* caller's rbp is the current rbp */
	RBP_AT_CFA = 1,    /* caller's rbp was saved at [CFA + 8 * rbp_off8] */
	RBP_LOST = 2,      /* not recoverable (rule the unwinder does not follow) */
	RBP_AT_RBP = 3,    /* saved at [rbp + 8 * rbp_off8] (with CFA_RBP_DEREF) */
};

/* 8 bytes.  A CFA offset above 65535 or an rbp slot not a multiple of 8
 * within 8 KiB of the CFA does not fit: the row is CFA_UNSUPPORTED or
 * RBP_LOST (counted by the builder; none in libc, libpython or libtorch). */
#define UNWIND_CFA_OFF_MAX 0xffff
#define UNWIND_RBP_OFF8_MIN (-1024)
#define UNWIND_RBP_OFF8_MAX 1023
struct unwind_row {
	__u32 pc;
	union {
		struct {
			__u32 cfa_kind : 3;   /* enum unwind_cfa_kind */
			__u32 rbp_kind : 2;   /* enum unwind_rbp_kind */
			__s32 rbp_off8 : 11;  /* rbp saved at CFA + 8 * rbp_off8 */
			__u32 cfa_off : 16;
		};
		__u32 nrows;                  /* in the header (element 0) */
	};
};

/* The registers a native unwinder carries from a frame to its caller's
 * (bpf/unwind_step.h). */
struct unwind_regs {
	__u64 pc, sp, bp;
	__u64 bx;                    /* the leaf's rbx (CFA_RBX), then 0 */
};

#define UNWIND_NO_TABLE 0xffffffffu   /* header nrows: no rows (did not fit, unreadable) */

/* A page index follows the rows of a binary's table, so that a lookup
 * searches only the rows of one page of code (a few dozen) rather than all
 * (1.45 million in libtorch: 21 probes, each a likely cache miss when
 * sampling at 99 Hz).  Element 1 + nrows describes it: `pc` is the ELF
 * address of page 0 and `nrows` holds npages | shift << 24 (pages of 1 <<
 * shift bytes, shift >= 12).  Then come npages + 1 u32 entries, two per
 * element from 2 + nrows: entry k counts the rows whose pc lies below page
 * k, so the row covering a pc in page k is among rows [entry k, entry k+1]
 * (row entry k covers the page's first byte).  A table of fixed rules has
 * an empty index (meta all zero): a lookup searches all its rows. */
#define UNWIND_INDEX_SHIFT_MIN 12
#define UNWIND_INDEX_PAGES_MAX ((1u << 24) - 1)

/* Page k of a pc in a table whose index is described by meta; false when the
 * pc lies outside the pages the index covers (search all rows). */
static inline int unwind_index_page(const struct unwind_row *meta, __u32 pc, __u32 *k)
{
	__u32 shift = meta->nrows >> 24, npages = meta->nrows & UNWIND_INDEX_PAGES_MAX;

	if (shift < UNWIND_INDEX_SHIFT_MIN || shift > 31 || pc < meta->pc)
		return 0;
	*k = (pc - meta->pc) >> shift;
	return *k < npages;
}

/* The element holding index entry k of a table of nrows rows; the entry is
 * its u32 number (k & 1), pc first. */
static inline __u32 unwind_index_elem(__u32 nrows, __u32 k)
{
	return 2 + nrows + (k >> 1);
}

/* native_mapping.table: 0 no table (code without a file, JIT: frame
 * pointers); TABLE_TRAMPOLINE and TABLE_TRAMPOLINE_FP CPython's perf
 * trampolines (fixed one-row tables: 3.12/3.13's keep rbp, 3.14's push it);
 * else slot | tag << 16 of the binary's table. */
#define TABLE_NONE 0u
#define TABLE_TRAMPOLINE 1u
#define TABLE_TRAMPOLINE_FP 3u
#define TABLE_SLOT(t) ((t) & (PYPERF_MAX_TABLES - 1))

/* One executable mapping of a process, for the unwinder. */
struct native_mapping {
	__u64 start, end;            /* [start, end) in the process */
	__u64 bias;                  /* runtime address - ELF virtual address */
	__u32 table;                 /* its binary's table (see above) */
	__u32 flags;                 /* NATIVE_MAP_* */
};
/* native_mapping.flags: a leaf frame in this mapping keeps its own pc, not
 * the start of its unwind row (compiled Python, Cython: its lines are told
 * by the pc; elsewhere one stack for a stretch of code is what is wanted) */
#define NATIVE_MAP_EXACT_LEAF 1u

/* Value of the `native_procs` map, key: tgid.  Sorted by start. */
struct native_maps {
	__u32 n;
	__u32 pad;
	struct native_mapping m[PYPERF_MAX_MAPPINGS];
};

/* Counters kept per CPU by the sampler (index into the `stats` map). */
enum stat_idx {
	STAT_SAMPLES,         /* perf events seen in profiled processes */
	STAT_STACKS,          /* samples counted into a stack */
	STAT_NO_TSTATE,       /* thread has no PyThreadState (native thread) */
	STAT_NO_FRAMES,       /* PyThreadState has no Python frame */
	/* both are counted as native-only stacks unless --python-only */
	STAT_MAP_FULL,        /* counts map full: sample dropped */
	STAT_RINGBUF_FULL,    /* could not announce a new stack: sample dropped */
	STAT_TRUNCATED,       /* stacks deeper than PYPERF_MAX_FRAMES */
	STAT_BAD_READ,        /* frame walk hit unreadable memory */
	STAT_NEW_PID_EVENTS,  /* unclassified process announcements */
	STAT_NATIVE_INCOMPLETE, /* native unwinding stopped early */
	STAT_NATIVE_TRUNCATED,  /* deeper than PYPERF_MAX_NATIVE native frames */
	STAT_NATIVE_PENDING,    /* of the incomplete ones: a table was still being built */
	STAT_SWITCHES,          /* switch outs of profiled threads (--mode wall|offcpu) */
	STAT_OFFCPU_WALKS,      /* of those, walked */
	STAT_OFFCPU_BLOCKS,     /* walked blocks whose time was counted */
	STAT_NO_GIL,            /* --gil: samples dropped, the thread did not hold the GIL */
	STAT_FAULTS,            /* --mode faults: page faults of profiled processes */
	STAT_FAULT_WALKS,       /* of those, picked, on anonymous memory and walked */
	STAT_ALLOCS,            /* --mode alloc: allocator calls of profiled processes */
	STAT_ALLOC_WALKS,       /* of those, sampled and walked */
	STAT_LIVE_FULL,         /* leaks: sampled allocations not tracked, the map was full */
	STAT_OFFCPU_LOST,       /* walked blocks lost: another thread took the slot */
	STAT_NATIVE_SCANNED,    /* samples whose native walk scanned the stack for a
				 * return address (code without CFI nor frame pointers) */
	STAT_SCAN_NS,           /* ns spent in those scans (the scan alone, not the
				 * unwinding of what it found) */
	STAT_EVENTS_LOST,       /* --events: records lost, the ring buffer was full */
	STAT_TIMELINE_LOST,     /* -f timeline: samples counted but not put in time,
				 * the ring buffer was full */
	STAT_FRAME_READS,       /* reads of a thread's Python frames (a window of them
				 * from 3.11) */
	STAT_ROW_SEARCHES,      /* binary searches for an unwind row (the row cache
				 * missed) */
	STAT_CODE_IDS,          /* code objects' identities stored for the loader */
	STAT_ANNOUNCED,         /* stacks announced to the loader (count_stack) */
	STAT_FRAME_BYTES,       /* bytes of those reads of Python frames */
	STAT_CODE_READS,        /* reads of code objects, to name a new stack's frames */
	STAT_INTERP_HEAD_READS, /* reads of the interpreters' list head to find or check
				 * a thread's state (3.12+: an active cached one needs none) */
	STAT_NR,
};
#define STAT_SLOTS 40 /* struct scratch's counts: STAT_NR, rounded up */

/* Value of the `skip` map: until when a non-Python pid is not announced again. */
struct skip_info {
	__u64 retry_after_ns;
	__u32 refused;               /* the loader cannot profile it (an unsupported
				      * CPython): its samples are weighed */
	__u32 pad;
	__u64 weight;                /* what its samples weighed since it was refused
				      * (the report counts them) */
};

#endif /* PYPERF_H */
