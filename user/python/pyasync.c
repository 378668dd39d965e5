/* pyasync.c - see pyasync.h.  Everything here reads another process's
 * memory, which may change under it: every read is checked, every walk is
 * bounded, and an object is taken for a task only when its type says so. */
#include "pyasync.h"
#include "dwarfstruct.h"
#include "elfsym.h"
#include "errmsg.h"
#include "procmaps.h"
#include "pyread.h"
#include "pywalk.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* object layouts that have not changed from 3.12 to 3.15 (Include/object.h,
 * the cpython/ headers); the rest comes from the process */
#define TP_NAME 24               /* PyTypeObject.tp_name */
#define TP_BASICSIZE 32          /* PyTypeObject.tp_basicsize */
#define VAR_SIZE 16              /* PyVarObject.ob_size */
#define TUPLE_ITEMS 24           /* PyTupleObject.ob_item */
#define LIST_ITEMS 24            /* PyListObject.ob_item (a pointer) */
#define SET_MASK 32              /* PySetObject.mask */
#define SET_TABLE 40             /* PySetObject.table: {key, hash} entries */
#define CELL_REF 16              /* PyCellObject.ob_ref */
#define WEAKREF_OBJ 16           /* PyWeakReference.wr_object */
#define CFUNC_ML 16              /* PyCFunctionObject.m_ml */
#define CFUNC_SELF 24            /* PyCFunctionObject.m_self */
#define METHOD_SELF 24           /* PyMethodObject.im_self */
#define TASKGROUP_ATTRS 10       /* attributes TaskGroup.__init__ sets (3.12, 3.13) */
#define LONG_TAG 16              /* 3.12+ PyLongObject: lv_tag, then 30-bit digits */
#define MODULE_STATE 32          /* PyModuleObject.md_state */
#define DICT_KEYS 32             /* PyDictObject.ma_keys (3.12, 3.13) */
#define DICT_VALUES 40           /* PyDictObject.ma_values */
#define MAX_SCAN 4096            /* entries of a dict or set looked at */
#define MAX_STACK_SLOTS 65536    /* locals and value stack of a frame, at most */

static uint64_t rd(int pid, uint64_t addr)
{
	uint64_t v = 0;

	return addr && mem_read(pid, addr, &v, sizeof(v)) == 0 ? v : 0;
}

static int rd_u8(int pid, uint64_t addr)
{
	uint8_t v;

	return addr && mem_read(pid, addr, &v, 1) == 0 ? v : -1;
}

/* the name of obj's type ("" when unreadable) */
static void type_name(int pid, uint64_t obj, char *out, size_t len)
{
	uint64_t name = rd(pid, rd(pid, obj + PY_OB_TYPE) + TP_NAME);

	out[0] = 0;
	if (name && mem_read(pid, name, out, len - 1) == 0)
		out[len - 1] = 0;
	else
		out[0] = 0;
}

static bool type_is(int pid, uint64_t obj, const char *want)
{
	char n[64];

	type_name(pid, obj, n, sizeof(n));
	return !strcmp(n, want);
}

static bool is_task(int pid, const struct pyasync *a, uint64_t obj)
{
	char n[64];

	if (!obj)
		return false;
	if (a->is_task >= 0 && rd_u8(pid, obj + a->is_task) != 1)
		return false;
	type_name(pid, obj, n, sizeof(n));
	return strstr(n, "Task") != NULL;
}

/* ---- dicts (3.12/3.13: sys.modules, instance dicts) ---- */

/* Call fn(key, value) on each entry of dict obj in order until it returns
 * true; that value, or 0. */
