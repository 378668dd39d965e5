/* sink.h - where `pyperf-bpf daemon` puts the profiles of an interval.
 *
 * One small interface, one file per sink:
 *   sink_dir.c        --dir: a file per process, APP-PID-TIME.pb.gz (gzipped
 *                     pprof), written whole and renamed, pruned to --keep
 *                     files and --keep-bytes;
 *   sink_pyroscope.c  --push URL: a pprof per process to Pyroscope's /ingest,
 *                     through a spool (spool.c);
 *   sink_otlp.c       --otlp URL: one OTLP profiles Export request per
 *                     interval holding every process (out_otlp.c), gzipped,
 *                     to an OTLP/HTTP receiver, through a spool of its own.
 * A failure is logged (dlog.c): a lost profile never stops the daemon.
 * Each file defines its struct sink_kind; sinks.c lists them. */
#ifndef PYPERF_SINK_H
#define PYPERF_SINK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon_config.h"
#include "profile.h"
#include "spool.h"

/* one process image with samples in the interval */
struct sink_image {
	int pid;
	uint32_t gen;
	const char *app;             /* its application name (daemon_select.c) */
	char *pprof;                 /* its gzipped pprof, rendered on first use */
	size_t pprof_len;
	int pprof_errno;             /* not 0: rendering it failed */
};

/* what an interval hands every sink */
struct sink_interval {
	struct profile *prof;
	const struct daemon_cfg *cfg;
	const char *host;
	uint64_t from_ns, end_ns;    /* wall clock */
	double secs;
	struct sink_image *img;      /* sorted by pid, gen */
	size_t nimg;
	/* service name of an image, for the OTLP sink (daemon.c's select_app) */
	const char *(*app_of)(void *ctx, int pid, uint32_t gen);
	void *app_ctx;
	uint64_t bytes;              /* what the sinks rendered, for --stats */
};

struct out_ctx;
/* *c for writing the interval (every process; a writer limits it) */
void sink_out_ctx(const struct sink_interval *iv, struct out_ctx *c);
/* img's gzipped pprof, rendered once for all sinks; NULL (errno set) if it
 * could not be */
const char *sink_pprof(struct sink_interval *iv, struct sink_image *img, size_t *len);

struct sink;

struct sink_ops {
	const char *name;
	/* take the interval's profiles */
	void (*put)(struct sink *s, struct sink_interval *iv);
	/* new settings (SIGHUP): what can change without a restart */
	void (*configure)(struct sink *s, const struct daemon_cfg *cfg);
	/* add its spool's figures (NULL: it has none) */
	void (*stats)(struct sink *s, struct spool_stats *st);
	/* stop: a last try to send, then free it; returns how many profiles
	 * stay behind for the next start */
	size_t (*close)(struct sink *s);
};

struct sink {
	const struct sink_ops *ops;
};

/* A sink that sends through a spool of its own (Pyroscope, OTLP), and the
 * stats and close every such sink has. */
struct spool_sink {
	struct sink base;
	struct spool *spool;
};
void spool_sink_stats(struct sink *s, struct spool_stats *st);
size_t spool_sink_close(struct sink *s);

/* A kind of sink: its own file defines its row, and sinks.c lists it (one
 * line).  The daemon asks the rows whether any sink is asked for, checks
 * their settings, opens them, and keeps what only a restart may change. */
struct sink_kind {
	const char *option;          /* what turns it on: "--dir DIR" */
	const char *restart_note;    /* its settings a restart takes besides
				      * turning it on or off ("--otlp-protocol"),
				      * or NULL */
	/* does c ask for it */
	bool (*asked)(const struct daemon_cfg *c);
	/* its settings' own checks (NULL: none); 0, or -1 with a message */
	int (*check)(const struct daemon_cfg *c, char *err, size_t errlen);
	/* do the settings only a restart applies differ, and put was's back */
	bool (*restart_differs)(const struct daemon_cfg *now, const struct daemon_cfg *was);
	void (*keep)(struct daemon_cfg *now, const struct daemon_cfg *was);
	/* the sink, NULL when not asked for, or with a message in err when it
	 * cannot start (then the daemon does not either) */
	struct sink *(*open)(const struct daemon_cfg *cfg, char *err, size_t errlen);
};

/* every kind, in the order the daemon opens them (sinks.c) */
extern const struct sink_kind *const sink_kinds[];
extern const size_t nsink_kinds;
#define SINK_KINDS_MAX 8
/* is any sink asked for; else err says which settings turn one on */
bool sinks_asked(const struct daemon_cfg *c, char *err, size_t errlen);
/* each asked for sink's own checks */
int sinks_check(const struct daemon_cfg *c, char *err, size_t errlen);
/* What only a restart applies to the sinks: does it differ between now
 * and was; was's put back into now; in words ("turning --dir, --push or
 * --otlp on or off, and --otlp-protocol"). */
bool sinks_restart_differs(const struct daemon_cfg *now, const struct daemon_cfg *was);
void sinks_restart_keep(struct daemon_cfg *now, const struct daemon_cfg *was);
void sinks_restart_settings(char *buf, size_t len);

#endif
