/* session.c - one sampling session, from loading the BPF program to a
 * profile, for every command that samples (record, top, daemon).
 *
 *   setup     start the command (held until the sampler runs), load the
 *             sampler, describe -p processes;
 *   run       handle ring buffer records: name new stacks, classify new
 *             processes; every drain interval move counts from the kernel
 *             into the profile and call the on_drain hook; stop on -d, on the
 *             command's exit, when every -p process is gone, on SIGINT/SIGTERM
 *             or when should_stop says so;
 *   finish    stop sampling, drain, hand the profile to on_end (record
 *             writes its files there), return the command's status.
 *
 * Process classification is lazy: the sampler announces processes that run
 * and that it does not know.  Non-Python ones are asked about again with
 * exponential backoff (a fresh exec may not have mapped libpython yet); a
 * CPython we cannot read is reported once and left alone until it execs. */
#include "session.h"
#include "blocked.h"
#include "dbgfetch.h"
#include "errmsg.h"
#include "execlibc.h"
#include "clock.h"
#include "naming.h"
#include "native.h"
#include "profile.h"
#include "mode.h"
#include "pyasync.h"
#include "proctree.h"
#include "pyproc.h"
#include "pyread.h"
#include "sampler.h"
#include "waits.h"

#include <dirent.h>
#include <errno.h>
#include <malloc.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define POLL_MS 100
#define DRAIN_EVERY_NS (1000ull * 1000 * 1000)
#define BACKOFF_FIRST_NS (10ull * 1000 * 1000)
#define BACKOFF_MAX_NS (30ull * 1000 * 1000 * 1000)
#define CHILD_GRACE_NS (2ull * 1000 * 1000 * 1000) /* each step of a command's end */
#define PRUNE_EVERY_NS (30ull * 1000 * 1000 * 1000)
/* how often the Python names of the threads seen are read again */
#define THREAD_NAMES_EVERY_NS (1000ull * 1000 * 1000)

static volatile sig_atomic_t stop_signal, hup_signal;

static void on_stop_signal(int sig)
{
	stop_signal = sig;
}

static void on_hup_signal(int sig)
{
	hup_signal = sig;
}

struct pid_state {
	uint64_t backoff_ns;
	bool warned;
};

/* --async: a CPython 3.12+ process whose asyncio is looked for once its
 * stacks show coroutines (or generators, which look the same), then again
 * after ASYNC_RETRY_NS, twice as long each time up to ASYNC_RETRY_MAX_NS,
 * until found */
struct async_try {
	struct pyproc py;
	struct proc_info pi;         /* as the sampler has it */
	uint64_t next_ns, wait_ns;
	bool wanted;                 /* its stacks showed coroutines */
	bool done;                   /* found, or refused (said once) */
	bool too_old;                /* before 3.12: said so, nothing to find */
	/* wall|offcpu: where its waiting tasks wait (async_waits) */
	bool found;                  /* a holds its asyncio */
	struct pyasync a;
	uint64_t waits_at_ns, waits_next_ns;
};

#define ASYNC_RETRY_NS (100ull * 1000 * 1000)
#define ASYNC_RETRY_MAX_NS (5000ull * 1000 * 1000)
/* wall|offcpu: the tasks that wait are looked at this often, or less
 * often where a look costs more than 1/ASYNC_WAITS_SHARE of the time between
 * two; at most ASYNC_WAITS_MAX tasks a look */
#define ASYNC_WAITS_NS (100ull * 1000 * 1000)
#define ASYNC_WAITS_SHARE 100
#define ASYNC_WAITS_MAX 4096

struct session {
	const struct session_opts *o;
	const struct session_hooks *h;
	struct sampler *s;
	struct profile prof;
	struct naming names;         /* names the stacks the sampler announces */
	bool nat_on;                 /* native frames are taken (nat is set up) */
	struct hmap pids;            /* pid -> struct pid_state * (unclassified, unsupported) */
	struct hmap asyncs;          /* pid -> struct async_try * (--async) */
	struct hmap gone_seen;       /* pids found gone by the last prune, not yet
				      * forgotten (prune_pid_states) */
	struct hmap refused;         /* whole host: why processes were refused, said once each */
	struct hmap newborn;         /* pid -> struct newborn *: targets that exec'ed, classified
				      * as soon as their interpreter is up (try_newborns) */
	struct native nat;           /* binaries, unwind tables, mappings */
	struct blocked blocked;      /* wall|offcpu: threads blocked when adopted */
	bool started;                /* the sampler's programs are attached */
	int go, errfd;               /* the held command's pipes (-1: none) */
	struct dbgfetch *fetch;      /* the debuginfod helper, until the native tables take it */
	struct native_maps *nmaps;   /* scratch for one process's mappings */
	uint32_t next_gen;
	uint64_t announced_at;       /* prof.forgets when the sampler was last told to
				      * announce every stack again */
	pid_t child;
	int child_status;
	bool child_done;
	int child_sig;               /* the last signal it was sent to stop it, 0: none */
	uint64_t child_sig_ns;       /* when */
	uint64_t start_unix_ns;
	double load_s;               /* opening and loading the BPF program */
	/* for --stats-json (`make bench`) */
	uint64_t start_ns;           /* sampling started (CLOCK_MONOTONIC) */
	double first_native_ms;      /* first stack with a whole native part; -1: none */
	double warm_cpu;             /* loader CPU when warmed up; -1: not reached */
	double end_cpu;              /* loader CPU when sampling ended */
	uint64_t warm_reads, end_reads; /* mem_read_count() then */
	uint64_t wakeups;            /* the loop's turns (each a poll that returned) */
};

/* The loader's CPU is also reported from this long after sampling started:
 * what it costs once the first tables are built and the first stacks named. */
#define WARMUP_NS 2000000000ull

static void err_line(const struct session *r, const char *msg)
{
	if (r->h->on_message) /* the daemon's log */
		r->h->on_message(r->h->ctx, msg);
	else
		fprintf(stderr, "pyperf-bpf: %s\n", msg);
}

/* a line for the user, as err_line says it (on stderr, or through on_message) */
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void say(const struct session *r, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	err_line(r, msg);
}

/* the weights of the refused processes' samples, from the sampler's skip
 * entries (kept until the process is gone) */
static void update_refused(struct session *r)
{
	hmap_for_each(&r->prof.refused, e) {
		struct prefused *x = e->val;
		uint64_t w = sampler_skipped_weight(r->s, (uint32_t)x->pid);

		if (w > x->weight)
			x->weight = w;
	}
}

static struct pid_state *pid_state(struct session *r, int pid)
{
	struct pid_state *ps = hmap_get(&r->pids, &pid, sizeof(pid));

	if (!ps) {
		ps = calloc(1, sizeof(*ps));
		if (ps && hmap_put(&r->pids, &pid, sizeof(pid), ps)) {
			free(ps);
			return NULL;
		}
	}
	return ps;
}

/* (Re)read pid's executable mappings for the native unwinder. */
static void update_native(struct session *r, int pid)
{
	char err[512];

	if (!r->nat_on)
		return;
	if (native_proc_update(&r->nat, pid, r->nmaps, err, sizeof(err)) == 0) {
		sampler_set_native_maps(r->s, pid, r->nmaps);
		native_prefetch(&r->nat, pid);
	} else if (r->o->verbose) {
		say(r, "pid %d: no native frames: %s", pid, err);
	}
}

static void async_forget(struct session *r, int pid)
{
	free(hmap_del(&r->asyncs, &pid, sizeof(pid)));
}

/* Every CPython process of the host (no -p, no command): notes about single
 * processes would flood stderr there, so they are said once, or with -v. */
static bool whole_host(const struct session_opts *o)
{
	return !o->npids && !o->cmd;
}

static void async_adopt(struct session *r, const struct pyproc *py, const struct proc_info *pi)
{
	struct async_try *at = hmap_get(&r->asyncs, &py->pid, sizeof(py->pid));
	/* a process adopted again (found twice around its exec) is told once */
	bool told = at && at->too_old;

	async_forget(r, py->pid);
	at = calloc(1, sizeof(*at));
	if (py->major == 3 && py->minor < 12) {
		if (!told && (r->o->verbose || !whole_host(r->o)))
			say(r, "pid %d: --async: asyncio tasks are read from "
				"CPython 3.12 on, this is %d.%d: its stacks are shown without "
				"tasks", py->pid, py->major, py->minor);
		if (at) {
			at->too_old = at->done = true;
			if (hmap_put(&r->asyncs, &py->pid, sizeof(py->pid), at))
				free(at);
		}
		return;
	}
	if (!at || hmap_put(&r->asyncs, &py->pid, sizeof(py->pid), at)) {
		free(at);
		return;
	}
	at->py = *py;
	at->pi = *pi;
}