static uint64_t dict_find(int pid, uint64_t dict,
			  bool (*fn)(int pid, uint64_t key, uint64_t value, void *ctx), void *ctx)
{
	uint64_t keys = rd(pid, dict + DICT_KEYS), values = rd(pid, dict + DICT_VALUES);
	uint8_t hdr[32];
	uint64_t n, entries, esize;

	if (!keys || mem_read(pid, keys, hdr, sizeof(hdr)) || hdr[9] > 40)
		return 0;
	memcpy(&n, hdr + 24, 8);
	entries = keys + 32 + (1ULL << hdr[9]);
	esize = hdr[10] == 0 ? 24 : 16; /* general: hash, key, value; else key, value */
	for (uint64_t i = 0; i < n && i < MAX_SCAN; i++) {
		uint64_t e[3] = { 0 }, key, value;

		if (mem_read(pid, entries + i * esize, e, esize))
			return 0;
		key = esize == 24 ? e[1] : e[0];
		value = esize == 24 ? e[2] : e[1];
		if (values && hdr[10] == 2) /* split: the values live apart */
			value = rd(pid, values + 8 * i);
		if (key && value && fn(pid, key, value, ctx))
			return value;
	}
	return 0;
}

struct str_key {
	const struct py_offsets *off;
	const char *want;
};

static bool key_is(int pid, uint64_t key, uint64_t value, void *ctx)
{
	const struct str_key *k = ctx;
	char *s = type_is(pid, key, "str") ? pyread_str(pid, key, k->off) : NULL;
	bool eq = s && !strcmp(s, k->want);

	(void)value;
	free(s);
	return eq;
}

/* ---- finding asyncio ---- */

/* the first file pid maps whose base name starts with prefix: its host path,
 * its path as mapped and (bias not NULL) its load bias; false: none */
static bool mapped_file(int pid, const char *prefix, char *host, size_t len, char *mapped,
			size_t mlen, uint64_t *bias)
{
	struct proc_maps maps;
	const struct proc_map *m;
	char err[256];
	bool ok = false;

	if (procmaps_read(pid, &maps, err, sizeof(err)))
		return false;
	m = procmaps_first_basename_prefix(&maps, prefix);
	if (m && m->path && procmaps_file_path(pid, m, host, len)) {
		snprintf(mapped, mlen, "%s", m->path);
		ok = !bias || elf_load_bias(host, &maps, m->path, bias, err, sizeof(err)) == 0;
	}
	procmaps_free(&maps);
	return ok;
}

/* 3.14+: the .AsyncioDebug section, in the interpreter (3.15) or in the
 * _asyncio extension (3.14).  0, 1: not there (yet), -1: refused. */
static int setup_published(const struct pyproc *py, struct pyasync *a, char *err, size_t errlen)
{
	uint64_t w[13];
	char host[PATH_MAX + 32], mapped[PATH_MAX];
	size_t got = 0;
	int rc;

	rc = elf_read_section(py->binary_file, ".AsyncioDebug", w, sizeof(w), &got, err, errlen);
	if (rc != 0 || got == 0) {
		if (!mapped_file(py->pid, "_asyncio", host, sizeof(host), mapped, sizeof(mapped),
				 NULL))
			return 1;
		rc = elf_read_section(host, ".AsyncioDebug", w, sizeof(w), &got, err, errlen);
		if (rc < 0)
			return -1;
		if (rc || got == 0) {
			set_err(err, errlen, "%s has no .AsyncioDebug section", mapped);
			return -1;
		}
	}
	if (got < sizeof(w)) {
		set_err(err, errlen, ".AsyncioDebug of %zu bytes, 3.%d's has %zu", got, py->minor,
			sizeof(w));
		return -1;
	}
	/* asyncio_task_object: size name awaited_by is_task awaited_by_is_set
	 * coro node; asyncio_interpreter_state: size tasks_head;
	 * asyncio_thread_state: size running_loop running_task tasks_head */
	for (int i = 1; i < 7; i++)
		if (w[i] >= w[0] || w[0] > 4096) {
			set_err(err, errlen, ".AsyncioDebug: task field %d at %llu, not below its "
				"size %llu: not a layout this pyperf-bpf knows", i,
				(unsigned long long)w[i], (unsigned long long)w[0]);
			return -1;
		}
	if (w[8] >= w[7] || w[10] >= w[9] || w[11] >= w[9] || w[12] >= w[9] ||
	    w[11] >= PYPERF_NO_OFFSET) {
		set_err(err, errlen, ".AsyncioDebug: thread or interpreter fields outside their "
			"structs: not a layout this pyperf-bpf knows");
		return -1;
	}
	a->published = true;
	a->task_name = (long)w[1];
	a->awaited_by = (long)w[2];
	a->is_task = (long)w[3];
	a->awaited_by_is_set = (long)w[4];
	a->task_coro = (long)w[5];
	a->task_node = (long)w[6];
	a->interp_tasks_head = (long)w[8];
	a->tstate_tasks_head = (long)w[12];
	/* FutureObj_HEAD: ..., awaited_by, fut_state (an int enum), is_task */
	a->fut_state = a->is_task - 4;
	a->bpf.tstate_task = (__u16)w[11];
	a->bpf.task_coro = (__u16)w[5];
	a->bpf.task_name = (__u16)w[1];
	return 0;
}

