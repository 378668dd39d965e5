/* out_common.h - what every writer of a finished profile reads (struct
 * out_ctx) and the helpers they share: frame labels, synthetic root
 * frames, JSON strings and UTF-8, a sample's locations as pprof and OTLP
 * list them (pdict.h keeps their shared dictionary), gzip; and the writers
 * themselves, one out_*.c file each.
 * output.h picks a writer by format; the writers never call back into it. */
#ifndef PYPERF_OUT_COMMON_H
#define PYPERF_OUT_COMMON_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "mode.h"
#include "profile.h"
#include "sbuf.h"

struct out_ctx {
	const struct profile *prof;
	bool lines;                  /* Python frames by line (else by function) */
	bool threads;                /* a root frame per thread */
	bool proc_frames;            /* a root frame per process */
	bool containers;             /* a root frame per container (or "host"), and
				      * the report's table of containers */
	double duration_s;
	int freq;
	enum pyperf_mode mode;       /* what a count is (mode.h): a sample, ns or a byte */
	double min_age;              /* MODE_LEAKS: allocations younger were left out */
	int ncpus;
	uint64_t stats[STAT_NR];     /* sampler counters */
	size_t top;                  /* rows per report table */
	const char *title;           /* what was profiled: the command, or the pids */
	uint64_t start_unix_ns;      /* wall-clock time the sampling started */
	bool icicle;                 /* svg: root on top */
	bool startup_frames;         /* report: the native frames that only call into the
				      * outermost Python frame (start-up) in the tables too */
	int pid;                     /* only this process's samples (0: all) */
	uint32_t gen;                /* and only this image of it (0: all) */
	/* otlp: service.name of a process image (NULL, or NULL returned: the
	 * convention's "unknown_service:" + its executable's name) */
	const char *(*service_of)(void *ctx, int pid, uint32_t gen);
	void *service_ctx;
};

/* Python: "name (file:line)", or "name (file)" without lines; native:
 * "symbol (binary)"; markers: "[...]".  ';' and newlines in names are
 * replaced so the label stays one folded frame. */
void out_frame_label(struct sbuf *b, const struct pframe *f, bool lines);
/* str as a JSON string: quote, backslash and control bytes escaped, U+FFFD
 * for bytes that are not UTF-8 */
void out_json_str(struct sbuf *b, const char *str);
/* The synthetic root frames of a sample (process, thread, and [truncated] or
 * [incomplete] when the stack misses its root side), each followed by ';'. */
void out_root_frames(struct sbuf *b, const struct out_ctx *c, const struct psample *s);

/* Bytes of the UTF-8 character at s (1 to 4), or 0 if the bytes there are
 * not one (formats that must be valid UTF-8 replace those). */
int out_utf8_len(const char *s);
/* s into dst (strlen(s) * 3 + 1 bytes) with every byte that is not UTF-8
 * made U+FFFD: protobuf strings must be UTF-8, and strict readers refuse a
 * whole profile otherwise (a comm cut in a character, a binary's path) */
void out_utf8_clean(char *dst, const char *s);

/* One location of a sample as pprof and OTLP list them. */
enum out_loc_kind { OUT_LOC_KERNEL, OUT_LOC_PYTHON, OUT_LOC_NATIVE, OUT_LOC_MARK };
struct out_loc {
	enum out_loc_kind kind;
	const char *name;
	const char *file;            /* "[kernel.kallsyms]", co_filename, the binary, "" */
	int firstline;               /* Python: the code object's first line */
	int64_t line;                /* Python: the current line (0 under --no-lines) */
	const struct binary *bin;    /* native: its binary, if known (else NULL) */
	uint64_t addr;               /* native in bin: the symbol's ELF address */
};
/* The locations of s, leaf first: its kernel frames, the merged Python and
 * native frames, then [incomplete] and [truncated] when the walk missed the
 * root side; at most max (the markers always fit: max > 2).  Their number. */
size_t out_sample_locs(const struct out_ctx *c, const struct psample *s, struct out_loc *out,
		       size_t max);
/* The most out_sample_locs gives. */
#define OUT_MAX_LOCS (PYPERF_KSTACK_DEPTH + PYPERF_MAX_FRAMES + PYPERF_MAX_NATIVE + 8)
/* The samples every writer shows (profile_samples, limited to c->pid and
 * c->gen); the caller frees the array.  NULL when out of memory. */
struct psample **out_samples(const struct out_ctx *c, size_t *n);
/* Each writer returns 0, or -1 with errno set. */
int out_folded(FILE *f, const struct out_ctx *c);
int out_report(FILE *f, const struct out_ctx *c);
int out_svg(FILE *f, const struct out_ctx *c);
int out_pprof(FILE *f, const struct out_ctx *c);
int out_speedscope(FILE *f, const struct out_ctx *c);
int out_otlp(FILE *f, const struct out_ctx *c);
/* the samples and markers of c->prof->timeline in time (Chrome trace-event
 * JSON, gzipped when gz) */
int out_timeline(FILE *f, const struct out_ctx *c, bool gz);
/* pyperf-bpf diff: a differential flame graph, the shape of cur with each
 * frame coloured by how its share of the total changed from base (red: up,
 * blue: down, white: the same; saturation by the size of the change; its
 * title gives both shares), as Brendan Gregg's difffolded draws them. */
struct in_profile;
int out_svg_diff(FILE *f, const char *title, const struct in_profile *base,
		 const struct in_profile *cur);
/* data gzipped (header mtime 0, so equal inputs give equal bytes) to f;
 * 0, or -1 with errno set */
int out_gzip(FILE *f, const uint8_t *data, size_t len);

#endif
