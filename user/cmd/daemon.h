/* daemon.h - `pyperf-bpf daemon`: continuous profiling of every CPython
 * process on the host, one profile per process and interval, to a directory
 * of pprof files and/or a Pyroscope-compatible server. */
#ifndef PYPERF_DAEMON_H
#define PYPERF_DAEMON_H

/* argv[0] is "daemon".  Returns the exit status: 0 after SIGTERM/SIGINT
 * (the last interval written), 2 for bad options or configuration, 1 when
 * it cannot start. */
int daemon_main(int argc, char **argv);

#endif