/* 3.12/3.13: layouts from the _asyncio module's DWARF, its state through
 * sys.modules["_asyncio"] */
static int setup_dwarf(const struct pyproc *py, struct pyasync *a, char *err, size_t errlen)
{
	static const char *const task_f[] = { "task_coro", "task_name", "task_state",
					      "task_callback0", "task_callbacks" };
	static const char *const state_f[] = { "current_tasks", "scheduled_tasks",
					       "eager_tasks" };
	static const char *const func_f[] = { "func_closure" };
	static const char *const wake[] = { "TaskWakeupDef" };
	long t[5], s[3], f[1];
	char host[PATH_MAX + 32], mapped[PATH_MAX];
	uint64_t bias = 0, def = 0, interp, modules, mod;
	struct str_key ctx = { &a->off, "_asyncio" };
	int rc;

	if (!mapped_file(py->pid, "_asyncio", host, sizeof(host), mapped, sizeof(mapped), &bias))
		return 1; /* asyncio not imported, or built in: see below */
	rc = dwarf_struct_offsets(host, "TaskObj", task_f, 5, t, NULL, err, errlen);
	if (rc == 0)
		rc = dwarf_struct_offsets(host, "asyncio_state", state_f, 3, s, NULL, err, errlen);
	if (rc == 0)
		rc = dwarf_struct_offsets(host, "PyFunctionObject", func_f, 1, f, NULL, err, errlen);
	if (rc > 0) {
		set_err(err, errlen, "%s has no DWARF describing its tasks (a source build "
			"keeps it)", mapped);
		return -1;
	}
	if (rc < 0)
		return -1;
	for (int i = 0; i < 5; i++)
		if (t[i] < 0 || t[i] >= PYPERF_NO_OFFSET || (i < 3 && s[i] < 0)) {
			set_err(err, errlen, "%s: TaskObj or asyncio_state lacks a field this "
				"pyperf-bpf reads", mapped);
			return -1;
		}
	if (elf_find_symbols(host, wake, 1, &def, NULL, err, errlen) == 0 && def)
		a->wakeup_def = def + bias;
	a->task_coro = t[0];
	a->task_name = t[1];
	a->fut_state = t[2];
	a->callback0 = t[3];
	a->callbacks = t[4];
	a->st_scheduled = s[1];
	a->st_eager = s[2];
	a->func_closure = f[0];
	/* sys.modules["_asyncio"].md_state */
	if (py->off.interp_modules == PYPERF_NO_OFFSET)
		return 1;
	interp = rd(py->pid, py->runtime_addr + py->off.runtime_interp_head);
	modules = rd(py->pid, interp + py->off.interp_modules);
	mod = modules ? dict_find(py->pid, modules, key_is, &ctx) : 0;
	a->state = rd(py->pid, mod + MODULE_STATE);
	if (!a->state)
		return 1; /* mapped but not in sys.modules yet: importing */
	a->bpf.current_tasks = rd(py->pid, a->state + s[0]);
	if (!a->bpf.current_tasks)
		return 1;
	a->bpf.tstate_task = PYPERF_NO_OFFSET;
	a->bpf.task_coro = (__u16)t[0];
	a->bpf.task_name = (__u16)t[1];
	a->bpf.dict_keys = DICT_KEYS;
	return 0;
}

