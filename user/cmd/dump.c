/* dump.c - `pyperf-bpf dump -p PID`: the stack of every thread of a Python
 * process, once, whether the thread runs, waits for the GIL or sleeps.
 *
 * The perf event sampler only sees threads on a CPU, so dump works from user
 * space.  It stops every thread of the process with ptrace (PTRACE_SEIZE +
 * PTRACE_INTERRUPT: no signal reaches the program), reads each thread's
 * registers, and pairs OS threads with PyThreadStates by the FS base, which
 * is what CPython stores as the thread id (pthread_self).  pywalk.c then walks
 * the frames and, with --native, unwinds the native stack with the same rows
 * the sampler uses.  Each thread's stack goes through the naming step
 * (session/naming.h) like a sampled one, so names and the native merge are
 * the sampler's.  Threads run again before anything is printed. */
#include "dump.h"
#include "cmdline.h"
#include "errmsg.h"
#include "naming.h"
#include "native.h"
#include "proctree.h"
#include "dbgfetch.h"
#include "output.h"
#include "profile.h"
#include "pyasync.h"
#include "pyobj.h"
#include "pyread.h"
#include "pywalk.h"

#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_THREADS 4096
#define MAX_TASKS 100000             /* asyncio tasks listed */
#define STOP_TIMEOUT_MS 2000
#define DUMP_FETCH_WAIT_S 10             /* for debug files from debuginfod */

/* --locals: one Python frame's variables, read while its thread was stopped */
struct dlocals {
	uint32_t instr;              /* the frame's instruction, as its pframe's */
	int n;
	struct pylocal *v;
};

struct dthread {
	int tid;
	char state;                  /* /proc state before we stopped it: R, S, D... */
	bool stopped;                /* seized and in a ptrace stop */
	struct user_regs_struct regs;
	struct dlocals *locals;      /* --locals: per Python frame, leaf first */
	uint32_t nlocals;
};

struct dumper {
	const struct dump_opts *o;
	struct dbgfetch *fetch;      /* debuginfod, with --native (NULL: none) */
	struct pyproc py;
	struct dthread *t;
	size_t n;
	struct profile prof;
	struct naming names;
	struct native nat;
	struct native_store store;
	struct unwind_row *table[PYPERF_MAX_TABLES]; /* the unwind tables, in memory */
	/* --async, read while the threads are stopped */
	struct dtask *tasks;
	int ntasks;
	char async_note[512];        /* why there are none, when there are none */
};

/* An asyncio task as dump prints it. */
struct dtask {
	uint64_t addr, awaiter;
	char name[PYASYNC_NAME_MAX];
	const char *state;
	char where[512];             /* its coroutine: function (file:line) */
	char waits[512];             /* the innermost coroutine it waits in, if another */
	bool printed;
};

static char thread_state(int pid, int tid)
{
	char path[64], buf[512], *p;
	FILE *f;
	size_t len;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", pid, tid);
	f = fopen(path, "r");
	if (!f)
		return '?';
	len = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[len] = 0;
	p = strrchr(buf, ')'); /* the name may hold spaces and parentheses */
	return p && p[1] == ' ' && p[2] ? p[2] : '?';
}

static bool known(const struct dumper *d, int tid)
{
	for (size_t i = 0; i < d->n; i++)
		if (d->t[i].tid == tid)
			return true;
	return false;
}

/* wait for tid's ptrace stop, at most STOP_TIMEOUT_MS */
static bool wait_stop(int tid)
{
	for (int ms = 0; ms < STOP_TIMEOUT_MS; ms++) {
		int st;
		pid_t r = waitpid(tid, &st, __WALL | WNOHANG);

		if (r == tid)
			return WIFSTOPPED(st);
		if (r < 0)
			return false;
		usleep(1000);
	}
	return false;
}

/* Seize and interrupt every thread, until a pass over /proc/PID/task finds
 * none new (running threads may start others meanwhile). */
