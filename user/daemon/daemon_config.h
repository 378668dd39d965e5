/* daemon_config.h - `pyperf-bpf daemon`'s settings, from, in increasing
 * precedence: defaults, the --config file (`key = value` lines, keys are the
 * long option names, # starts a comment line), the command line.  Pure
 * parsing and checking: no side effects beyond reading the file. */
#ifndef PYPERF_DAEMON_CONFIG_H
#define PYPERF_DAEMON_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pyperf.h"

#define DAEMON_MAX_SETTINGS 64

struct daemon_cfg {
	int freq;
	enum pyperf_mode mode;
	double interval;
	char match[512];             /* POSIX extended regex; "" all */
	char cgroup[512];            /* cgroup v2 path; "" all */
	char container[80];          /* container id (prefix), pod, engine, any, none; "" all */
	char dir[1024];              /* pprof files; "" none */
	char group[64];              /* their group (0750/0640); "" root's only (0700/0600) */
	long keep;
	uint64_t keep_bytes;
	char push[1024];             /* Pyroscope server URL; "" none */
	char otlp[1024];             /* OTLP receiver URL; "" none */
	char otlp_protocol[16];      /* "http/protobuf" or "grpc" */
	char spool[1024];
	uint64_t spool_bytes;
	uint64_t unwind_bytes;       /* cap on the native unwind tables */
	uint64_t fault_bytes;        /* mode=faults: bytes a walked fault stands for (0: default) */
	char app_env[128];
	char log[1024];              /* "" stderr */
	bool stats, no_kernel, python_only, gil, async_stacks;
};

/* One setting as given on the command line: the long option name and its
 * value ("true" for flags). */
struct daemon_setting {
	const char *key, *value;
};

/* The settings themselves (names, kinds, bounds, where each is kept, help)
 * are the rows of the one option table that OPT_DAEMON marks
 * (user/cmd/options.c): the command line, the config file and --help read
 * them there. */

/* The defaults, into *c. */
void daemon_cfg_defaults(struct daemon_cfg *c);

/* Fill *c from the defaults, the file at config_path (NULL: none) and args
 * in order; 0, or -1 with a one-line message (naming the file and line, or
 * the option). */
int daemon_cfg_load(struct daemon_cfg *c, const char *config_path,
		    const struct daemon_setting *args, int nargs, char *err, size_t errlen);

#endif