int pyasync_setup(const struct pyproc *py, struct pyasync *a, char *err, size_t errlen)
{
	memset(a, 0, sizeof(*a));
	a->off = py->off;
	a->runtime_addr = py->runtime_addr;
	a->minor = py->minor;
	a->task_coro = a->task_name = a->fut_state = a->callback0 = a->callbacks = -1;
	a->awaited_by = a->awaited_by_is_set = a->is_task = a->task_node = -1;
	a->tstate_tasks_head = a->interp_tasks_head = a->st_scheduled = a->st_eager = -1;
	a->func_closure = -1;
	a->bpf.tstate_task = PYPERF_NO_OFFSET;
	if (py->major != 3 || py->minor < 12) {
		set_err(err, errlen, "asyncio tasks are read from CPython 3.12 on, this is %d.%d",
			py->major, py->minor);
		return -1;
	}
	if (py->off.gen_iframe == PYPERF_NO_OFFSET) {
		set_err(err, errlen, "where Python %d.%d keeps a coroutine's frame is unknown",
			py->major, py->minor);
		return -1;
	}
	return py->minor >= 14 ? setup_published(py, a, err, errlen) :
				 setup_dwarf(py, a, err, errlen);
}

/* ---- tasks ---- */

uint64_t pyasync_task_coro(int pid, const struct pyasync *a, uint64_t task)
{
	return a->task_coro >= 0 ? rd(pid, task + a->task_coro) : 0;
}

/* The object a suspended frame's value stack holds on top: what the
 * coroutine awaits (0 when the stack cannot be read or is out of bounds). */
static uint64_t stack_top(int pid, const struct py_offsets *o, uint64_t frame)
{
	uint64_t base = frame + o->frame_localsplus, sp;
	int32_t top = 0;

	if (o->frame_stack == PYPERF_NO_OFFSET || o->frame_localsplus == PYPERF_NO_OFFSET)
		return 0;
	if (o->stack_kind == PYSTACK_INDEX) {
		if (mem_read(pid, frame + o->frame_stack, &top, sizeof(top)) || top < 1 ||
		    top > MAX_STACK_SLOTS)
			return 0;
		return rd(pid, base + (uint64_t)(top - 1) * 8);
	}
	if (o->stack_kind != PYSTACK_POINTER)
		return 0;
	sp = rd(pid, frame + o->frame_stack);
	if (sp <= base || sp > base + MAX_STACK_SLOTS * 8ull || (sp - base) % 8)
		return 0;
	/* tagged _PyStackRefs; 3.15 leaves a null one (tag bits only) above
	 * the awaited object */
	for (int i = 1; i <= 2 && sp - 8ull * i >= base; i++) {
		uint64_t v = rd(pid, sp - 8ull * i) & ~(uint64_t)o->code_tag_bits;

		if (v)
			return v;
	}
	return 0;
}