/* a stack of pid ran coroutines: find its asyncio if not done yet */
static void async_try(struct session *r, int pid)
{
	struct async_try *at = hmap_get(&r->asyncs, &pid, sizeof(pid));
	struct pyasync a;
	uint64_t now = clock_mono_ns();
	char err[512];
	int rc;

	if (!at || at->done)
		return;
	at->wanted = true;
	if (now < at->next_ns)
		return;
	at->wait_ns = at->wait_ns ? at->wait_ns * 2 : ASYNC_RETRY_NS;
	if (at->wait_ns > ASYNC_RETRY_MAX_NS)
		at->wait_ns = ASYNC_RETRY_MAX_NS;
	at->next_ns = now + at->wait_ns;
	rc = pyasync_setup(&at->py, &a, err, sizeof(err));
	if (rc > 0) {
		if (r->o->verbose)
			say(r, "pid %d: --async: asyncio not found yet", pid);
		return; /* not imported yet: asked again from the loop (async_retry) */
	}
	at->done = true;
	if (rc < 0) {
		say(r, "pid %d: --async: asyncio tasks unavailable: %s",
			pid, err);
		return;
	}
	at->pi.async = a.bpf;
	if (naming_set_async(&r->names, pid, at->pi.gen, &a) == 0)
		sampler_set_proc(r->s, pid, &at->pi);
	at->a = a;
	at->found = true;
	at->waits_at_ns = now;
	at->waits_next_ns = now + ASYNC_WAITS_NS;
	if (r->o->verbose)
		say(r, "pid %d: asyncio tasks from %s", pid,
			a.published ? ".AsyncioDebug" : "the _asyncio module's DWARF");
}

/* processes that ran coroutines before their asyncio could be found: a
 * known stack is not announced again before the next drain, so the loop
 * asks again */
static void async_retry(struct session *r)
{
	hmap_for_each(&r->asyncs, e) {
		const struct async_try *at = e->val;

		if (at->wanted && !at->done)
			async_try(r, at->py.pid);
	}
}

/* A task waiting at an await runs on no thread, so no sample sees it:
 * the time since the last look goes to the stack each task not running now
 * waits in (its coroutines, innermost first, under its task chain, marked
 * [awaiting]).  Sampled at the loader's pace, so a task's waiting time is
 * right on average over many looks. */
static void async_waits_of(struct session *r, struct async_try *at, uint64_t now)
{
	static uint64_t tasks[ASYNC_WAITS_MAX];
	static struct py_frame frames[PYPERF_MAX_FRAMES];
	uint64_t weight = now - at->waits_at_ns, spent;
	int pid = at->py.pid, n;

	at->waits_at_ns = now;
	n = pyasync_all_tasks(pid, &at->a, tasks, ASYNC_WAITS_MAX);
	for (int i = 0; i < n; i++) {
		int nf = pyasync_task_waits(pid, &at->a, tasks[i], frames, PYPERF_MAX_FRAMES);
		struct raw_stack rs = { .pid = pid, .tid = pid, .gen = at->pi.gen,
					.flags = STACK_OFFCPU | STACK_AWAITING, .py = frames,
					.npy = (uint32_t)nf, .task = tasks[i],
					.anchor = (uint32_t)nf };
		struct stack_ref ref = { .pid = (uint32_t)pid, .gen = at->pi.gen };
		uint64_t h = 0x5a17a5a17a5a17a5ULL ^ tasks[i];

		if (nf <= 0)
			continue;
		for (int k = 0; k < nf; k++)
			h = (h ^ frames[k].code ^ ((uint64_t)frames[k].instr << 32)) *
			    0x100000001b3ULL;
		rs.hash = ref.hash = h;
		if (naming_add_stack(&r->names, &r->prof, &rs) == 0)
			profile_add_count(&r->prof, &ref, (uint32_t)pid, weight);
	}
	spent = clock_mono_ns() - now;
	at->waits_next_ns = now + (spent * ASYNC_WAITS_SHARE > ASYNC_WAITS_NS ?
				   spent * ASYNC_WAITS_SHARE : ASYNC_WAITS_NS);
}

static void async_waits(struct session *r, uint64_t now)
{
	hmap_for_each(&r->asyncs, e) {
		struct async_try *at = e->val;

		if (at->found && now >= at->waits_next_ns)
			async_waits_of(r, at, now);
	}
}

/* A target that exec'ed (a command, a child spawned by one) is looked at
 * from its exec on, every 2 ms and then up to every 10 ms for its first
 * 2 s, and then, if its image holds an interpreter, up to every 500 ms
 * for as long as it runs, until that interpreter is up: a process is
 * otherwise classified when it first runs into a sample, and one that
 * blocks before that (a worker waiting for work) would have no block
 * walked.  Nor is a newborn left to the samples
 * after its first 2 s: a process that runs on a CPU before its interpreter
 * is up (a program that embeds Python and starts it late, or any on a
 * machine so loaded that start-up takes seconds) has had each sample's
 * look put the next one off twice as far (classify's back-off), and could
 * end before the next. */
#define NEWBORN_FIRST_NS (2ull * 1000 * 1000)
#define NEWBORN_MAX_WAIT_NS (10ull * 1000 * 1000)
#define NEWBORN_FOR_NS (2000ull * 1000 * 1000)
#define NEWBORN_LATE_WAIT_NS (500ull * 1000 * 1000)

struct newborn {
	uint64_t next_ns, wait_ns, late_ns; /* late_ns: from then on, up to
					     * NEWBORN_LATE_WAIT_NS apart */
	bool adopted;                /* classified meanwhile, by a sample */
};

/* wall|offcpu: the sampler sees pid's threads leave the CPU from now on
 * (its programs attached, the process given to it): a block in flight for
 * each thread it has no slot for, named by walk_blocked */
static void claim_blocked(struct session *r, int pid, uint32_t gen)
{
	if (mode_is_time(r->o->mode) && blocked_claim(&r->blocked, r->s, pid, gen) < 0)
		say(r, "pid %d: out of memory: threads blocked since before are not counted", pid);
}

/* wall|offcpu: py's threads that block since before it was adopted (not
 * before the sampler's programs are attached: a thread that ran meanwhile
 * would have its block counted on) */
static void walk_blocked(struct session *r, const struct pyproc *py, uint32_t gen)
{
	int n;

	if (!mode_is_time(r->o->mode))
		return;
	n = blocked_walk(&r->blocked, r->s, &r->names, &r->prof, py, gen);
	if (n && r->o->verbose)
		say(r, "pid %d: %d thread%s blocked since before, walked from user space", py->pid, n,
		    n == 1 ? "" : "s");
}

/* py is a CPython process to profile, as generation gen (0: a new one).
 * 0: taken; 1: not taken, as it exec'ed or ended since it was read; -1: the
 * sampler refused it. */
