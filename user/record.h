/* record.h - the `record` command: sample, then write one profile. */
#ifndef PYPERF_RECORD_H
#define PYPERF_RECORD_H

#include <stdbool.h>
#include <stddef.h>

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
	size_t unwind_rows;          /* PYPERF_UNWIND_ROWS: size of the unwind table array */
	size_t top;                  /* rows per report table */
	const char *stats_json;      /* --stats-json FILE: run statistics for benchmarks */
	unsigned counts_entries;     /* PYPERF_COUNTS_ENTRIES: counts map size (tuning, tests) */
	/* live views (top): called after each drain of the sampler's counts,
	 * about every second, with the profile so far; and every turn of the
	 * loop (about every 100 ms): true stops the recording */
	void (*on_drain)(void *ctx, const struct profile *prof, double elapsed_s);
	bool (*should_stop)(void *ctx);
	void *cb_ctx;
};

/* Run a recording; returns the process exit status. */
int record_run(const struct record_opts *o);

#endif