int pyasync_task_waits(int pid, const struct pyasync *a, uint64_t task, struct py_frame *out,
		       int max)
{
	const struct py_offsets *o = &a->off;
	uint64_t coro = pyasync_task_coro(pid, a, task);
	uint64_t ctype = coro ? rd(pid, coro + PY_OB_TYPE) : 0;
	uint32_t st = 9;
	int n = 0;

	if (!coro || !ctype || o->gen_iframe == PYPERF_NO_OFFSET || a->fut_state < 0 ||
	    mem_read(pid, task + a->fut_state, &st, sizeof(st)) || st != 0)
		return 0; /* unreadable, or not pending */
	while (coro && n < max) {
		uint64_t frame = coro + o->gen_iframe, code, next;
		uint32_t instr;

		/* a suspended generator's frame is off every thread's chain: the
		 * yield cleared its `previous`; a running one is on a thread's */
		if (rd(pid, frame + o->frame_back))
			break;
		code = py_frame_code(o, rd(pid, frame + o->frame_code));
		if (!code)
			break;
		instr = py_frame_instr(o, rd(pid, frame + o->frame_instr), code);
		out[n].code = code;
		out[n].instr = instr;
		out[n].check = pywalk_code_check_at(pid, o, code);
		n++;
		/* not started yet (its stack is empty: the top slot would be a
		 * local), or a generator-based coroutine (it may have yielded
		 * with an empty stack): the innermost frame */
		if (instr == 0 || instr >= 0x7fff0000u || rd(pid, coro + PY_OB_TYPE) != ctype)
			break;
		next = stack_top(pid, o, frame);
		if (!next || next == coro)
			break;
		/* it awaits another coroutine, or a generator-based one
		 * (asyncio.sleep(0)); a future or task ends the chain */
		if (rd(pid, next + PY_OB_TYPE) != ctype && !type_is(pid, next, "generator"))
			break;
		coro = next;
	}
	/* leaf first, as the sampler gives them */
	for (int i = 0; i < n / 2; i++) {
		struct py_frame t = out[i];

		out[i] = out[n - 1 - i];
		out[n - 1 - i] = t;
	}
	return n;
}

bool pyasync_task_name(int pid, const struct pyasync *a, uint64_t task, char *out, size_t len)
{
	uint64_t name = a->task_name >= 0 ? rd(pid, task + a->task_name) : 0;
	char *s;

	out[0] = 0;
	if (!name)
		return false;
	if (type_is(pid, name, "int")) {
		/* an unnamed task keeps its number and formats it when asked */
		uint64_t tag = rd(pid, name + LONG_TAG), v = 0;
		uint32_t d[2] = { 0, 0 };

		if ((tag & 3) != 0 || (tag >> 3) > 2 ||
		    mem_read(pid, name + LONG_TAG + 8, d, (tag >> 3) * 4))
			return false;
		v = d[0] | ((uint64_t)d[1] << 30);
		snprintf(out, len, "Task-%llu", (unsigned long long)v);
		return true;
	}
	s = type_is(pid, name, "str") ? pyread_str(pid, name, &a->off) : NULL;
	if (!s)
		return false;
	snprintf(out, len, "%s", s);
	free(s);
	return true;
}

const char *pyasync_task_state(int pid, const struct pyasync *a, uint64_t task)
{
	uint32_t st = 9;

	if (a->fut_state < 0 || mem_read(pid, task + a->fut_state, &st, sizeof(st)))
		return "?";
	return st == 0 ? "pending" : st == 1 ? "cancelled" : st == 2 ? "finished" : "?";
}

/* ---- instance attributes (3.12/3.13) ---- */

static bool is_set_value(int pid, uint64_t key, uint64_t value, void *ctx)
{
	(void)key;
	(void)ctx;
	return type_is(pid, value, "set");
}

static bool is_task_value(int pid, uint64_t key, uint64_t value, void *ctx)
{
	(void)key;
	return is_task(pid, ctx, value);
}

/* The first of the first max attributes of Python object obj (in the
 * order they were first set) for which fn(0, value, ctx) holds, from the
 * instance's managed dict (at obj - 24) or its values: 3.12 keeps split
 * values behind a tagged pointer there, 3.13 inline after the object
 * (capacity, size, embedded and valid bytes, then the values); 0: none. */