static int adopt(struct session *r, const struct pyproc *py, uint32_t gen)
{
	struct proc_info pi;
	struct newborn *nb;

	if (r->o->gil_only && py->off.gil_in == GIL_UNKNOWN)
		say(r, "pid %d: --gil: where Python %d.%d keeps its GIL is "
			"unknown; all of its samples are kept", py->pid, py->major, py->minor);
	if ((nb = hmap_get(&r->newborn, &py->pid, sizeof(py->pid))))
		nb->adopted = true;
	if (r->o->verbose)
		say(r, "pid %d: Python %d.%d, %s, offsets from %s, %s, taken at %.0f ms", py->pid,
		    py->major, py->minor, py->binary, py->debug_offsets ? "_Py_DebugOffsets" : "table",
		    py->types.code ? "object types checked" : "object types unknown",
		    r->started ? (clock_mono_ns() - r->start_ns) / 1e6 : 0.0);
	memset(&pi, 0, sizeof(pi));
	pi.runtime_addr = py->runtime_addr;
	pi.gen = gen ? gen : ++r->next_gen;
	pi.off = py->off;
	if (naming_set_python(&r->names, &r->prof, py, pi.gen))
		return -1;
	if (r->o->async_stacks)
		async_adopt(r, py, &pi);
	update_native(r, py->pid); /* before the sampler knows the process */
	if (sampler_set_proc(r->s, py->pid, &pi))
		return -1;
	if (r->started)
		claim_blocked(r, py->pid, pi.gen);
	/* It exec'ed since it was read (a child of fork or vfork on its way to
	 * its exec): the sampler's exec hook ran before the entry went in, and
	 * the exec's event, still queued, would find the process known and
	 * leave it so, read through the old image's addresses.  Undone: the
	 * new image is announced, and read, afresh. */
	if (!procmaps_same_image(py->pid, &py->image)) {
		blocked_forget(&r->blocked, r->s, py->pid);
		sampler_forget(r->s, (uint32_t)py->pid);
		native_proc_forget(&r->nat, py->pid);
		async_forget(r, py->pid);
		if (r->o->verbose)
			say(r, "pid %d: exec'ed or ended while it was read, not taken", py->pid);
		return 1;
	}
	if (r->started)
		walk_blocked(r, py, pi.gen);
	if (mode_desc(r->o->mode)->allocator) {
		char err[512];

		if (sampler_attach_allocs(r->s, (uint32_t)py->pid, err, sizeof(err)))
			say(r, "pid %d: --mode %s: %s", py->pid, mode_name(r->o->mode), err);
	}
	if (r->o->events) {
		char err[512];
		int rc = sampler_attach_events(r->s, py->binary_file, err, sizeof(err));

		/* once per binary, as the sampler looks at each once */
		if (rc < 0)
			say(r, "pid %d: --events: %s", py->pid, err);
		else if (rc > 0)
			say(r, "pid %d: --events: %s has no USDT markers: exact GC "
				"pauses and import times need a CPython built with --with-dtrace "
				"(its <GC> frames still show the collector's sampled time)",
				py->pid, py->binary);
	}
	return 0;
}

/* Whole host: was this refusal (an unsupported Python) already said of
 * another process running the same binary? */
static bool said_for_another(struct session *r, const char *err)
{
	const char *why = strchr(err, ':'); /* after "pid N" */
	static const char one = 1;

	if (!whole_host(r->o) || r->o->verbose || !why)
		return false;
	if (hmap_get(&r->refused, why, strlen(why)))
		return true;
	if (r->refused.len < 1024)
		(void)hmap_put(&r->refused, why, strlen(why), (void *)&one);
	return false;
}

/* Is py's interpreter up (its first interpreter state made: Py_Initialize
 * ran, so the dynamic loader has mapped every library the C library
 * --mode alloc probes and the native tables need)? */
static bool runtime_up(const struct pyproc *py)
{
	uint64_t head = 0;

	return mem_read(py->pid, py->runtime_addr + py->off.runtime_interp_head, &head,
			sizeof(head)) == 0 && head;
}

/* a process ran that the sampler does not know yet */
static void classify(struct session *r, int pid)
{
	struct pyproc py;
	char err[512];
	struct pid_state *ps;
	int rc;

	/* adopted meanwhile (a newborn, from its poll), while this announcement
	 * waited in the ring buffer: a second adoption would make it two
	 * process images */
	if (sampler_has_proc(r->s, (uint32_t)pid))
		return;
	rc = pyproc_inspect(pid, &py, err, sizeof(err));

	/* a process read while it exits or execs can look like anything: it is
	 * gone, or it reads right the second time */
	if (rc == PYPROC_UNSUPPORTED)
		rc = kill(pid, 0) && errno == ESRCH ? PYPROC_GONE
						     : pyproc_inspect(pid, &py, err, sizeof(err));
	/* not before its interpreter is up: asked again shortly */
	if (rc == PYPROC_OK && !runtime_up(&py))
		rc = PYPROC_NOT_PYTHON;
	switch (rc) {
	case PYPROC_OK:
		if (r->h->want && !r->h->want(r->h->ctx, pid, r->next_gen + 1)) {
			sampler_skip(r->s, pid, UINT64_MAX, false); /* asked again if it execs */
			return;
		}
		adopt(r, &py, 0);
		return;
	case PYPROC_GONE:
		return;
	case PYPROC_UNSUPPORTED:
		ps = pid_state(r, pid);
		if (ps && !ps->warned) {
			char comm[PYPERF_COMM_LEN];
			const char *why = strstr(err, ": ");

			proc_comm(pid, comm, sizeof(comm));
			/* the report lists it, with its samples */
			profile_refuse(&r->prof, pid, comm, why && !strncmp(err, "pid ", 4) ? why + 2 : err);
		}
		if (ps && !ps->warned && !said_for_another(r, err))
			err_line(r, err);
		if (ps)
			ps->warned = true;
		sampler_skip(r->s, pid, UINT64_MAX, true);
		return;
	case PYPROC_NOT_PYTHON:
		ps = pid_state(r, pid);
		if (!ps)
			return;
		ps->backoff_ns = ps->backoff_ns ? ps->backoff_ns * 2 : BACKOFF_FIRST_NS;
		if (ps->backoff_ns > BACKOFF_MAX_NS)
			ps->backoff_ns = BACKOFF_MAX_NS;
		sampler_skip(r->s, pid, clock_mono_ns() + ps->backoff_ns, false);
		return;
	}
}

static void on_stack(void *ctx, const struct ev_stack *ev)
{
	struct session *r = ctx;
	struct raw_stack raw;

	if (r->o->async_stacks && ev->anchor && !ev->task)
		async_try(r, (int)ev->pid);
	naming_raw_of_event(ev, &raw);
	naming_add_stack(&r->names, &r->prof, &raw);
	naming_python_thread(&r->names, &r->prof, r->s, (int)ev->pid, ev->tid, false);
	if (r->nat_on && native_take_stale(&r->nat, (int)ev->pid))
		update_native(r, (int)ev->pid);
	if (r->first_native_ms < 0 && ev->nnative && ev->nframes &&
	    !(ev->flags & (STACK_NATIVE_INCOMPLETE | STACK_NATIVE_TRUNCATED | STACK_NATIVE_PENDING)))
		r->first_native_ms = (clock_mono_ns() - r->start_ns) / 1e6;
}

static void on_new_pid(void *ctx, int pid)
{
	classify(ctx, pid);
}

static void newborn_add(struct session *r, int pid)
{
	struct newborn *b = hmap_get(&r->newborn, &pid, sizeof(pid));
	uint64_t now = clock_mono_ns();

	if (whole_host(r->o) || r->newborn.len >= 1024)
		return; /* a host's every exec would be too many */
	if (!b) {
		b = malloc(sizeof(*b));
		if (!b || hmap_put(&r->newborn, &pid, sizeof(pid), b)) {
			free(b);
			return;
		}
	}
	*b = (struct newborn){ .next_ns = now, .wait_ns = NEWBORN_FIRST_NS,
			       .late_ns = now + NEWBORN_FOR_NS };
}

/* pid was just adopted from its exec: the children it forked before that
 * (a forkserver's workers) are copies of it the sampler did not inherit
 * (on_fork): adopted now too, before most of them block */
static void adopt_children(struct session *r, int pid)
{
	static pid_t tree[PROCTREE_MAX];
	int n = proctree_members(-1, pid, tree, PROCTREE_MAX);

	for (int i = 0; i < n; i++) {
		struct pyproc py;
		char err[256];

		if (tree[i] != pid && !sampler_has_proc(r->s, (uint32_t)tree[i]) &&
		    pyproc_inspect(tree[i], &py, err, sizeof(err)) == PYPROC_OK && runtime_up(&py))
			adopt(r, &py, 0);
	}
}

/* Look at the newborns due; returns the milliseconds to the next one due
 * (POLL_MS when none) */
