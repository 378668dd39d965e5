/* events.h - what CPython's USDT markers told a run (--events): each
 * process's collections, by generation, and its imports.
 *
 * A collection is kept as counts in a log-linear histogram (8 buckets per
 * power of two of its duration in ns, so a percentile read from it is
 * within 9 % of the true one) with its count, total and maximum exact: a
 * process collects thousands of times a second, and a run may last days.
 * Imports are kept one by one (a process imports each module once), up to
 * EVENTS_MAX_IMPORTS a process; the rest are counted. */
#ifndef PYPERF_EVENTS_H
#define PYPERF_EVENTS_H

#include <stddef.h>
#include <stdint.h>
#include "hmap.h"

#define EVENTS_GENERATIONS 3         /* CPython's 0, 1, 2 (3.14's increments count as 1) */
#define EVENTS_SUB 8                 /* histogram buckets per power of two */
#define EVENTS_BUCKETS (64 * EVENTS_SUB)
#define EVENTS_MAX_IMPORTS 10000

struct gc_generation_stats {
	uint64_t count, total_ns, max_ns;
	uint32_t hist[EVENTS_BUCKETS];
};

struct import_time {
	char *name;
	uint64_t ns;                 /* the imports it ran included */
	uint32_t depth;              /* imports it ran inside */
};

struct proc_events {
	struct gc_generation_stats gc[EVENTS_GENERATIONS];
	struct import_time *imports;
	size_t nimports, capimports;
	uint64_t imports_dropped;
};

/* pid -> struct proc_events * */
struct events {
	struct hmap procs;
};

void events_free(struct events *e);
/* A collection of generation gen (out of range: the last) that took ns;
 * an import of name that took ns.  -1: out of memory. */
int events_add_gc(struct events *e, int pid, int gen, uint64_t ns);
int events_add_import(struct events *e, int pid, const char *name, uint64_t ns, uint32_t depth);
/* pid's, or NULL if none was told */
const struct proc_events *events_of(const struct events *e, int pid);
/* The duration at quantile q (0..1) of a generation's collections, from its
 * histogram: the geometric middle of the bucket that holds it, at most the
 * maximum; 0 if there were none. */
uint64_t events_gc_quantile(const struct gc_generation_stats *g, double q);
/* A copy of pe's imports sorted slowest first (malloc'd; the names are
 * pe's), NULL when there are none or no memory. */
struct import_time *events_imports_by_time(const struct proc_events *pe);

#endif
