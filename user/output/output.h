/* output.h - writing a finished profile: the formats, by name or by a
 * file's suffix, and the writer of each (out_common.h has what the
 * writers share; each lives in its own out_*.c file). */
#ifndef PYPERF_OUTPUT_H
#define PYPERF_OUTPUT_H

#include <stdio.h>
#include "out_common.h"

enum out_format { FMT_REPORT, FMT_FOLDED, FMT_SVG, FMT_PPROF, FMT_SPEEDSCOPE, FMT_OTLP,
		  FMT_TIMELINE, FMT_TIMELINE_GZ };

/* The writer of format fmt. */
int out_write(FILE *f, const struct out_ctx *c, int fmt);
/* Parse a format name or infer it from a file name; -1 if unknown.
 * out_format_names lists the names for messages. */
extern const char out_format_names[];
int out_format_parse(const char *name);
int out_format_from_path(const char *path);

#endif
