/* record.h - the `record` command: sample, then write one profile. */
#ifndef PYPERF_RECORD_H
#define PYPERF_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RECORD_MAX_OUTPUTS 8

struct profile;

struct record_opts {
	int *pids;                   /* -p; empty: every CPython process (or the command) */
	size_t npids;
	char **cmd;                  /* after --; NULL if none */
	double duration;             /* -d seconds, 0: until the command exits or a signal */
	int freq;                    /* -F */
	struct record_output {
		const char *path;    /* NULL: stdout */
		int format;          /* enum out_format */
	} outputs[RECORD_MAX_OUTPUTS]; /* -o, repeatable; none given: one, stdout */
	size_t noutputs;
	bool threads, no_lines, verbose;
	bool icicle;                 /* --icicle (svg) */
	bool no_kernel;              /* --no-kernel or --python-only */
	bool no_native;              /* --python-only */
	uint64_t unwind_bytes;       /* --unwind-mb: cap on the unwind tables; 0: PYPERF_UNWIND_MB */
	size_t top;                  /* rows per report table */
	const char *stats_json;      /* --stats-json FILE: run statistics for benchmarks */
	unsigned counts_entries;     /* PYPERF_COUNTS_ENTRIES: counts map size (tuning, tests) */
	const char *debuginfo_path;  /* PYPERF_DEBUGINFO_PATH (see struct native) */
	unsigned drain_ms;           /* how often counts are moved to user space (0: 1000);
				      * each drain makes the sampler announce every stack
				      * again the first time it recurs */
	/* Live views (top) and the daemon.  on_drain: after each drain of the
	 * sampler's counts (about every second), with the profile so far and
	 * the sampler's counters (enum stat_idx, since the start); once
	 * more with final set after sampling stopped.  should_stop: every turn
	 * of the loop (about every 100 ms); true stops the recording.  want: a
	 * CPython process was found, to be profiled as image gen (the gen of its
	 * stacks); false leaves it alone (until it execs).
	 * on_hup: SIGHUP was received (without it, SIGHUP stops the recording). */
	void (*on_drain)(void *ctx, struct profile *prof, const uint64_t *sampler_stats,
			 double elapsed_s, bool final);
	bool (*should_stop)(void *ctx);
	bool (*want)(void *ctx, int pid, uint32_t gen);
	void (*on_hup)(void *ctx);
	void *cb_ctx;
};

/* SIGINT, SIGTERM, SIGQUIT (and SIGHUP without on_hup) stop a recording,
 * also one not started yet; record_run installs this itself, a command that
 * does work before it can install it earlier. */
void record_install_signals(const struct record_opts *o);
/* Run a recording; returns the process exit status. */
int record_run(const struct record_opts *o);

#endif
