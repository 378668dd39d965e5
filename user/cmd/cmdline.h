/* cmdline.h - what the commands' option parsers share: the one-line usage
 * error (exit status 2), numbers, process ids, and the PYPERF_* environment
 * (env.c) applied to a session's options: what the option table
 * (options.c) leaves to code. */
#ifndef PYPERF_CMDLINE_H
#define PYPERF_CMDLINE_H

#include <stdbool.h>

#include "session.h"

/* "pyperf-bpf: " fmt (with arg) " (see pyperf-bpf --help)" on stderr; returns 2 */
int cmdline_fail(const char *fmt, const char *arg);
/* s is a whole number in [lo, hi] (into *out) */
bool cmdline_long(const char *s, long lo, long hi, long *out);
/* -d SECONDS, the same for every command (cmd: "top " etc. in the
 * message); 0, or 2 after a one-line message */
int cmdline_duration(const char *cmd, const char *arg, double *out);
/* --events gc,import into *out (EVENTS_* bits); 2 with a message if bad */
int cmdline_events(const char *arg, unsigned *out);
/* a process id, or -1 */
int cmdline_pid(const char *s);
/* "PID[,PID...]" appended to o's pids; 0, or -1 if one is not a process id */
int cmdline_pids(const char *arg, struct session_opts *o);
/* The PYPERF_* variables, read and checked once, into o (PYPERF_UNWIND_BYTES
 * overrides --unwind-mb); 0, or 2 after a one-line message. */
int cmdline_env(struct session_opts *o);

#endif
