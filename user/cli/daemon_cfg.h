/* daemon_cfg.h - the daemon's settings, the struct its configuration file
 * and command line fill (daemon_config.h), through the option table
 * (options.h), which is below the daemon. */
#ifndef PYPERF_DAEMON_CFG_H
#define PYPERF_DAEMON_CFG_H

#include <stdbool.h>
#include <stdint.h>

#include "pyperf.h"
#include "mode.h"

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

#endif