static int stop_threads(struct dumper *d, char *err, size_t errlen)
{
	char path[64];
	bool added = true;

	d->t = calloc(MAX_THREADS, sizeof(*d->t));
	if (!d->t) {
		set_err(err, errlen, "out of memory");
		return -1;
	}
	snprintf(path, sizeof(path), "/proc/%d/task", d->o->pid);
	while (added) {
		DIR *dir = opendir(path);
		struct dirent *e;

		if (!dir) {
			set_err(err, errlen, "pid %d: %s", d->o->pid,
				 errno == ENOENT ? "no such process" : strerror(errno));
			return -1;
		}
		added = false;
		while ((e = readdir(dir)) && d->n < MAX_THREADS) {
			int tid = atoi(e->d_name);
			struct dthread *t = &d->t[d->n];

			if (tid <= 0 || known(d, tid))
				continue;
			t->tid = tid;
			t->state = thread_state(d->o->pid, tid);
			d->n++;
			added = true;
			if (ptrace(PTRACE_SEIZE, tid, 0, 0)) {
				if (errno == ESRCH)
					continue; /* it exited */
				set_err(err, errlen, "pid %d: cannot stop thread %d: %s%s", d->o->pid,
					 tid, strerror(errno),
					 errno == EPERM ? " (is a debugger attached?)" : "");
				closedir(dir);
				return -1;
			}
			t->stopped = ptrace(PTRACE_INTERRUPT, tid, 0, 0) == 0 && wait_stop(tid) &&
				     ptrace(PTRACE_GETREGS, tid, 0, &t->regs) == 0;
		}
		closedir(dir);
	}
	return 0;
}

static void resume_threads(struct dumper *d)
{
	for (size_t i = 0; i < d->n; i++)
		ptrace(PTRACE_DETACH, d->t[i].tid, 0, 0);
}

/* The native_store of dump: tables in memory, built when the walk needs them. */
static long mem_create(void *ctx, const struct unwind_row *t, size_t n)
{
	struct unwind_row *v = malloc(n * sizeof(*v));

	(void)ctx;
	if (!v)
		return -1;
	memcpy(v, t, n * sizeof(*v));
	return (long)(uintptr_t)v;
}

static int mem_install(void *ctx, uint32_t slot, long h)
{
	struct dumper *d = ctx;

	free(d->table[slot]);
	d->table[slot] = (struct unwind_row *)(uintptr_t)h;
	return 0;
}

static void mem_remove(void *ctx, uint32_t slot)
{
	struct dumper *d = ctx;

	free(d->table[slot]);
	d->table[slot] = NULL;
}

static void mem_discard(void *ctx, long h)
{
	(void)ctx;
	free((void *)(uintptr_t)h);
}

static const struct unwind_row *mem_table(void *ctx, uint32_t table)
{
	struct dumper *d = ctx;
	const struct unwind_row *t = d->table[TABLE_SLOT(table)];

	if (!t || t[0].pc != table) {
		native_table_request(&d->nat, table); /* built now: not threaded */
		t = d->table[TABLE_SLOT(table)];
	}
	return t;
}

/* The PyThreadStates of the thread with this FS base, one per interpreter
 * it runs in (innermost first), into out[0..PYPERF_MAX_NEST); how many. */
static uint32_t tstates_of(const struct dumper *d, const uint64_t *ts, const uint64_t *ids,
			   int nts, uint64_t fsbase, uint64_t *out, uint64_t *out_ids)
{
	uint32_t n = 0;

	for (int i = 0; i < nts && n < PYPERF_MAX_NEST; i++)
		if (pywalk_thread_id(&d->py, ts[i]) == fsbase) {
			out_ids[n] = ids[i];
			out[n++] = ts[i];
		}
	return n;
}

/* a frame's instruction as its pframe has it (naming.c) */
static uint32_t pframe_instr(uint32_t raw)
{
	uint32_t instr = PY_FRAME_INSTR(raw);

	return instr >= 0x7fff0000u ? UINT32_MAX : instr;
}

