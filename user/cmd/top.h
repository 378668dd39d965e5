/* top.h - the `top` command: a live view of the hottest functions. */
#ifndef PYPERF_TOP_H
#define PYPERF_TOP_H

#include "record.h"

/* `pyperf-bpf top ...`: parse, then top_run; returns the exit status. */
int top_main(int argc, char **argv);
/* Record with o (no output files) and show the view until q, Ctrl-C, -d,
 * or the end of the profiled processes; returns the exit status. */
int top_run(struct record_opts *o);

#endif
