/* record_opts.h - what record, top and leaks are asked to do: the struct
 * their command lines parse into (through the option table, options.h),
 * below the commands so that the table need not reach up into them. */
#ifndef PYPERF_RECORD_OPTS_H
#define PYPERF_RECORD_OPTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "session.h"

#define RECORD_MAX_OUTPUTS 8

struct record_opts {
	struct session_opts s;       /* what to sample, how */
	struct record_output {
		const char *path;    /* NULL: stdout */
		int format;          /* enum out_format */
	} outputs[RECORD_MAX_OUTPUTS]; /* -o, repeatable; none given: one, stdout */
	size_t noutputs;
	bool threads, no_lines;
	bool containers;             /* --containers */
	bool icicle;                 /* --icicle (svg) */
	bool allow_empty;            /* --allow-empty: no sample is no error */
	bool quiet;                  /* -q: no status line */
	bool startup_frames;         /* --startup-frames: the report's tables keep them */
	bool python_only;            /* --python-only: no native nor kernel frames */
	size_t top;                  /* rows per report table (and top's view) */
};

#endif