/* --locals: the variables of each of t's Python frames (n, leaf first) */
static void read_locals(struct dumper *d, struct dthread *t, const struct py_frame *frames,
			const uint64_t *addrs, uint32_t n)
{
	static struct pylocal v[PYOBJ_MAX_LOCALS];

	t->locals = calloc(n, sizeof(*t->locals));
	if (!t->locals)
		return;
	t->nlocals = n;
	for (uint32_t i = 0; i < n; i++) {
		int k = pyobj_locals(d->o->pid, &d->py.off, addrs[i], frames[i].code, v,
				     PYOBJ_MAX_LOCALS);

		/* an interpreter's mark has no variables, nor any frame's instr */
		t->locals[i].instr = frames[i].code == PY_INTERP_MARK ? UINT32_MAX - 1
								   : pframe_instr(frames[i].instr);
		if (k > 0 && (t->locals[i].v = malloc((size_t)k * sizeof(*v)))) {
			memcpy(t->locals[i].v, v, (size_t)k * sizeof(*v));
			t->locals[i].n = k;
		}
	}
}

/* The variables of Python frame f, the next of t's frames from *next on
 * that runs f's instruction (frames the names leave out, as the init shim,
 * are passed over); NULL: none. */
static const struct dlocals *locals_of(const struct dthread *t, const struct pframe *f,
				       uint32_t *next)
{
	for (uint32_t j = *next; t && j < t->nlocals; j++)
		if (t->locals[j].instr == f->instr) {
			*next = j + 1;
			return &t->locals[j];
		}
	return NULL;
}

/* Walk one stopped thread, with its states in ntstates interpreters
 * (innermost first), and add its stack to the profile (one sample). */
static void walk_thread(struct dumper *d, struct dthread *t, const uint64_t *tstates,
			const uint64_t *ids, uint32_t ntstates, const struct native_maps *nm)
{
	uint64_t tstate = ntstates ? tstates[0] : 0;
	static struct py_frame frames[PYPERF_MAX_FRAMES];
	static uint64_t addrs[PYPERF_MAX_FRAMES];
	static __u64 native[PYPERF_MAX_NATIVE];
	char comm[PYPERF_COMM_LEN + 1] = "", path[64];
	struct raw_stack raw = { .pid = d->o->pid, .tid = t->tid, .gen = 1,
				 .hash = (uint64_t)t->tid, /* one stack per thread */
				 .thread_name = comm, .py = frames, .native = native };
	struct stack_ref ref = { .pid = (uint32_t)d->o->pid, .gen = 1, .hash = raw.hash };
	uint32_t pyflags = 0, natflags = 0;
	FILE *f;

	if (tstate)
		raw.npy = pywalk_frames_nested(&d->py, tstates, ids, ntstates, frames, addrs,
					       PYPERF_MAX_FRAMES, &pyflags);
	if (d->o->locals && raw.npy)
		read_locals(d, t, frames, addrs, raw.npy);
	if (nm && t->stopped) {
		struct unwind_regs g = { t->regs.rip, t->regs.rsp, t->regs.rbp, t->regs.rbx };

		raw.nnative = pywalk_native(d->o->pid, nm, mem_table, d, g, native,
					    PYPERF_MAX_NATIVE, &natflags);
	}
	raw.flags = pyflags | natflags;
	if (tstate && pywalk_runs_gc(&d->py, tstate))
		raw.flags |= STACK_GC; /* stopped in the collector: <GC> above its caller */
	snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", d->o->pid, t->tid);
	if ((f = fopen(path, "r"))) {
		if (fgets(comm, sizeof(comm), f))
			comm[strcspn(comm, "\n")] = 0;
		fclose(f);
	}
	if (naming_add_stack(&d->names, &d->prof, &raw) == 0)
		profile_add_count(&d->prof, &ref, (uint32_t)t->tid, 1);
	if (tstate) { /* its threading.Thread's name; the main thread has none */
		char *name = pyobj_thread_name(d->o->pid, &d->py.off, tstate);

		profile_set_thread_pyname(&d->prof, (uint32_t)t->tid,
					  name ? name : t->tid == d->o->pid ? "MainThread" : NULL);
		free(name);
	}
}