static int try_newborns(struct session *r)
{
	uint64_t now = clock_mono_ns(), next = now + POLL_MS * 1000000ull;
	int done[64], ndone = 0;

	hmap_for_each(&r->newborn, e) {
		struct newborn *b = e->val;
		int pid = *(const int *)e->key;
		struct pyproc py;
		char err[512];
		int rc;

		if (b->adopted) {
			rc = PYPROC_GONE; /* nothing more to do */
		} else if (now >= b->next_ns) {
			rc = pyproc_inspect(pid, &py, err, sizeof(err));
			/* the runtime is there from the exec on (a static symbol),
			 * its first interpreter once Py_Initialize runs: by then
			 * the dynamic loader has mapped every library (the C
			 * library --mode alloc probes, the native tables') */
			if (rc == PYPROC_OK && !runtime_up(&py))
				rc = PYPROC_NOT_PYTHON;
			/* past its first 2 s, a process with no interpreter in
			 * its image at all (a shell, a compiler) is left to the
			 * samples: one that loads libpython later is found so */
			else if (rc == PYPROC_NOT_PYTHON && now >= b->late_ns) {
				rc = PYPROC_GONE;
				if (r->o->verbose)
					say(r, "pid %d: no interpreter in its image %.0f ms after its "
					    "exec: left to its samples", pid, NEWBORN_FOR_NS / 1e6);
			}
		} else {
			rc = -1;
		}
		if (rc != -1) {
			if (rc == PYPROC_NOT_PYTHON) { /* not yet */
				uint64_t most = now < b->late_ns ? NEWBORN_MAX_WAIT_NS
								 : NEWBORN_LATE_WAIT_NS;

				b->next_ns = now + b->wait_ns;
				b->wait_ns = b->wait_ns * 2 > most ? most : b->wait_ns * 2;
			} else {
				if (rc == PYPROC_OK &&
				    !(r->h->want && !r->h->want(r->h->ctx, pid, r->next_gen + 1)) &&
				    adopt(r, &py, 0) == 0)
					adopt_children(r, pid);
				else if (rc == PYPROC_UNSUPPORTED)
					classify(r, pid); /* refused, and said why, as any */
				if (ndone < (int)(sizeof(done) / sizeof(done[0])))
					done[ndone++] = pid;
				continue;
			}
		}
		if (b->next_ns < next)
			next = b->next_ns;
	}
	for (int i = 0; i < ndone; i++)
		free(hmap_del(&r->newborn, &done[i], sizeof(done[i])));
	return next > now ? (int)((next - now + 999999) / 1000000) : 0;
}

/* A profiled process forked: the sampler profiles the child as its parent
 * from birth (on_fork); take it as ours, under the generation the sampler
 * gave its stacks (the same memory, so the same code objects).  A child
 * that exec'ed or ended meanwhile is forgotten: a new program is announced
 * when it runs, as any. */
static void on_fork_event(void *ctx, int pid, int ppid, uint32_t gen)
{
	struct session *r = ctx;
	struct pyproc py;
	char err[512];

	/* the sampler dropped the copy at an exec (or the child ended): not
	 * its parent's copy any more; its exec's event follows */
	if (!sampler_has_proc(r->s, (uint32_t)pid)) {
		/* what it ran as the copy is named from its parent */
		if (!(r->h->want && !r->h->want(r->h->ctx, pid, gen)))
			(void)naming_set_copy(&r->names, &r->prof, pid, ppid, gen);
		if (r->o->verbose)
			say(r, "pid %d: forked by %d, exec'ed or ended before it was taken", pid, ppid);
		return;
	}
	if (r->h->want && !r->h->want(r->h->ctx, pid, gen)) {
		sampler_forget(r->s, pid);
		return;
	}
	if (pyproc_inspect(pid, &py, err, sizeof(err)) != PYPROC_OK || adopt(r, &py, gen)) {
		/* it ended meanwhile (or cannot be read): what it ran till
		 * now is named from its parent */
		(void)naming_set_copy(&r->names, &r->prof, pid, ppid, gen);
		if (r->o->verbose)
			say(r, "pid %d: forked by %d, not taken as its copy", pid, ppid);
		sampler_forget(r->s, pid);
		return;
	}
	/* should it end before its stacks are named */
	(void)naming_set_copy(&r->names, &r->prof, pid, ppid, gen);
	if (r->o->verbose)
		say(r, "pid %d: forked by %d, profiled from its birth", pid, ppid);
}

static void on_exec(void *ctx, int pid)
{
	struct session *r = ctx;
	struct pid_state *ps = hmap_get(&r->pids, &pid, sizeof(pid));

	/* The sampler forgot the process at its exec (on_exec in BPF), so
	 * if it knows it now, the loader adopted it since: an announcement
	 * from before the exec, handled after it, read the new image (a
	 * command's child, a shell's; adopt made sure of it): that adoption
	 * stands, a second would make the one image two */
	if (sampler_has_proc(r->s, (uint32_t)pid))
		return;

	if (ps)
		memset(ps, 0, sizeof(*ps)); /* a new program: ask afresh */
	newborn_add(r, pid);
	native_proc_forget(&r->nat, pid);
	async_forget(r, pid);
	/* a classification of the old image may have been written after the
	 * exec hook cleared it: forget it, the new image will be announced and
	 * classified afresh */
	sampler_forget(r->s, pid);
}

static void on_exit_event(void *ctx, int pid)
{
	struct session *r = ctx;
	uint64_t now = clock_mono_ns();

	/* kept aside a while: its stacks announced after this are named */
	native_proc_exited(&r->nat, pid, now);
	naming_exited(&r->names, pid, now);
	async_forget(r, pid);
	sampler_exited(r->s, (uint32_t)pid);
}

static void on_table(void *ctx, uint32_t table)
{
	native_table_request(&((struct session *)ctx)->nat, table);
}

/* --events: what a marker told; with -f timeline, also when */
static void on_gc(void *ctx, const struct ev_gc *e)
{
	struct session *r = ctx;

	events_add_gc(&r->prof.events, (int)e->pid, e->generation, e->ns);
	if (r->prof.timeline)
		timeline_add_marker(r->prof.timeline, &(struct tl_marker){
			.ts = e->start_ns, .dur = e->ns, .pid = e->pid, .tid = e->tid,
			.kind = TL_GC, .arg = e->generation, .collected = e->collected });
}

static void on_import(void *ctx, const struct ev_import *e)
{
	struct session *r = ctx;

	events_add_import(&r->prof.events, (int)e->pid, e->name, e->ns, e->depth);
	if (r->prof.timeline)
		timeline_add_marker(r->prof.timeline, &(struct tl_marker){
			.ts = e->start_ns, .dur = e->ns, .pid = e->pid, .tid = e->tid,
			.kind = TL_IMPORT, .arg = (int32_t)e->depth, .name = strdup(e->name) });
}

/* -f timeline: a counted sample in time */
static void on_sample(void *ctx, const struct ev_sample *e)
{
	struct session *r = ctx;

	if (r->prof.timeline)
		timeline_add_sample(r->prof.timeline, &(struct tl_sample){
			.ts = e->ts, .dur = e->dur, .weight = e->weight, .hash = e->hash,
			.pid = e->pid, .tid = e->tid, .gen = e->gen, .flags = e->flags });
}

/* a profiled process ran code mapped after we looked (dlopen) */
static void on_maps(void *ctx, int pid, uint64_t pc)
{
	struct session *r = ctx;

	if (!r->nat_on || !naming_is_python(&r->names, pid))
		return;
	update_native(r, pid);
	if (pc && !native_pc_mapped(&r->nat, pid, pc))
		sampler_stray_pc(r->s, pid, pc, clock_mono_ns() + native_stray_backoff_ns(&r->nat, pid, pc));
}

static void on_count(void *ctx, const struct stack_key *k, uint64_t count)
{
	struct stack_ref ref = { .pid = k->pid, .gen = k->gen, .hash = k->hash };

	profile_add_count(&((struct session *)ctx)->prof, &ref, k->tid, count);
}

/* ---- leaks: the allocations still live at the end ---- */

struct leak_view {
	struct session *r;
	uint64_t now_ns, min_age_ns;
};

static void on_live(void *ctx, const struct live_key *k, const struct live_alloc *a)
{
	struct leak_view *v = ctx;
	struct stack_ref ref = { .pid = a->key.pid, .gen = a->key.gen, .hash = a->key.hash };
	uint64_t age = v->now_ns > a->ns ? v->now_ns - a->ns : 0;

	(void)k;
	if (age < v->min_age_ns || !a->size)
		return;
	profile_add_count(&v->r->prof, &ref, a->key.tid, a->weight);
	profile_add_heap(&v->r->prof, &ref, a->key.tid, PROFILE_HEAP_INUSE_OBJECTS,
			 (a->weight + a->size / 2) / a->size);
	profile_add_heap(&v->r->prof, &ref, a->key.tid, PROFILE_HEAP_OLDEST_MS, age / 1000000);
}

