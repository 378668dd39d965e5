/* clock.h - the clocks the loader reads: monotonic time for intervals and
 * back-offs, wall-clock time for what profiles say they cover, and the
 * process's own CPU time and memory for its statistics. */
#ifndef PYPERF_CLOCK_H
#define PYPERF_CLOCK_H

#include <stdint.h>

/* CLOCK_MONOTONIC in ns: the clock the BPF program's bpf_ktime_get_ns() reads */
uint64_t clock_mono_ns(void);
/* CLOCK_REALTIME in ns since the epoch */
uint64_t clock_unix_ns(void);
/* CPU seconds this process used (user + system, all threads); *maxrss_kb,
 * if given, its peak resident set */
double clock_cpu_s(long *maxrss_kb);
/* this process's resident set now, its anonymous pages and its pages of
 * mapped files (the ELF files the symbol and unwind readers map: shared
 * with the page cache, dropped first under pressure); -1 where
 * /proc/self/status does not say */
void clock_rss_kb(long *anon_kb, long *file_kb);

#endif