/* "function (file:line)" of code at instruction offset instr, or "" */
static void code_where(const struct dumper *d, uint64_t code, uint32_t instr, char *out,
		       size_t len)
{
	const struct py_offsets *o = &d->py.off;
	struct func *fn = code ? pyread_code(d->o->pid, code, pywalk_code_check(&d->py, code), o,
					    &d->py.types, NULL)
			       : NULL;

	out[0] = 0;
	if (!fn)
		return;
	snprintf(out, len, "%s (%s:%d)", fn->name, fn->file, func_line(fn, instr));
	func_free(fn);
}

/* where coroutine coro is: "function (file:line)", or "" */
static void coro_where(const struct dumper *d, uint64_t coro, char *out, size_t len)
{
	const struct py_offsets *o = &d->py.off;
	uint64_t frame = coro + o->gen_iframe, raw = 0, instr = 0, code;

	out[0] = 0;
	if (!coro || mem_read(d->o->pid, frame + o->frame_code, &raw, 8) ||
	    mem_read(d->o->pid, frame + o->frame_instr, &instr, 8))
		return;
	code = py_frame_code(o, raw);
	code_where(d, code, py_frame_instr(o, instr, code), out, len);
}

/* every asyncio task, its state, coroutine and awaiting task */
static void collect_tasks(struct dumper *d)
{
	static uint64_t addrs[MAX_TASKS];
	static struct py_frame chain[PYPERF_MAX_FRAMES];
	struct pyasync a;
	int rc = pyasync_setup(&d->py, &a, d->async_note, sizeof(d->async_note)), n;

	if (rc > 0)
		snprintf(d->async_note, sizeof(d->async_note), "asyncio is not imported");
	if (rc)
		return;
	n = pyasync_all_tasks(d->o->pid, &a, addrs, MAX_TASKS);
	if (n < 0) {
		snprintf(d->async_note, sizeof(d->async_note), "its task list cannot be read");
		return;
	}
	d->tasks = calloc(n ? (size_t)n : 1, sizeof(*d->tasks));
	if (!d->tasks) {
		snprintf(d->async_note, sizeof(d->async_note), "out of memory");
		return;
	}
	for (int i = 0; i < n; i++) {
		struct dtask *t = &d->tasks[d->ntasks];

		/* a set can hold a task twice only if it changed while read */
		for (int j = 0; j < d->ntasks; j++)
			if (d->tasks[j].addr == addrs[i])
				t = NULL;
		if (!t)
			continue;
		t->addr = addrs[i];
		if (!pyasync_task_name(d->o->pid, &a, t->addr, t->name, sizeof(t->name)))
			snprintf(t->name, sizeof(t->name), "?");
		t->state = pyasync_task_state(d->o->pid, &a, t->addr);
		t->awaiter = pyasync_awaiter(d->o->pid, &a, t->addr);
		coro_where(d, pyasync_task_coro(d->o->pid, &a, t->addr), t->where, sizeof(t->where));
		/* a task suspended in coroutines it awaits: the innermost */
		if (pyasync_task_waits(d->o->pid, &a, t->addr, chain, PYPERF_MAX_FRAMES) > 1)
			code_where(d, chain[0].code, chain[0].instr, t->waits, sizeof(t->waits));
		d->ntasks++;
	}
}

static int collect(struct dumper *d, char *err, size_t errlen)
{
	static uint64_t ts[PYPERF_MAX_THREADS], ts_ids[PYPERF_MAX_THREADS];
	static struct native_maps nm;
	bool have_maps = false;
	int nts;

	if (d->o->native) {
		d->store = (struct native_store){ .create = mem_create, .install = mem_install,
						  .remove = mem_remove, .discard = mem_discard,
						  .ctx = d };
		if (native_init(&d->nat, &d->store, UINT64_MAX, false)) {
			set_err(err, errlen, "out of memory");
			return -1;
		}
		d->nat.debuginfo_path = d->o->debuginfo_path;
		d->nat.fetch = d->fetch;
		d->names.nat = &d->nat;
		have_maps = native_proc_update(&d->nat, d->o->pid, &nm, err, errlen) == 0;
	}
	if (naming_set_python(&d->names, &d->prof, &d->py, 1)) {
		set_err(err, errlen, "out of memory");
		return -1;
	}
	nts = pywalk_threads(&d->py, ts, ts_ids, PYPERF_MAX_THREADS);
	if (nts < 0)
		nts = 0; /* not initialised yet, or finalising: no Python threads */
	for (size_t i = 0; i < d->n; i++) {
		struct dthread *t = &d->t[i];
		uint64_t mine[PYPERF_MAX_NEST], mine_ids[PYPERF_MAX_NEST];
		uint32_t nmine = t->stopped ? tstates_of(d, ts, ts_ids, nts, t->regs.fs_base,
							 mine, mine_ids) : 0;

		if (nmine || (d->o->native && t->stopped))
			walk_thread(d, t, mine, mine_ids, nmine, have_maps ? &nm : NULL);
	}
	if (d->o->async_tasks)
		collect_tasks(d);
	return 0;
}

