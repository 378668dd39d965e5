/* daemon_sinks.h - where `pyperf-bpf daemon` puts each process's profile
 * of an interval (gzipped pprof bytes): a directory of files named
 * APP-PID-TIME.pb.gz, pruned to a count and a size, and a Pyroscope-style
 * /ingest URL through the spool (spool.c).  Failures are logged (dlog.c):
 * a lost profile never stops the daemon. */
#ifndef PYPERF_DAEMON_SINKS_H
#define PYPERF_DAEMON_SINKS_H

#include <stddef.h>
#include <stdint.h>

#include "pyperf.h"
#include "spool.h"

/* One file in dir for pid's profile of the interval that ended at end_ns
 * (wall clock), written whole under a temporary name, then renamed. */
void sink_dir_write(const char *dir, const char *app, int pid, uint64_t end_ns,
		    const char *data, size_t len);
/* Keep at most keep files and keep_bytes of profiles in dir: the oldest go. */
void sink_dir_prune(const char *dir, long keep, uint64_t keep_bytes);
/* Queue the profile of [from_ns, end_ns) for the push URL, named
 * APP{hostname=HOST,pid=PID,service_name=APP}: with sampleRate=FREQ in cpu
 * mode, with units=nanoseconds in the off-CPU modes (the values are time). */
void sink_push(struct spool *sp, const char *host, const char *app, int pid, uint64_t from_ns,
	       uint64_t end_ns, int freq, enum pyperf_mode mode, const char *data, size_t len);

#endif
