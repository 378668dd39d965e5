/* record.h - the `record` command: sample, then write one profile. */
#ifndef PYPERF_RECORD_H
#define PYPERF_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "record_opts.h"

/* `pyperf-bpf [record] ...`: parse the options and the environment, then
 * record; returns the exit status (2 for bad input). */
int record_main(int argc, char **argv);
/* Parse record's options (argv[0] is the command's name) into o, which holds
 * the caller's defaults; 0, or 2 after a one-line message. */
int record_parse(int argc, char **argv, struct record_opts *o);
/* The same for command cmd (OPT_RECORD, OPT_TOP, OPT_LEAKS: options.h),
 * whose --help is help's prose and the table's lines (o as given holds the
 * defaults it shows); top has no output files. */
int record_parse_as(unsigned cmd, int argc, char **argv, struct record_opts *o,
		    void (*help)(const struct record_opts *defaults));
/* Run a recording; returns the process exit status. */
int record_run(const struct record_opts *o);
/* `pyperf-bpf leaks`: a recording in alloc mode whose profile is the
 * sampled allocations still live at its end (leaks.c). */
int leaks_main(int argc, char **argv);

#endif