static const char *state_word(char s)
{
	switch (s) {
	case 'R':
		return "running";
	case 'S':
		return "sleeping";
	case 'D':
		return "waiting (uninterruptible)";
	case 'T':
	case 't':
		return "stopped";
	default:
		return "?";
	}
}

static const struct dthread *find_thread(const struct dumper *d, uint32_t tid)
{
	for (size_t i = 0; i < d->n; i++)
		if ((uint32_t)d->t[i].tid == tid)
			return &d->t[i];
	return NULL;
}

static int cmp_tid(const void *a, const void *b)
{
	uint32_t x = (*(struct psample *const *)a)->tid, y = (*(struct psample *const *)b)->tid;

	return x < y ? -1 : x > y;
}

static void print_stack(const struct dumper *d, const struct psample *s)
{
	struct sbuf b = { 0 };
	const struct pstack *st = s->stack;
	const struct dthread *t = find_thread(d, s->tid);
	bool any = false;
	uint32_t next = 0;

	printf("\nThread %u \"%s\" (%s)\n", s->tid, profile_thread_name(&d->prof, s->tid),
	       state_word(t ? t->state : '?'));
	for (uint32_t i = 0; i < st->nframes; i++) {
		const struct pframe *f = &st->frames[i];
		const struct dlocals *l;

		/* without --native: Python frames, and marks (<GC>, a task's wait) */
		if (!d->o->native && f->fn->kind != FN_PYTHON && f->fn->kind != FN_MARK)
			continue;
		sb_reset(&b);
		out_frame_label(&b, f, !d->o->no_lines);
		printf("    %s\n", sb_ok(&b) ? b.s : "?");
		any = true;
		if (f->fn->kind != FN_PYTHON || !(l = locals_of(t, f, &next)))
			continue;
		/* as py-spy prints them: arguments, then the other locals */
		for (int k = 0; k < l->n; k++) {
			if (k == 0 || l->v[k].arg != l->v[k - 1].arg)
				printf("        %s\n", l->v[k].arg ? "Arguments:" : "Locals:");
			printf("            %s: %s\n", l->v[k].name, l->v[k].repr);
		}
	}
	if (st->flags & STACK_TRUNCATED)
		printf("    [more frames not shown]\n");
	if (st->flags & STACK_BAD_READ)
		printf("    [the rest could not be read]\n");
	if (!any)
		printf("    (no Python frames)\n");
	sb_free(&b);
}

static const struct dtask *task_at(const struct dumper *d, uint64_t addr)
{
	for (int i = 0; addr && i < d->ntasks; i++)
		if (d->tasks[i].addr == addr)
			return &d->tasks[i];
	return NULL;
}

/* t and, below it, the tasks that await it */
static void print_task(const struct dumper *d, struct dtask *t, int depth)
{
	t->printed = true;
	printf("%*stask \"%s\" %s%s%s%s%s\n", 2 + 2 * depth, "", t->name, t->state,
	       t->where[0] ? ", in " : "", t->where, t->waits[0] ? ", waiting in " : "",
	       t->waits);
	for (int i = 0; i < d->ntasks; i++)
		if (!d->tasks[i].printed && d->tasks[i].awaiter == t->addr)
			print_task(d, &d->tasks[i], depth < 40 ? depth + 1 : depth);
}