static void on_objects(void *ctx, const struct stack_key *k, uint64_t objs1024)
{
	struct leak_view *v = ctx;
	struct stack_ref ref = { .pid = k->pid, .gen = k->gen, .hash = k->hash };

	profile_add_heap(&v->r->prof, &ref, k->tid, PROFILE_HEAP_ALLOC_OBJECTS,
			 (objs1024 + 512) / 1024);
}

/* The profile's counts (bytes allocated) become heap[ALLOC_BYTES]; the
 * counts are then the bytes of the sampled allocations still live (at
 * least min_age old), by the stack that allocated them. */
static void leaks_view(struct session *r)
{
	struct leak_view v = { .r = r, .now_ns = clock_mono_ns(),
			       .min_age_ns = (uint64_t)(r->o->min_age * 1e9) };

	profile_counts_to_heap(&r->prof, PROFILE_HEAP_ALLOC_BYTES);
	sampler_live(r->s, on_live, on_objects, &v);
}

/* ---- the command after -- ---- */

/* Fork the command, held on a pipe until the sampler runs.  Returns the write
 * end of that pipe; *errfd reads errno if exec fails. */
static int spawn_held(struct session *r, int *errfd, char *err, size_t errlen)
{
	int go[2], ex[2];

	if (pipe2(go, O_CLOEXEC) || pipe2(ex, O_CLOEXEC)) {
		set_err(err, errlen, "pipe: %s", strerror(errno));
		return -1;
	}
	r->child = fork();
	if (r->child < 0) {
		set_err(err, errlen, "fork: %s", strerror(errno));
		return -1;
	}
	if (r->child == 0) {
		char c;
		int e;

		close(go[1]);
		close(ex[0]);
		signal(SIGPIPE, SIG_DFL); /* the command gets default dispositions */
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGHUP, SIG_DFL);
		signal(SIGQUIT, SIG_DFL);
		if (read(go[0], &c, 1) != 1)
			_exit(127); /* the profiler gave up before starting us */
		execvp(r->o->cmd[0], r->o->cmd);
		e = errno;
		if (write(ex[1], &e, sizeof(e)) < 0)
			_exit(127);
		_exit(127);
	}
	close(go[0]);
	close(ex[1]);
	*errfd = ex[0];
	return go[1];
}

static bool child_exec_failed(int errfd, const char *cmd, char *err, size_t errlen)
{
	int e;

	if (read(errfd, &e, sizeof(e)) == (ssize_t)sizeof(e)) {
		set_err(err, errlen, "cannot run %s: %s", cmd, strerror(e));
		return true;
	}
	return false;
}

static bool reap_child(struct session *r, int flags)
{
	if (r->child <= 0 || r->child_done)
		return r->child_done;
	if (waitpid(r->child, &r->child_status, flags) == r->child) {
		r->child_done = true;
		if (r->s)
			sampler_exited(r->s, (uint32_t)r->child);
	}
	return r->child_done;
}

/* sig to the command and every process of its tree (proctree.h); how
 * many live ones there were */
static int signal_tree(struct session *r, int sig)
{
	static pid_t tree[PROCTREE_MAX];
	int n = proctree_members(getpid(), r->child, tree, PROCTREE_MAX);

	if (!r->child_done)
		kill(r->child, sig);
	for (int i = 0; i < n; i++)
		if (tree[i] != r->child)
			kill(tree[i], sig);
	return n;
}

/* Ask a command that still runs to stop, and its tree with it, as Ctrl-C
 * in a terminal asks its whole process group (once: later steps are
 * wait_child_bounded's) */
static void stop_child(struct session *r, int sig)
{
	if (r->child <= 0 || r->child_sig || reap_child(r, WNOHANG))
		return;
	signal_tree(r, sig);
	r->child_sig = sig;
	r->child_sig_ns = clock_mono_ns();
}

/* Wait for the command to end.  One still running is asked like Ctrl-C
 * (SIGINT), unless it was already sent a signal; after CHILD_GRACE_NS it
 * gets SIGTERM (if that was not what it got), after another SIGKILL: the
 * command and what is left of its tree, until none is left.  A command
 * that ended on its own keeps what it left running.  Its own exit status
 * is what the session returns. */
static void wait_child_bounded(struct session *r)
{
	static pid_t tree[PROCTREE_MAX];

	stop_child(r, SIGINT);
	while (r->child > 0) {
		bool done = reap_child(r, WNOHANG);

		if (r->child_sig) {
			proctree_reap(getpid(), r->child);
			done = done && proctree_members(getpid(), r->child, tree, PROCTREE_MAX) == 0;
		}
		if (done)
			break;
		if (clock_mono_ns() - r->child_sig_ns >= CHILD_GRACE_NS) {
			int next = r->child_sig == SIGTERM || r->child_sig == SIGKILL ? SIGKILL
										     : SIGTERM;

			if (r->child_sig == SIGKILL) { /* killed, and still there: D state */
				reap_child(r, 0);
				break;
			}
			signal_tree(r, next);
			r->child_sig = next;
			r->child_sig_ns = clock_mono_ns();
		}
		usleep(20000);
	}
}

static int child_exit_code(const struct session *r)
{
	if (WIFEXITED(r->child_status))
		return WEXITSTATUS(r->child_status);
	if (WIFSIGNALED(r->child_status))
		return 128 + WTERMSIG(r->child_status);
	return 1;
}

/* ---- setup and main loop ---- */

/* --subprocesses with -p: pid's descendants that run already are
 * profiled too, each announced when sampled as any new process is (one
 * that is not CPython is left alone then) */
static void add_descendants(struct session *r, int pid)
{
	static pid_t tree[PROCTREE_MAX];
	int n = proctree_members(-1, pid, tree, PROCTREE_MAX);

	for (int i = 0; i < n; i++)
		if (tree[i] != pid && sampler_add_target(r->s, (uint32_t)tree[i]) && r->o->verbose)
			say(r, "pid %d (under %d): not followed: %s", tree[i],
				pid, strerror(errno));
}

static int describe_pids(struct session *r, char *err, size_t errlen)
{
	for (size_t i = 0; i < r->o->npids; i++) {
		struct pyproc py;
		struct proc_image img;
		int pid = r->o->pids[i], tries = 3, rc;

		/* one that exec'ed while it was read is read again */
		do {
			if (pyproc_inspect(pid, &py, err, errlen) != PYPROC_OK)
				return -1;
			rc = sampler_add_target(r->s, pid) ? -1 : adopt(r, &py, 0);
		} while (rc == 1 && --tries && procmaps_image(pid, &img) == 0);
		if (rc == 1) {
			set_err(err, errlen, "pid %d: the process %s while it was attached to", pid,
				procmaps_image(pid, &img) ? "ended" : "kept exec'ing");
			return -1;
		}
		if (rc) {
			set_err(err, errlen, "pid %d: cannot configure the sampler: %s", pid,
				 strerror(errno));
			return -1;
		}
		if (r->o->subprocesses)
			add_descendants(r, pid);
	}
	return 0;
}

/* wall|offcpu: -p's processes were adopted before the sampler started:
 * their threads asleep now, claimed at once, then walked */
static void walk_blocked_targets(struct session *r)
{
	if (!mode_is_time(r->o->mode))
		return;
	for (size_t i = 0; i < r->o->npids; i++) {
		int pid = r->o->pids[i];
		uint32_t gen = naming_gen(&r->names, pid);

		if (gen)
			claim_blocked(r, pid, gen);
	}
	for (size_t i = 0; i < r->o->npids; i++) {
		struct pyproc py;
		char err[512];
		int pid = r->o->pids[i];
		uint32_t gen = naming_gen(&r->names, pid);

		if (!gen)
			continue;
		if (pyproc_inspect(pid, &py, err, sizeof(err)) == PYPROC_OK)
			walk_blocked(r, &py, gen);
		else
			blocked_forget(&r->blocked, r->s, pid);
	}
}

void session_install_signals(const struct session_hooks *h)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGQUIT, &sa, NULL);
	/* a closed terminal still gets its profile; a daemon reloads */
	sa.sa_handler = h->on_hup ? on_hup_signal : on_stop_signal;
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

