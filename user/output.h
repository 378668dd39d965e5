/* output.h - writing a finished profile.  Every format reads the same struct
 * out_ctx; each lives in its own out_*.c file. */
#ifndef PYPERF_OUTPUT_H
#define PYPERF_OUTPUT_H

#include <stdbool.h>
#include <stdio.h>
#include "profile.h"
#include "sbuf.h"

enum out_format { FMT_REPORT, FMT_FOLDED };

struct out_ctx {
	const struct profile *prof;
	bool lines;                  /* Python frames by line (else by function) */
	bool threads;                /* a root frame per thread */
	bool proc_frames;            /* a root frame per process */
	double duration_s;
	int freq;
	int ncpus;
	uint64_t stats[STAT_NR];     /* sampler counters */
	size_t top;                  /* rows per report table */
};

/* Python: "name (file:line)", or "name (file)" without lines; native:
 * "symbol (binary)"; markers: "[...]".  ';' and newlines in names are
 * replaced so the label stays one folded frame. */
void out_frame_label(struct sbuf *b, const struct pframe *f, bool lines);
/* The synthetic root frames of a sample (process, thread, and [truncated] or
 * [incomplete] when the stack misses its root side), each followed by ';'. */
void out_root_frames(struct sbuf *b, const struct out_ctx *c, const struct psample *s);

int out_folded(FILE *f, const struct out_ctx *c);
int out_report(FILE *f, const struct out_ctx *c);
/* Parse a format name or infer it from a file name; -1 if unknown. */
int out_format_parse(const char *name);
int out_format_from_path(const char *path);

#endif