static void print_tasks(const struct dumper *d)
{
	if (!d->ntasks) {
		printf("\nNo asyncio tasks: %s.\n",
		       d->async_note[0] ? d->async_note : "the process has none");
		return;
	}
	printf("\nAsyncio tasks (%d), each above the tasks that await it:\n", d->ntasks);
	/* roots first: tasks nobody (listed) awaits; then any left in a cycle */
	for (int i = 0; i < d->ntasks; i++)
		if (!task_at(d, d->tasks[i].awaiter))
			print_task(d, &d->tasks[i], 0);
	for (int i = 0; i < d->ntasks; i++)
		if (!d->tasks[i].printed)
			print_task(d, &d->tasks[i], 0);
}

/* --json: the objects written so far (across the processes of --subprocesses) */
static unsigned json_objects;

/* --json: a frame's locals as py-spy gives them, [] when none were read,
 * null without --locals; "cut": their repr is not all of the value */
static void json_locals(struct sbuf *b, const struct dlocals *l, bool asked)
{
	if (!asked) {
		sb_puts(b, "null");
		return;
	}
	sb_puts(b, "[");
	for (int k = 0; l && k < l->n; k++) {
		sb_puts(b, k ? ", {\"name\": " : "{\"name\": ");
		out_json_str(b, l->v[k].name);
		sb_printf(b, ", \"addr\": %" PRIu64 ", \"arg\": %s, \"repr\": ", l->v[k].addr,
			  l->v[k].arg ? "true" : "false");
		out_json_str(b, l->v[k].repr);
		sb_printf(b, ", \"cut\": %s}", l->v[k].cut ? "true" : "false");
	}
	sb_puts(b, "]");
}

/* --json, one thread: py-spy dump --json's fields (what we do not know is
 * null: thread_id, owns_gil, process_info; thread_name is Python's where the
 * thread has one, else the OS's) */
static void json_thread(const struct dumper *d, const struct psample *s, struct sbuf *b)
{
	const struct pstack *st = s->stack;
	const struct dthread *t = find_thread(d, s->tid);
	bool first = true;
	uint32_t next = 0;

	sb_printf(b, "%s  {\n    \"pid\": %d,\n    \"thread_id\": null,\n    \"thread_name\": ",
		  json_objects++ ? ",\n" : "", d->o->pid);
	out_json_str(b, profile_thread_name(&d->prof, s->tid));
	sb_printf(b, ",\n    \"os_thread_id\": %u,\n    \"active\": %s,\n"
		  "    \"owns_gil\": null,\n    \"frames\": [", s->tid,
		  t && t->state == 'R' ? "true" : "false");
	for (uint32_t i = 0; i < st->nframes; i++) {
		const struct pframe *f = &st->frames[i];
		const struct func *fn = f->fn;
		const char *slash = strrchr(fn->file, '/');
		bool py = fn->kind == FN_PYTHON;

		/* without --native: Python frames, and where an interpreter's begin */
		if (!d->o->native && !py && !func_is_interp(fn))
			continue;
		sb_puts(b, first ? "\n      {\"name\": " : ",\n      {\"name\": ");
		first = false;
		out_json_str(b, fn->name);
		sb_puts(b, ", \"filename\": ");
		out_json_str(b, fn->file);
		sb_puts(b, ", \"module\": ");
		if (py)
			sb_puts(b, "null");
		else
			out_json_str(b, fn->file);
		sb_puts(b, ", \"short_filename\": ");
		out_json_str(b, slash ? slash + 1 : fn->file);
		if (py && !d->o->no_lines)
			sb_printf(b, ", \"line\": %d", func_line(fn, f->instr));
		else
			sb_puts(b, ", \"line\": null");
		sb_puts(b, ", \"locals\": ");
		json_locals(b, d->o->locals && py ? locals_of(t, f, &next) : NULL, d->o->locals && py);
		sb_puts(b, "}");
	}
	sb_puts(b, first ? "],\n    \"process_info\": null\n  }" :
			   "\n    ],\n    \"process_info\": null\n  }");
}

