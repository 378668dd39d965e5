/* mode.h - each --mode as one descriptor: what one count of a profile is
 * (a sample, a nanosecond of thread time, a byte of memory), how outputs
 * name and scale it, how the report and the flame graph word their
 * headlines, which perf event drives the sampler, which of the BPF
 * object's programs and maps the mode needs, and whether those are the
 * allocator probes.  The sampler, the session, the writers, top and the
 * daemon read these rows and never name a mode; adding a mode is its row
 * (mode.c) and its BPF header (bpf/modes/NAME.bpf.h: the build includes
 * every header there). */
#ifndef PYPERF_MODE_H
#define PYPERF_MODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "pyperf.h"

/* What a profile measures (--mode): its row's index in mode_descs.  Only
 * the modes that code names have a constant here (the default, the ones
 * `leaks` asks for); any other is found by its name (mode_parse). */
enum pyperf_mode {
	MODE_CPU = 0,                /* on-CPU samples; counts are samples */
	MODE_WALL,                   /* on-CPU samples and off-CPU time; counts are ns */
	MODE_OFFCPU,                 /* off-CPU time only; counts are ns */
	MODE_FAULTS,                 /* page faults on anonymous memory; counts are bytes */
	MODE_ALLOC,                  /* bytes allocated (malloc & co.), sampled; counts are bytes */
	MODE_LEAKS,                  /* `leaks`: sampled allocations still live; counts are
				      * bytes (not a --mode) */
};

/* what one count is */
enum mode_quantity {
	MQ_SAMPLES,                  /* a sample of a clock at -F Hz */
	MQ_NS,                       /* a nanosecond of thread time */
	MQ_BYTES,                    /* a byte of memory */
};

/* how the text report (out_report.c) presents the mode's profile */
enum mode_report {
	MR_SAMPLES,                  /* samples of the clock, and their rate */
	MR_THREAD_TIME,              /* thread time: on-CPU from the clock, off-CPU
				      * from the blocks walked */
	MR_BYTES,                    /* bytes, with the events counted and walked
				      * (events, walked) */
	MR_LIVE,                     /* bytes still live at the end: the heap's
				      * numbers, and the live allocations' stacks
				      * before one table */
};

struct mode_desc {
	const char *name;            /* --mode's word; `mode =` in the daemon's configuration */
	bool option;                 /* a --mode (leaks is the `leaks` command's) */
	enum mode_quantity quantity;
	const char *type;            /* pprof's and OTLP's sample type of the quantity: the
				      * name, or Go's heap-profile names pprof and
				      * Pyroscope know */
	bool periodic;               /* its samples come from a clock at -F Hz (pprof's
				      * period; Pyroscope's sampleRate) */
	int perf_event;              /* what runs on_sample on each CPU: PERF_COUNT_SW_*
				      * (cpu-clock at -F Hz, or every page fault), -1: none */
	const char *did;             /* what a process did to be counted ("ran on a CPU") */
	const char *amount;          /* what the bytes are, in top's headline ("faulted in") */
	const char *svg_amount;      /* and in the flame graph's subtitle */
	enum mode_report report;
	const char *report_amount;   /* MR_BYTES: what the bytes are, in the report's headline */
	/* MR_BYTES: the counter (pyperf.h's STAT_*) of the events the mode
	 * sees and its name in the headline, and the one of those walked */
	enum stat_idx events_stat, walked_stat;
	const char *events, *walked;
	bool allocator;              /* its programs (progs) are the allocator probes, which
				      * count (the clock only finds processes): one byte in
				      * --interval is sampled, they are put into each
				      * adopted process's C library and, for a command,
				      * before it runs; their run time is the mode's */
	/* the BPF programs and maps that are the mode's own: loaded and full
	 * size in this mode only (the others are left out, their maps one
	 * entry long); `leaks` adds the live ones */
	const char *const *progs, *const *maps, *const *live_progs, *const *live_maps;
};

extern const struct mode_desc mode_descs[];
extern const size_t mode_ndescs;

/* m's row (the cpu row for a value out of range) */
const struct mode_desc *mode_desc(enum pyperf_mode m);

/* the mode as --mode names it */
static inline const char *mode_name(enum pyperf_mode m)
{
	return mode_desc(m)->name;
}

/* --mode's argument: 0 with *out set, -1 for a name not in mode_names */
int mode_parse(const char *name, enum pyperf_mode *out);
/* the --mode names, as a sentence lists them ("cpu, wall or alloc") */
void mode_names(char *buf, size_t len);

/* counts are nanoseconds of thread time */
static inline bool mode_is_time(enum pyperf_mode m)
{
	return mode_desc(m)->quantity == MQ_NS;
}

/* counts are bytes of memory */
static inline bool mode_is_bytes(enum pyperf_mode m)
{
	return mode_desc(m)->quantity == MQ_BYTES;
}

/* pprof's sample type of the mode's quantity */
static inline const char *mode_type(enum pyperf_mode m)
{
	return mode_desc(m)->type;
}

/* pprof's unit of the mode's quantity (cpu mode: of its cpu time) */
static inline const char *mode_unit(enum pyperf_mode m)
{
	return mode_is_bytes(m) ? "bytes" : "nanoseconds";
}

/* what tables show per count: seconds (a sample's period at freq, or a
 * nanosecond), or MiB (a byte) */
static inline double mode_per_count(enum pyperf_mode m, int freq)
{
	switch (mode_desc(m)->quantity) {
	case MQ_BYTES:
		return 1.0 / 1048576;
	case MQ_NS:
		return 1e-9;
	default:
		return freq > 0 ? 1.0 / freq : 0;
	}
}

/* the unit a total is given in (with its decimals): samples, s or MiB */
static inline const char *mode_total_unit(enum pyperf_mode m)
{
	enum mode_quantity q = mode_desc(m)->quantity;

	return q == MQ_SAMPLES ? "samples" : q == MQ_BYTES ? "MiB" : "s";
}

static inline int mode_total_decimals(enum pyperf_mode m)
{
	return mode_desc(m)->quantity == MQ_SAMPLES ? 0 : 2;
}

/* does the mode load this BPF program or size this map (name) */
bool mode_wants(const struct mode_desc *d, bool live, const char *name, bool map);
/* is name some mode's own program or map (else every mode has it) */
bool mode_owned(const char *name, bool map);

#endif