/* pid (at key) into the set *ctx if it is gone */
static void note_if_gone(struct hmap *dead, const void *key)
{
	int pid;

	memcpy(&pid, key, sizeof(pid));
	if (!hmap_get(dead, &pid, sizeof(pid)) && kill(pid, 0) && errno == ESRCH)
		(void)hmap_put(dead, &pid, sizeof(pid), dead); /* out of memory: next time */
}

static void note_pid_if_gone(void *ctx, int pid)
{
	note_if_gone(ctx, &pid);
}

/* Forget what was noted of processes that are gone (a long run on a busy
 * host sees many short-lived ones). */
static void prune_pid_states(struct session *r)
{
	struct hmap keep = { 0 };

	hmap_for_each(&r->pids, e) {
		int pid;

		memcpy(&pid, e->key, sizeof(pid));
		if ((kill(pid, 0) && errno == ESRCH) || hmap_put(&keep, &pid, sizeof(pid), e->val))
			free(e->val);
	}
	hmap_free(&r->pids, NULL);
	r->pids = keep;
	/* a process whose exit the sampler never told (it exited before its
	 * classification was written to the procs map, or the ring buffer was
	 * full) must not keep its binaries open nor anything else noted of
	 * it: every table of processes is looked through for pids that are
	 * gone, which are forgotten as at their exit; at the next prune, so
	 * that the stacks it sent just before it went are named first */
	{
		struct hmap dead = { 0 }, later = { 0 };

		hmap_for_each(&r->nat.procs, e)
			note_if_gone(&dead, e->key);
		hmap_for_each(&r->names.python, e)
			note_if_gone(&dead, e->key);
		hmap_for_each(&r->asyncs, e)
			note_if_gone(&dead, e->key);
		sampler_each_pid(r->s, note_pid_if_gone, &dead);
		hmap_for_each(&dead, e) {
			int pid;

			memcpy(&pid, e->key, sizeof(pid));
			if (!hmap_get(&r->gone_seen, &pid, sizeof(pid))) {
				(void)hmap_put(&later, &pid, sizeof(pid), &later);
				continue;
			}
			on_exit_event(r, pid);
			sampler_forget(r->s, (uint32_t)pid);
		}
		hmap_free(&dead, NULL);
		hmap_free(&r->gone_seen, NULL);
		r->gone_seen = later;
	}
}

/* Free the native names no stack holds any more (native_sweep_end: of
 * binaries let go, of forgotten processes' JIT code, and the unheld
 * functions of binaries still mapped): the profile holds every stack (a
 * daemon forgets the stacks of processes gone at the end of each
 * interval). */
static void sweep_names(struct session *r)
{
	uint32_t mark = native_sweep_begin(&r->nat);
	struct session_kept k = { 0 };

	profile_mark_funcs(&r->prof, mark);
	native_sweep_end(&r->nat, mark);
	if (!r->h->on_pruned)
		return;
	native_kept(&r->nat, &k.binaries, &k.open, &k.functions);
	k.swept_binaries = r->nat.st.swept_bins;
	k.swept_functions = r->nat.st.swept_funcs;
	r->h->on_pruned(r->h->ctx, &k);
}

_Static_assert(2 + WAITS_PIDFDS_MAX <= SAMPLER_POLL_MAX, "the wait set fits one sampler_poll");

/* how often counts are drained: --drain-ms's, else every second */
static uint64_t drain_every_ns(const struct session_opts *o)
{
	return o->drain_ms ? o->drain_ms * 1000000ull : DRAIN_EVERY_NS;
}

static void run_loop(struct session *r, uint64_t start)
{
	const struct session_opts *o = r->o;
	uint64_t end = o->duration > 0 ? start + (uint64_t)(o->duration * 1e9) : UINT64_MAX;
	uint64_t drain_ns = drain_every_ns(o);
	/* a test that lets binaries go sooner (PYPERF_IDLE_CLOSE_S) sees
	 * their names freed sooner too */
	uint64_t prune_ns = o->idle_close_s && o->idle_close_s * 1000000000ull < PRUNE_EVERY_NS
				    ? o->idle_close_s * 1000000000ull
				    : PRUNE_EVERY_NS;
	uint64_t next_drain = start + drain_ns, next_prune = start + prune_ns;
	uint64_t next_names = start + THREAD_NAMES_EVERY_NS;
	struct waits w;
	/* what is looked at by polling: the view's keys, --async's tasks */
	bool polled = r->h->should_stop || o->async_stacks;

	waits_init(&w, native_wake_fd(&r->nat), r->child, o->pids, o->npids);
	while (!stop_signal) {
		uint64_t now = clock_mono_ns(), due = next_drain < next_names ? next_drain : next_names;
		int ms;

		if (end < due)
			due = end;
		if (r->warm_cpu < 0 && start + WARMUP_NS < due)
			due = start + WARMUP_NS;
		ms = due > now ? (int)((due - now + 999999) / 1000000) : 0;
		if ((polled || waits_polled(&w)) && ms > POLL_MS)
			ms = POLL_MS;
		if (r->newborn.len) {
			int nb = try_newborns(r);

			if (nb < ms)
				ms = nb;
		}
		sampler_poll(r->s, ms, w.fds, w.nfds);
		r->wakeups++;
		waits_after_poll(&w);
		native_poll(&r->nat); /* tables the worker built */
		if (o->async_stacks)
			async_retry(r);
		now = clock_mono_ns();
		if (o->async_stacks && mode_is_time(o->mode))
			async_waits(r, now);
		if (r->warm_cpu < 0 && now - start >= WARMUP_NS) {
			r->warm_cpu = clock_cpu_s(NULL);
			r->warm_reads = mem_read_count();
		}
		if (now >= next_names) { /* threads renamed since */
			naming_python_threads(&r->names, &r->prof, r->s);
			next_names = now + THREAD_NAMES_EVERY_NS;
		}
		if (now >= next_drain || sampler_counts_filling(r->s)) {
			sampler_drain(r->s, on_count, r);
			update_refused(r);
			next_drain = now + drain_ns;
			if (r->h->on_drain) {
				uint64_t st[STAT_NR];

				naming_name_kernel(&r->prof, r->s);
				sampler_stats(r->s, st);
				if (r->h->on_tables)
					r->h->on_tables(r->h->ctx, r->nat_on ? native_pending(&r->nat) : 0);
				r->h->on_drain(r->h->ctx, &r->prof, st, (now - start) / 1e9, false);
			}
			/* the command forgot stacks or threads' names (the daemon's
			 * interval ended): the sampler announces each stack again */
			if (r->prof.forgets != r->announced_at) {
				r->announced_at = r->prof.forgets;
				sampler_announce_again(r->s);
			}
			naming_sweep_exited(&r->names, now);
			native_sweep_exited(&r->nat, now);
			if (r->nat_on) /* binaries no process maps any more */
				native_close_idle(&r->nat, o->idle_close_s ? o->idle_close_s * 1000000000ull
									   : NATIVE_IDLE_CLOSE_NS);
			if (now >= next_prune) {
				prune_pid_states(r);
				if (r->nat_on)
					sweep_names(r);
				if (o->cmd) /* orphans of the command's tree that exited */
					proctree_reap(getpid(), r->child);
				/* what exited processes and binaries let go of left free
				 * in the heap goes back to the system: glibc keeps free
				 * memory below a live chunk, and a burst of processes
				 * otherwise leaves a long-running session's RSS higher
				 * each time (issue 30's soak) */
				malloc_trim(0);
				next_prune = now + prune_ns;
			}
		}
		if (hup_signal) {
			hup_signal = 0;
			if (r->h->on_hup)
				r->h->on_hup(r->h->ctx);
		}
		if (r->h->should_stop && r->h->should_stop(r->h->ctx)) {
			stop_child(r, SIGTERM); /* the view was closed: so is the command */
			break;
		}
		if (now >= end)
			break;
		if (o->cmd && reap_child(r, WNOHANG))
			break;
		if (o->npids && !waits_any_target_alive(&w))
			break;
	}
	waits_free(&w);
	/* the command stops with us: with our signal, or at the end of -d like
	 * Ctrl-C, now, so it cleans up while the profile is written; but `leaks`
	 * first reads what the command holds, before its exit frees it */
	if (r->h->on_stopping)
		r->h->on_stopping(r->h->ctx);
	if (stop_signal || !o->leaks)
		stop_child(r, stop_signal ? stop_signal : SIGINT);
}


/* for `make bench`: the sampler's own cost and the loader's, separately */
/* one number of --stats-json: its key, its value, and how many decimals
 * (-1: a whole number) */