static void print_dump_json(const struct dumper *d)
{
	size_t n;
	struct psample **v = profile_samples(&d->prof, &n);
	struct sbuf b = { 0 };

	if (!v)
		return;
	qsort(v, n, sizeof(*v), cmp_tid);
	for (size_t i = 0; i < n; i++)
		json_thread(d, v[i], &b);
	if (sb_ok(&b) && b.s) /* no thread walked (an interpreter not up yet): nothing */
		fputs(b.s, stdout);
	sb_free(&b);
	free(v);
}

static void print_dump(const struct dumper *d)
{
	size_t n;
	struct psample **v = profile_samples(&d->prof, &n);
	const struct pproc *pp = hmap_get(&d->prof.procs, &d->o->pid, sizeof(int));

	printf("Process %d: %s\n", d->o->pid, pp && pp->cmdline[0] ? pp->cmdline : "?");
	if (pp && pp->ctr.id[0])
		printf("Container %s %.12s%s%s, pid %d in it\n", pp->ctr.engine, pp->ctr.id,
		       pp->ctr.pod[0] ? ", pod " : "", pp->ctr.pod, pp->ns_pid);
	else if (pp && pp->ns_pid && pp->ns_pid != pp->pid)
		printf("Pid %d in its pid namespace\n", pp->ns_pid);
	printf("Python %d.%d (%s)\n", d->py.major, d->py.minor, d->py.binary);
	if (!v)
		return;
	qsort(v, n, sizeof(*v), cmp_tid);
	for (size_t i = 0; i < n; i++)
		print_stack(d, v[i]);
	if (!n)
		printf("\nNo thread runs Python code.\n");
	free(v);
	if (d->o->async_tasks)
		print_tasks(d);
}

int dump_run(const struct dump_opts *o)
{
	struct dumper d;
	char err[1024];
	int rc = 1;

	memset(&d, 0, sizeof(d));
	d.o = o;
	profile_init(&d.prof);
	naming_init(&d.names, NULL);
	switch (pyproc_inspect(o->pid, &d.py, err, sizeof(err))) {
	case PYPROC_OK:
		break;
	case PYPROC_NOT_PYTHON:
	case PYPROC_GONE:
		if (o->quiet_not_python) { /* a child that is not CPython, or gone */
			rc = 0;
			goto quiet;
		}
		goto out;
	default:
		goto out;
	}
	if (o->native) /* before the threads are stopped: no time of theirs */
		d.fetch = dbgfetch_start(DBGFETCH_TIMEOUT_S, false);
	if (stop_threads(&d, err, sizeof(err)) == 0 && collect(&d, err, sizeof(err)) == 0)
		rc = 0;
	resume_threads(&d);
	if (rc == 0 && d.fetch) {
		/* debug files asked for while naming: a bounded wait, then the
		 * names they give (the process runs on meanwhile) */
		if (!dbgfetch_wait(d.fetch, DUMP_FETCH_WAIT_S))
			fprintf(stderr, "pyperf-bpf: debuginfod: no answer in %d s; those binaries "
				"are shown as binary+0xOFFSET\n", DUMP_FETCH_WAIT_S);
		native_debug_poll(&d.nat);
	}
	if (rc == 0) {
		if (o->json)
			print_dump_json(&d);
		else
			print_dump(&d);
		if (fflush(stdout) || ferror(stdout)) {
			set_err(err, sizeof(err), "cannot write stdout: %s", strerror(errno));
			rc = 1;
		}
	}
out:
	if (rc)
		fprintf(stderr, "pyperf-bpf: %s\n", err);
quiet:
	profile_free(&d.prof);
	naming_free(&d.names);
	if (o->native)
		native_free(&d.nat);
	dbgfetch_stop(d.fetch);
	for (size_t i = 0; i < PYPERF_MAX_TABLES; i++)
		free(d.table[i]);
	for (size_t i = 0; d.t && i < d.n; i++) {
		for (uint32_t j = 0; j < d.t[i].nlocals; j++)
			free(d.t[i].locals[j].v);
		free(d.t[i].locals);
	}
	free(d.t);
	free(d.tasks);
	return rc;
}