static uint64_t attr_find(int pid, const struct pyasync *a, uint64_t obj, int max,
			  bool (*fn)(int pid, uint64_t key, uint64_t value, void *ctx), void *ctx)
{
	uint64_t d = rd(pid, obj - 24), values = 0;

	if (a->minor == 12 && (d & 1))
		values = d + 1; /* tagged: the values' address - 1 */
	else if (d)
		return dict_find(pid, d, fn, ctx);
	else if (a->minor >= 13)
		values = obj + rd(pid, rd(pid, obj + PY_OB_TYPE) + TP_BASICSIZE) + 8;
	for (int i = 0; values && i < max; i++) {
		uint64_t v = rd(pid, values + 8 * (uint64_t)i);

		if (v && fn(pid, 0, v, ctx))
			return v;
	}
	return 0;
}

/* 3.12/3.13: if callback cb is a task's wakeup, that task */
static uint64_t wakeup_owner(int pid, const struct pyasync *a, uint64_t cb)
{
	uint64_t ml, self;
	char name[32] = "";

	if (!type_is(pid, cb, "builtin_function_or_method"))
		return 0;
	ml = rd(pid, cb + CFUNC_ML);
	if (!ml || (a->wakeup_def ? ml != a->wakeup_def :
		    (mem_read(pid, rd(pid, ml), name, sizeof(name) - 1) ||
		     strcmp(name, "task_wakeup"))))
		return 0;
	self = rd(pid, cb + CFUNC_SELF);
	return is_task(pid, a, self) ? self : 0;
}

/* the callbacks of future fut (callback0, then the list of (callback,
 * context) tuples), up to max */
static int callbacks_of(int pid, const struct pyasync *a, uint64_t fut, uint64_t *out, int max)
{
	uint64_t cb0 = rd(pid, fut + a->callback0), list = rd(pid, fut + a->callbacks), items;
	int n = 0;
	int64_t len;

	if (cb0 && n < max)
		out[n++] = cb0;
	if (!list || !type_is(pid, list, "list"))
		return n;
	len = (int64_t)rd(pid, list + VAR_SIZE);
	items = rd(pid, list + LIST_ITEMS);
	for (int64_t i = 0; i < len && i < 64 && n < max; i++) {
		uint64_t tup = rd(pid, items + 8 * i);

		if (tup && type_is(pid, tup, "tuple"))
			out[n++] = rd(pid, tup + TUPLE_ITEMS);
	}
	return n;
}

/* 3.12/3.13: the task whose wakeup is among fut's callbacks, also through
 * a closure that holds a gathering future (asyncio.gather) or through the
 * TaskGroup that created fut */
static uint64_t awaiter_by_callbacks(int pid, const struct pyasync *a, uint64_t fut, int depth)
{
	uint64_t cbs[16];
	int n = callbacks_of(pid, a, fut, cbs, 16);

	for (int i = 0; i < n; i++) {
		uint64_t t = wakeup_owner(pid, a, cbs[i]), clo;
		int64_t nc;

		if (t)
			return t;
		/* asyncio.TaskGroup: its _on_task_done, bound to the group, whose
		 * one task-valued attribute is the task that entered it */
		if (type_is(pid, cbs[i], "method") &&
		    type_is(pid, (t = rd(pid, cbs[i] + METHOD_SELF)), "TaskGroup") &&
		    (t = attr_find(pid, a, t, TASKGROUP_ATTRS, is_task_value, (void *)a)))
			return t;
		if (depth > 0 || a->func_closure < 0 || !type_is(pid, cbs[i], "function"))
			continue;
		clo = rd(pid, cbs[i] + a->func_closure);
		if (!clo || !type_is(pid, clo, "tuple"))
			continue;
		nc = (int64_t)rd(pid, clo + VAR_SIZE);
		for (int64_t j = 0; j < nc && j < 16; j++) {
			uint64_t cell = rd(pid, clo + TUPLE_ITEMS + 8 * j);
			uint64_t v = cell ? rd(pid, cell + CELL_REF) : 0;

			if (v && type_is(pid, v, "_GatheringFuture") &&
			    (t = awaiter_by_callbacks(pid, a, v, depth + 1)))
				return t;
		}
	}
	return 0;
}

