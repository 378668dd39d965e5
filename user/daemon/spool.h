/* spool.h - profiles on their way to a server: a Pyroscope-compatible one
 * or an OTLP/HTTP receiver (one spool, in its own directory, per server).
 *
 * Every profile to push is first written to the spool directory as one file,
 * NNNNNNNNNNNN.prof, so a profile that was taken survives a backend outage
 * and a restart of the daemon.  A file is three parts:
 *
 *     pyperf-spool 1 BODYLEN CRC32\n     (the header: magic, format version,
 *                                         the body's length in bytes, and the
 *                                         zlib CRC-32, 8 hex digits, of all
 *                                         that follows the header)
 *     QUERY\n                            (the ingest query string, or for
 *                                         OTLP a description, "otlp=...")
 *     BODY                               (the gzipped pprof or OTLP request)
 *
 * It is written as .new.XXXXXX, fsynced, renamed into place and the
 * directory fsynced, so a crash or a power loss leaves either a whole file
 * or a temporary one, which the next spool_open removes.  An uploader thread
 * sends the files oldest first with HTTP POST (http.h; spool_proto below)
 * and removes each one the server accepted (2xx).  Before sending it checks
 * the file: one that fails (cut short, a byte changed, not a spool file at
 * all) is removed unsent, logged and counted as corrupt.  A file of the
 * format before the header (QUERY\n then BODY) is sent if its query line
 * looks like one and its body is one complete gzip stream (whose trailer's
 * CRC-32 and length zlib checks), else it is corrupt.
 *
 * A failure (no connection, timeout, 5xx, 408, 429) keeps the file and
 * waits 1, 2, 4 ... up to 60 s before trying again.  Any other 4xx is tried
 * again the same way up to SPOOL_REFUSALS times in all (a server that is
 * starting answers so: Pyroscope's 422 "empty ring" before its ring has an
 * ingester), then the server will never take that profile: it is dropped
 * and counted.  The
 * spool holds at most max_bytes: adding beyond that drops the oldest files,
 * counted and logged.  Order is kept: nothing newer is sent before an older
 * file has gone.  Delivery is at least once: see the note on duplicates in
 * spool.c. */
#ifndef PYPERF_SPOOL_H
#define PYPERF_SPOOL_H

#include <stddef.h>
#include <stdint.h>

struct spool;

struct spool_stats {
	uint64_t sent, sent_bytes;       /* accepted by the server */
	uint64_t dropped, dropped_bytes; /* spool full, or refused by the server */
	uint64_t failures;               /* attempts that will be retried */
	uint64_t corrupt, corrupt_bytes; /* files that failed their check: removed unsent */
	uint64_t pending, pending_bytes; /* in the spool now */
};

/* How the uploader sends a file: Pyroscope's POST URL/ingest?QUERY with the
 * gzipped pprof as the body, OTLP/HTTP's POST URL (the profiles endpoint)
 * of a gzipped protobuf Export request, or OTLP/gRPC's Export call at URL
 * (scheme, host and port; cleartext HTTP/2 for http://) with that request
 * as one gzip-compressed message; QUERY is then only a description
 * ("otlp=...").  gRPC's retryable codes are retried, the others refuse. */
enum spool_proto { SPOOL_PYROSCOPE, SPOOL_OTLP_HTTP, SPOOL_OTLP_GRPC };

#define SPOOL_REFUSALS 6 /* answers of 4xx to one file before it is dropped */

/* Create (if needed) dir and start the uploader; NULL with a message. */
struct spool *spool_open(const char *dir, uint64_t max_bytes, enum spool_proto proto,
			 const char *url, char *err, size_t errlen);
/* Queue one profile; 0, or -1 with a message (it could not be written). */
int spool_add(struct spool *s, const char *query, const void *data, size_t len, char *err,
	      size_t errlen);
void spool_get_stats(struct spool *s, struct spool_stats *st);
/* *sum += *st, field by field (the daemon's figures over its spools) */
void spool_stats_add(struct spool_stats *sum, const struct spool_stats *st);
/* Change the limit or the server (SIGHUP). */
void spool_configure(struct spool *s, uint64_t max_bytes, const char *url);
/* Try for up to timeout_s to send what is queued, then stop the uploader.
 * What was not sent stays in the directory for the next start; returns how
 * many profiles that is. */
size_t spool_close(struct spool *s, double timeout_s);
/* Check one spool file as the uploader does before sending it: 1 and its
 * query and body (pointers into *buf, which the caller frees) if it would be
 * sent, 0 with why if it is corrupt or unreadable. */
int spool_check_file(const char *path, char **buf, const char **query, const char **body,
		     size_t *body_len, char *why, size_t whylen);

#endif