/* ---- the command line ---- */

enum { OPT_NO_LINES = 256, OPT_ASYNC, OPT_SUBPROCESSES, OPT_JSON, OPT_LOCALS };

/* --subprocesses: the process, then each CPython process under it (by
 * pid), a blank line between; the status is the first process's */
static int dump_tree(struct dump_opts *o)
{
	static pid_t tree[PROCTREE_MAX];
	int root = o->pid, rc = dump_run(o), n;

	n = proctree_members(-1, root, tree, PROCTREE_MAX);
	for (int i = 0; i < n; i++) { /* /proc lists them by pid */
		if (tree[i] == root)
			continue;
		o->pid = tree[i];
		o->quiet_not_python = true;
		if (!o->json)
			printf("\n");
		fflush(stdout);
		(void)dump_run(o);
	}
	o->pid = root;
	return rc;
}

int dump_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "native", no_argument, NULL, 'n' },
		{ "no-lines", no_argument, NULL, OPT_NO_LINES },
		{ "function", no_argument, NULL, OPT_NO_LINES }, /* as record's */
		{ "async", no_argument, NULL, OPT_ASYNC },
		{ "subprocesses", no_argument, NULL, OPT_SUBPROCESSES },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "locals", no_argument, NULL, OPT_LOCALS },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct dump_opts o = { 0 };
	int c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "+p:nlh", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			if ((o.pid = cmdline_pid(optarg)) < 0)
				return cmdline_fail("dump -p: not a process id: '%s'", optarg);
			break;
		case 'n':
			o.native = true;
			break;
		case OPT_NO_LINES:
			o.no_lines = true;
			break;
		case OPT_ASYNC:
			o.async_tasks = true;
			break;
		case OPT_SUBPROCESSES:
			o.subprocesses = true;
			break;
		case OPT_JSON:
			o.json = true;
			break;
		case 'l':
		case OPT_LOCALS:
			o.locals = true;
			break;
		case 'h':
			printf("usage: pyperf-bpf dump -p PID [--native] [--locals] [--no-lines]\n"
			       "                       [--async] [--subprocesses] [--json]\n\n"
			       "Print the current stack of every thread of a CPython process once,\n"
			       "running or not.  The threads are stopped for a few milliseconds.\n\n"
			       "  -p, --pid PID     the process\n"
			       "  -n, --native      native frames too, merged with the Python ones\n"
			       "  -l, --locals      each Python frame's arguments and local variables:\n"
			       "                    None, bools, numbers, str and bytes (cut at 100\n"
			       "                    characters) as Python writes them, containers as\n"
			       "                    their type and length, other objects as\n"
			       "                    <TYPE object at ADDRESS>; read from memory, no code\n"
			       "                    runs in the process\n"
			       "      --no-lines    functions without line numbers (or --function)\n"
			       "      --async       every asyncio task (CPython 3.12+): its state and\n"
			       "                    coroutine, under the task that awaits it\n"
			       "      --subprocesses  each CPython process under it too, after it\n"
			       "      --json        one JSON array of threads, with py-spy dump\n"
			       "                    --json's fields (unknown ones null)\n");
			return 0;
		default:
			return cmdline_fail("dump: unknown or incomplete option '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return cmdline_fail("dump: unexpected argument '%s'", argv[optind]);
	if (!o.pid)
		return cmdline_fail("dump: which process? give -p PID%s", "");
	if (o.json && o.async_tasks)
		return cmdline_fail("dump: --json does not go with --async (yet)%s", "");
	{
		struct session_opts so = { 0 };
		int rc = cmdline_env(&so);

		if (rc)
			return rc;
		o.debuginfo_path = so.debuginfo_path;
	}
	if (o.json) {
		int rc;

		printf("[\n");
		rc = o.subprocesses ? dump_tree(&o) : dump_run(&o);
		printf("%s]\n", json_objects ? "\n" : "");
		return rc;
	}
	return o.subprocesses ? dump_tree(&o) : dump_run(&o);
}