struct stat_field {
	const char *key;
	double v;
	uint64_t u;
	int decimals;
};

#define STAT_U(k, x) { k, 0, (uint64_t)(x), -1 }
#define STAT_D(k, x, d) { k, (double)(x), 0, d }

static void write_stats_json(struct session *r, double secs, double loop_cpu)
{
	uint64_t st[STAT_NR], cnt = 0, ns = 0, scnt = 0, sns = 0;
	long rss, anon, file;
	double cpu = clock_cpu_s(&rss);
	double warm = r->warm_cpu >= 0 ? r->end_cpu - r->warm_cpu : -1;
	const struct native_stats *nt = &r->nat.st;
	size_t stacks = 0, code = 0;
	FILE *f;

	if (!r->o->stats_json || !(f = fopen(r->o->stats_json, "w")))
		return;
	clock_rss_kb(&anon, &file);
	profile_kept(&r->prof, &stacks, &code);
	sampler_stats(r->s, st);
	sampler_prog_stats(r->s, false, &cnt, &ns);
	sampler_prog_stats(r->s, true, &scnt, &sns);
	const struct stat_field fields[] = {
		STAT_D("duration_s", secs, 3), STAT_U("samples", r->prof.total),
		STAT_U("bpf_run_cnt", cnt), STAT_U("bpf_run_time_ns", ns),
		STAT_D("loader_cpu_s", cpu, 6), STAT_D("loader_loop_cpu_s", loop_cpu, 6),
		STAT_U("loader_maxrss_kb", rss),
		/* now, not at the peak: anonymous against mapped files */
		STAT_D("loader_rss_anon_kb", anon, 0), STAT_D("loader_rss_file_kb", file, 0),
		STAT_U("stat_samples", st[STAT_SAMPLES]), STAT_U("stat_truncated", st[STAT_TRUNCATED]),
		STAT_U("stat_map_full", st[STAT_MAP_FULL]),
		STAT_U("stat_ringbuf_full", st[STAT_RINGBUF_FULL]),
		STAT_U("unattributed", r->prof.unattributed),
		STAT_U("stat_native_incomplete", st[STAT_NATIVE_INCOMPLETE]),
		STAT_U("stat_native_truncated", st[STAT_NATIVE_TRUNCATED]),
		STAT_U("stat_native_pending", st[STAT_NATIVE_PENDING]),
		STAT_U("stat_native_scanned", st[STAT_NATIVE_SCANNED]),
		STAT_U("unwind_tables", nt->tables), STAT_U("unwind_rows", nt->rows),
		STAT_U("unwind_bytes", nt->bytes), STAT_U("unwind_peak_bytes", nt->peak_bytes),
		STAT_U("unwind_built", nt->built), STAT_D("unwind_build_ms", nt->build_ns / 1e6, 1),
		STAT_D("unwind_max_build_ms", nt->max_build_ns / 1e6, 1),
		STAT_D("unwind_first_table_ms", nt->first_table_ns / 1e6, 1),
		STAT_U("unwind_no_room", nt->no_room), STAT_U("unwind_failed", nt->failed),
		STAT_U("unwind_evicted", nt->evicted), STAT_U("unwind_reclaimed", nt->reclaimed),
		STAT_D("load_s", r->load_s, 3), STAT_D("first_complete_native_ms", r->first_native_ms, 1),
		STAT_D("warmup_s", WARMUP_NS / 1e9, 1), STAT_D("loader_cpu_after_warmup_s", warm, 6),
		STAT_U("loader_wakeups", r->wakeups),
		/* the target's memory read by the loader (process_vm_readv) */
		STAT_U("loader_reads", r->end_reads),
		STAT_U("loader_reads_after_warmup", r->warm_cpu >= 0 ? r->end_reads - r->warm_reads : 0),
		STAT_D("after_warmup_s", secs - WARMUP_NS / 1e9, 3),
		STAT_D("loader_write_cpu_s", cpu - r->end_cpu, 6),
		STAT_U("switch_run_cnt", scnt), STAT_U("switch_run_time_ns", sns),
		STAT_U("stat_switches", st[STAT_SWITCHES]),
		STAT_U("stat_offcpu_walks", st[STAT_OFFCPU_WALKS]),
		STAT_U("stat_offcpu_blocks", st[STAT_OFFCPU_BLOCKS]),
		STAT_U("stat_faults", st[STAT_FAULTS]), STAT_U("stat_fault_walks", st[STAT_FAULT_WALKS]),
		STAT_U("stat_allocs", st[STAT_ALLOCS]), STAT_U("stat_alloc_walks", st[STAT_ALLOC_WALKS]),
		STAT_U("stat_offcpu_lost", st[STAT_OFFCPU_LOST]), STAT_U("stat_scan_ns", st[STAT_SCAN_NS]),
		STAT_U("stat_frame_reads", st[STAT_FRAME_READS]),
		STAT_U("stat_frame_bytes", st[STAT_FRAME_BYTES]),
		STAT_U("stat_code_reads", st[STAT_CODE_READS]),
		STAT_U("stat_interp_head_reads", st[STAT_INTERP_HEAD_READS]),
		STAT_U("stat_row_searches", st[STAT_ROW_SEARCHES]),
		STAT_U("stat_code_ids", st[STAT_CODE_IDS]),
		STAT_U("stat_announced", st[STAT_ANNOUNCED]),
		STAT_U("stacks_known", stacks),
	};

	fputc('{', f);
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		fprintf(f, "\"%s\": ", fields[i].key);
		if (fields[i].decimals < 0)
			fprintf(f, "%llu, ", (unsigned long long)fields[i].u);
		else
			fprintf(f, "%.*f, ", fields[i].decimals, fields[i].v);
	}
	/* how the walks run, and what the verifier did with each program */
	fprintf(f, "\"walks\": \"%s\", \"programs\": [",
		sampler_bounded_loops(r->s) ? "bounded loops" : "bpf_loop");
	{
		struct sampler_prog_info pi[64];
		int n = sampler_programs(r->s, pi, 64);

		for (int i = 0; i < n; i++)
			fprintf(f, "%s{\"name\": \"%s\", \"verified_insns\": %llu, \"verify_us\": %llu, "
				"\"insns\": %u, \"jited_bytes\": %u}", i ? ", " : "", pi[i].name,
				(unsigned long long)pi[i].verified_insns,
				(unsigned long long)pi[i].verify_us, pi[i].insns, pi[i].jited_bytes);
	}
	/* the maps, and what the kernel holds for them (most of it filled at
	 * load: a part of the start-up) */
	fprintf(f, "], \"maps\": [");
	{
		struct sampler_map_info mi[96];
		int n = sampler_maps(r->s, mi, 96);
		unsigned long long total = 0;

		for (int i = 0; i < n; i++) {
			fprintf(f, "%s{\"name\": \"%s\", \"max_entries\": %u, \"memlock\": %llu}",
				i ? ", " : "", mi[i].name, mi[i].max_entries,
				(unsigned long long)mi[i].memlock);
			total += mi[i].memlock;
		}
		fprintf(f, "], \"maps_memlock\": %llu", total);
	}
	fprintf(f, "}\n");
	fclose(f);
}

int session_check(char *err, size_t errlen)
{
	return sampler_check_privileges(err, errlen);
}

/* Set up: the profile, the BPF program loaded (not started), the native
 * tables; the command forked, held before its exec.  0, or -1 with err. */
