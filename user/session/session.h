/* session.h - one sampling session: load the BPF program, classify the
 * processes it announces, name new stacks, move counts into a profile,
 * stop; what every sampling command (record, top, daemon) runs, each with
 * its own hooks. */
#ifndef PYPERF_SESSION_H
#define PYPERF_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pyperf.h"
#include "mode.h"

struct profile;

/* the highest -F any command (and the daemon's frequency) takes */
#define SESSION_MAX_FREQ 10000

struct session_opts {
	int *pids;                   /* -p; empty: every CPython process (or the command) */
	size_t npids;
	char **cmd;                  /* after --; NULL if none */
	double duration;             /* -d seconds, 0: until the command exits or a signal */
	int freq;                    /* -F */
	enum pyperf_mode mode;       /* --mode */
	bool gil_only;               /* --gil */
	uint64_t interval;           /* --interval: bytes a walk stands for (faults,
				      * alloc); 0: the default */
	bool leaks;                  /* `leaks` (mode alloc): at the end the profile's counts
				      * are the sampled allocations still live */
	double min_age;              /* leaks: only those at least this old (seconds) */
	bool async_stacks;           /* --async: stacks of asyncio tasks */
	unsigned events;             /* --events: EVENTS_GC | EVENTS_IMPORT (sampler.h) */
	bool timeline;               /* -f timeline: keep samples and markers in time */
	double timeline_keep_s;      /* and write the newest this many seconds (0: all kept) */
	size_t timeline_cap;         /* samples kept at most (0: TIMELINE_CAP_DEFAULT) */
	bool subprocesses;           /* --subprocesses: -p's processes' descendants
				      * running at the start too (those they
				      * start later are always followed) */
	bool verbose;
	bool no_kernel;              /* --no-kernel or --python-only */
	bool no_native;              /* --python-only */
	uint64_t unwind_bytes;       /* cap on the unwind tables; 0: PYPERF_UNWIND_MB */
	unsigned counts_entries;     /* PYPERF_COUNTS_ENTRIES: counts map size (tuning, tests) */
	unsigned offcpu_slots;       /* PYPERF_OFFCPU_SLOTS: off-CPU thread table size (tests) */
	bool no_stack_scan;          /* PYPERF_STACK_SCAN=0: no stack scan (make bench) */
	unsigned idle_close_s;       /* binaries unmapped this long are let go (0: 30 s) */
	const char *debuginfo_path;  /* PYPERF_DEBUGINFO_PATH (see struct native) */
	const char *vmlinux_btf;     /* PYPERF_VMLINUX_BTF (see struct sampler_opts) */
	bool no_bpf_loop;            /* PYPERF_BPF_LOOP=0 (see struct sampler_opts) */
	unsigned drain_ms;           /* how often counts are moved to user space (0: 1000);
				      * each drain makes the sampler announce every stack
				      * again the first time it recurs */
	const char *stats_json;      /* --stats-json FILE: run statistics for benchmarks */
};

/* What a session keeps of native names, after a prune (on_pruned). */
struct session_kept {
	uint64_t binaries;           /* binaries known */
	uint64_t open;               /* of them open (mapped, or let go < 30 s ago) */
	uint64_t functions;          /* native functions named */
	uint64_t swept_binaries;     /* binaries whose names were freed so far */
	uint64_t swept_functions;    /* functions freed so far */
};

/* What a session hands on_end once sampling stopped. */
struct session_end {
	double secs;                 /* how long it sampled */
	uint64_t stats[STAT_NR];     /* the sampler's counters (enum stat_idx) */
	uint64_t start_unix_ns;      /* wall-clock time sampling started */
};

/* The commands' part, all optional.  on_drain: after each drain of the
 * sampler's counts, with the profile so far (its kernel frames named) and
 * the sampler's counters since the start; once more with final set after
 * sampling stopped.  on_end: after that; -1 with a message fails the
 * session.  should_stop: every turn of the loop (about every 100 ms); true
 * stops.  want: a CPython process was found, to be profiled as image gen (the
 * gen of its stacks); false leaves it alone (until it execs).  on_hup: SIGHUP
 * was received (without it, SIGHUP stops the session). */
struct session_hooks {
	void (*on_drain)(void *ctx, struct profile *prof, const uint64_t *sampler_stats,
			 double elapsed_s, bool final);
	/* right before each on_drain: the native unwind tables asked for and
	 * not built yet (record's status line) */
	void (*on_tables)(void *ctx, size_t pending);
	/* after each prune of what exited processes left (every 30 s, or every
	 * PYPERF_IDLE_CLOSE_S when shorter): what is kept of native names (the
	 * daemon's --stats line) */
	void (*on_pruned)(void *ctx, const struct session_kept *kept);
	/* sampling has stopped and the command is about to be stopped too (its
	 * Ctrl-C traceback may follow at once): record erases its status line
	 * here, before the command writes under it */
	void (*on_stopping)(void *ctx);
	int (*on_end)(void *ctx, struct profile *prof, const struct session_end *end, char *err,
		      size_t errlen);
	bool (*should_stop)(void *ctx);
	bool (*want)(void *ctx, int pid, uint32_t gen);
	void (*on_hup)(void *ctx);
	/* a line to tell the user (a process it cannot profile, and why);
	 * NULL: stderr */
	void (*on_message)(void *ctx, const char *msg);
	bool message_on_stderr;      /* on_message writes to stderr itself (record's,
				      * around its status line): a fatal error is not
				      * written there a second time */
	void *ctx;
};

/* SIGINT, SIGTERM, SIGQUIT (and SIGHUP without on_hup) stop a session, also
 * one not started yet; session_run installs this itself, a command that does
 * work before it can install it earlier. */
void session_install_signals(const struct session_hooks *h);
/* Can this process sample at all (privileges)?  0, or -1 with a message: a
 * command with work to do before session_run (record's files) asks first,
 * so the message names the real problem. */
int session_check(char *err, size_t errlen);
/* Run a session; returns the process exit status (the command's, with one;
 * 1 after a one-line message on stderr; 127 if the command cannot run). */
int session_run(const struct session_opts *o, const struct session_hooks *h);

#endif
