/* timeline.h - samples and markers in time, for -f timeline.
 *
 * The sampler counts stacks in the kernel; with a timeline asked for it also
 * sends each counted sample's time and stack key (struct ev_sample), which
 * are kept here, with the markers the interpreters' USDT probes told (GC
 * pauses, imports).  Bounded twice: at most `cap` samples (the oldest are
 * overwritten) and, when written, only the newest keep_ns of them. */
#ifndef PYPERF_TIMELINE_H
#define PYPERF_TIMELINE_H

#include <stdint.h>
#include <stddef.h>

struct tl_sample {
	uint64_t ts;                 /* CLOCK_MONOTONIC ns; an off-CPU block: its start */
	uint64_t dur;                /* an off-CPU block's length (ns), else 0 */
	uint64_t weight;             /* what it added to its stack's count */
	uint64_t hash;               /* its stack: (pid, gen, hash) */
	uint32_t pid, tid, gen, flags;
};

enum tl_marker_kind { TL_GC, TL_IMPORT };

struct tl_marker {
	uint64_t ts, dur;            /* ns */
	uint32_t pid, tid;
	enum tl_marker_kind kind;
	int32_t arg;                 /* TL_GC: the generation; TL_IMPORT: its depth */
	int64_t collected;           /* TL_GC: objects freed */
	char *name;                  /* TL_IMPORT: the module (malloc'd) */
};

struct timeline {
	struct tl_sample *s;
	size_t cap, n, head;         /* a ring: n kept, the oldest at head */
	uint64_t overwritten;        /* samples the ring let go of */
	struct tl_marker *m;
	size_t mcap, mn, mhead;
	uint64_t m_overwritten;
	uint64_t keep_ns;            /* what is written: the newest keep_ns */
	uint64_t last_ns;            /* the newest time seen */
};

#define TIMELINE_CAP_DEFAULT (1u << 20)   /* samples: 48 MiB */
#define TIMELINE_MARKERS_CAP (1u << 16)

/* 0, or -1 when out of memory. */
int timeline_init(struct timeline *t, size_t cap, uint64_t keep_ns);
void timeline_free(struct timeline *t);
void timeline_add_sample(struct timeline *t, const struct tl_sample *s);
/* takes name (may be NULL) */
void timeline_add_marker(struct timeline *t, const struct tl_marker *m);
/* The samples within the newest keep_ns, sorted by (pid, tid, ts), as a
 * malloc'd copy; *cut: those older than the window.  NULL and *n 0 for none
 * or no memory. */
struct tl_sample *timeline_samples(const struct timeline *t, size_t *n, uint64_t *cut);
/* The markers in the same window, sorted by (pid, tid, ts, longest first),
 * pointers into t (malloc'd array). */
const struct tl_marker **timeline_markers(const struct timeline *t, size_t *n);

#endif
