/* daemon_loop.h - `pyperf-bpf daemon`'s run (daemon_loop.c); the command
 * (user/cmd/daemon.c) only parses its options. */
#ifndef PYPERF_DAEMON_LOOP_H
#define PYPERF_DAEMON_LOOP_H

#include "daemon_config.h"

/* Load the settings (defaults, the file at config_path, then args) and
 * profile until SIGTERM or SIGINT; the exit status. */
int daemon_run(const char *config_path, const struct daemon_setting *args, int nargs);

#endif