uint64_t pyasync_awaiter(int pid, const struct pyasync *a, uint64_t task)
{
	uint64_t aw;

	if (!a->published)
		return a->callback0 >= 0 ? awaiter_by_callbacks(pid, a, task, 0) : 0;
	aw = rd(pid, task + a->awaited_by);
	if (!aw)
		return 0;
	if (rd_u8(pid, task + a->awaited_by_is_set) == 1) {
		/* a set of awaiters: the first task in it */
		uint64_t mask = rd(pid, aw + SET_MASK), table = rd(pid, aw + SET_TABLE);

		for (uint64_t i = 0; i <= mask && i < 256; i++) {
			uint64_t k = rd(pid, table + 16 * i);

			if (is_task(pid, a, k))
				return k;
		}
		return 0;
	}
	return is_task(pid, a, aw) ? aw : 0;
}

/* ---- every task (dump --async) ---- */

/* 3.14+: the tasks on the circular list whose head is at head */
static int list_tasks(int pid, const struct pyasync *a, uint64_t head, uint64_t *out, int n,
		      int max)
{
	uint64_t node = rd(pid, head);

	for (int i = 0; node && node != head && i < 100000 && n < max; i++) {
		uint64_t t = node - (uint64_t)a->task_node;

		if (is_task(pid, a, t))
			out[n++] = t;
		node = rd(pid, node);
	}
	return n;
}

/* the entries of set object s, up to max (dummies and empties left out by
 * the caller's checks) */
static int set_keys(int pid, uint64_t s, uint64_t *out, int max)
{
	uint64_t mask = rd(pid, s + SET_MASK), table = rd(pid, s + SET_TABLE);
	int n = 0;

	for (uint64_t i = 0; table && i <= mask && i < MAX_SCAN && n < max; i++) {
		uint64_t k = rd(pid, table + 16 * i);

		if (k)
			out[n++] = k;
	}
	return n;
}

/* 3.12/3.13: the set holding a WeakSet's references, its first attribute
 * (`data`, set first by WeakSet.__init__) */
static uint64_t weakset_data(int pid, const struct pyasync *a, uint64_t ws)
{
	return attr_find(pid, a, ws, 1, is_set_value, NULL);
}

int pyasync_all_tasks(int pid, const struct pyasync *a, uint64_t *out, int max)
{
	static uint64_t keys[MAX_SCAN];
	const struct py_offsets *o = &a->off;
	uint64_t interp, ts, ws, data, eager;
	int n = 0, k;

	if (a->published) {
		/* tasks of live threads hang off their thread states, those of
		 * threads gone off the interpreter */
		interp = rd(pid, a->runtime_addr + o->runtime_interp_head);
		if (!interp)
			return -1;
		n = list_tasks(pid, a, interp + a->interp_tasks_head, out, n, max);
		ts = rd(pid, interp + o->interp_threads_head);
		for (int i = 0; ts && i < PYPERF_MAX_THREADS; i++) {
			n = list_tasks(pid, a, ts + a->tstate_tasks_head, out, n, max);
			ts = rd(pid, ts + o->tstate_next);
		}
		return n;
	}
	if (!a->state)
		return -1;
	/* asyncio.tasks._scheduled_tasks (a WeakSet) and the eager ones */
	ws = rd(pid, a->state + a->st_scheduled);
	data = ws ? weakset_data(pid, a, ws) : 0;
	eager = a->st_eager >= 0 ? rd(pid, a->state + a->st_eager) : 0;
	k = data ? set_keys(pid, data, keys, MAX_SCAN) : 0;
	for (int i = 0; i < k && n < max; i++) {
		uint64_t t = rd(pid, keys[i] + WEAKREF_OBJ);

		if (is_task(pid, a, t))
			out[n++] = t;
	}
	k = eager && type_is(pid, eager, "set") ? set_keys(pid, eager, keys, MAX_SCAN) : 0;
	for (int i = 0; i < k && n < max; i++)
		if (is_task(pid, a, keys[i]))
			out[n++] = keys[i];
	return n;
}