static int session_open(struct session *r, char *err, size_t errlen)
{
	const struct session_opts *o = r->o;
	struct sampler_events events = { .stack = on_stack, .new_pid = on_new_pid, .exec = on_exec,
					  .fork = on_fork_event, .exit = on_exit_event,
					  .maps = on_maps, .table = on_table,
					  .gc = on_gc, .import = on_import, .sample = on_sample,
					  .ctx = r };
	struct sampler_opts so = { .filter_targets = o->cmd || o->npids, .freq = o->freq,
				   .mode = o->mode, .gil_only = o->gil_only,
				   .async_stacks = o->async_stacks, .interval = o->interval,
				   .track_live = o->leaks,
				   .verbose = o->verbose, .counts_entries = o->counts_entries,
				   .drain_ms = (unsigned)(drain_every_ns(o) / 1000000),
				   .offcpu_slots = o->offcpu_slots,
				   .stack_scan = !o->no_stack_scan,
				   .kernel_stacks = !o->no_kernel, .native_stacks = !o->no_native,
				   .vmlinux_btf = o->vmlinux_btf, .events = o->events,
				   .no_bpf_loop = o->no_bpf_loop,
				   .verifier_stats = o->stats_json != NULL,
				   .timeline = o->timeline };
	uint64_t load0;

	profile_init(&r->prof);
	if (o->timeline && (!(r->prof.timeline = malloc(sizeof(*r->prof.timeline))) ||
			    timeline_init(r->prof.timeline, o->timeline_cap,
					  (uint64_t)(o->timeline_keep_s * 1e9)))) {
		free(r->prof.timeline);
		r->prof.timeline = NULL;
		set_err(err, errlen, "out of memory for the timeline");
		return -1;
	}
	naming_init(&r->names, NULL);
	session_install_signals(r->h);
	if (sampler_check_privileges(err, errlen))
		return -1;
	/* the command's orphans come to us, to be ended with it (proctree.h) */
	if (o->cmd)
		(void)prctl(PR_SET_CHILD_SUBREAPER, 1);
	if (o->cmd && (r->go = spawn_held(r, &r->errfd, err, errlen)) < 0)
		return -1;
	/* after the command is forked (it keeps DEBUGINFOD_URLS), before
	 * threads that could read the environment start */
	if (!o->no_native)
		r->fetch = dbgfetch_start(DBGFETCH_TIMEOUT_S, o->verbose);
	load0 = clock_mono_ns();
	if (sampler_open(&r->s, &so, &events, err, errlen))
		return -1;
	r->names.sampler = r->s;
	r->load_s = (clock_mono_ns() - load0) / 1e9;
	if (!o->no_native) {
		const struct native_store *st = sampler_table_store(r->s);

		if (!st || native_init(&r->nat, st,
				       o->unwind_bytes ? o->unwind_bytes
						       : (uint64_t)PYPERF_UNWIND_MB << 20, true)) {
			set_err(err, errlen, "cannot set up the native unwind tables: %s",
				 strerror(errno ? errno : ENOMEM));
			return -1;
		}
		r->nat.verbose = o->verbose;
		r->nat.debuginfo_path = o->debuginfo_path;
		r->nat.fetch = r->fetch;
		r->fetch = NULL;
		r->nmaps = malloc(sizeof(*r->nmaps));
		if (!r->nmaps) {
			set_err(err, errlen, "out of memory");
			return -1;
		}
		r->names.nat = &r->nat;
		r->nat_on = true;
	}
	r->blocked.native = r->nat_on;
	r->blocked.kernel = !o->no_kernel;
	r->blocked.gil_only = o->gil_only;
	return 0;
}

/* Start: the targets given to the sampler, its programs attached, the
 * command let go into its exec.  0; 1 with err; 127 when the command
 * could not be run. */
static int session_start(struct session *r, char *err, size_t errlen)
{
	const struct session_opts *o = r->o;

	sampler_skip(r->s, getpid(), UINT64_MAX, false);
	if (describe_pids(r, err, errlen))
		return 1;
	if (o->cmd && sampler_add_target(r->s, r->child)) {
		set_err(err, errlen, "cannot configure the sampler: %s", strerror(errno));
		return 1;
	}
	if (o->cmd && mode_desc(o->mode)->allocator) {
		char libc[4096], aerr[512];

		/* the allocator probes in before the program runs: put in when
		 * it is adopted, they missed its first 10-30 ms */
		if (!exec_libc_guess(o->cmd[0], libc, sizeof(libc)) &&
		    sampler_hold_allocs(r->s, (uint32_t)r->child, libc, aerr, sizeof(aerr)) &&
		    o->verbose)
			fprintf(stderr, "pyperf-bpf: --mode %s: %s\n", mode_name(o->mode), aerr);
	}
	if (sampler_start(r->s, err, errlen))
		return 1;
	r->started = true;
	r->start_ns = clock_mono_ns();
	walk_blocked_targets(r);
	r->start_unix_ns = clock_unix_ns();
	if (o->cmd) {
		if (write(r->go, "x", 1) != 1 ||
		    child_exec_failed(r->errfd, o->cmd[0], err, errlen))
			return 127;
		close(r->go);
		r->go = -1;
	}
	if (o->verbose)
		fprintf(stderr, "pyperf-bpf: sampling at %d Hz\n", o->freq);
	return 0;
}

/* The end of sampling: the last counts drained, the names read, the
 * command's hooks called with the whole profile.  0, or -1 with err. */
static int session_finish(struct session *r, double loop_cpu, char *err, size_t errlen)
{
	const struct session_hooks *h = r->h;
	struct session_end end = { .start_unix_ns = r->start_unix_ns };
	double secs;

	sampler_stop(r->s);
	sampler_drain(r->s, on_count, r);
	sampler_drain(r->s, on_count, r);
	if (r->o->leaks)
		leaks_view(r);
	secs = end.secs = (clock_mono_ns() - r->start_ns) / 1e9;
	r->end_cpu = clock_cpu_s(NULL);
	r->end_reads = mem_read_count();
	sampler_stats(r->s, end.stats);
	update_refused(r);
	naming_name_kernel(&r->prof, r->s);
	naming_python_threads(&r->names, &r->prof, r->s);
	if (h->on_drain)
		h->on_drain(h->ctx, &r->prof, end.stats, secs, true);
	if (h->on_end && h->on_end(h->ctx, &r->prof, &end, err, errlen))
		return -1;
	write_stats_json(r, secs, r->end_cpu - loop_cpu); /* after: peak RSS includes writing */
	return 0;
}

/* Everything the session holds, let go (the builders first: a table being
 * built goes into the sampler's maps). */
static void session_close(struct session *r)
{
	if (r->go >= 0)
		close(r->go);
	if (r->errfd >= 0)
		close(r->errfd);
	native_stop(&r->nat);
	dbgfetch_stop(r->nat.fetch);
	dbgfetch_stop(r->fetch); /* not handed over */
	r->nat.fetch = NULL;
	sampler_close(r->s);
	profile_free(&r->prof);
	naming_free(&r->names);
	blocked_free(&r->blocked);
	native_free(&r->nat);
	free(r->nmaps);
	hmap_free(&r->pids, free);
	hmap_free(&r->asyncs, free);
	hmap_free(&r->gone_seen, NULL);
	hmap_free(&r->refused, NULL);
	hmap_free(&r->newborn, free);
}

int session_run(const struct session_opts *o, const struct session_hooks *h)
{
	struct session r;
	char err[1024];
	int rc;

	/* fixed thresholds instead of glibc's dynamic ones: after a large
	 * block is freed (a big binary's unwind table, built by the worker
	 * threads) glibc raises its trim threshold to twice that block, up to
	 * 64 MiB, and a worker's arena then keeps its freed top for good
	 * (malloc_trim gives back only the main arena's top): a whole-host
	 * session held ~26 MB after one PyTorch job.  Blocks of 1 MiB and
	 * more are mapped and unmapped on their own; a free top over 1 MiB
	 * goes back. */
	mallopt(M_MMAP_THRESHOLD, 1 << 20);
	mallopt(M_TRIM_THRESHOLD, 1 << 20);
	memset(&r, 0, sizeof(r));
	r.o = o;
	r.h = h;
	r.go = r.errfd = -1;
	r.first_native_ms = -1;
	r.warm_cpu = -1;
	rc = session_open(&r, err, sizeof(err)) ? 1 : session_start(&r, err, sizeof(err));
	if (!rc) {
		double loop_cpu = clock_cpu_s(NULL);

		run_loop(&r, r.start_ns);
		rc = session_finish(&r, loop_cpu, err, sizeof(err)) ? 1 : 0;
	}
	if (!rc) {
		if (o->cmd) {
			wait_child_bounded(&r);
			rc = child_exit_code(&r);
		}
	} else {
		/* why the run ends: on stderr, and in the daemon's log too */
		if (h->on_message)
			h->on_message(h->ctx, err);
		if (!h->on_message || !h->message_on_stderr)
			fprintf(stderr, "pyperf-bpf: %s\n", err);
		if (r.child > 0) {
			if (r.go >= 0)
				close(r.go); /* a held child exits without running anything */
			r.go = -1;
			wait_child_bounded(&r);
		}
	}
	session_close(&r);
	return rc;
}
