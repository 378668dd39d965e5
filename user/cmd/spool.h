/* spool.h - profiles on their way to a Pyroscope-compatible server.
 *
 * Every profile to push is first written to the spool directory as one file
 * (NNNNNNNNNNNN.prof: the ingest query string on the first line, then the
 * gzipped pprof), so a profile that was taken survives a backend outage and a
 * restart of the daemon.  An uploader thread sends the files oldest first with
 * HTTP POST to URL/ingest?QUERY (libcurl) and removes each one the server
 * accepted (2xx).  A failure (no connection, timeout, 5xx, 408, 429) keeps
 * the file and waits 1, 2, 4 ... up to 60 s before trying again; any other
 * answer means the server will never take that profile: it is dropped and
 * counted.  The spool holds at most max_bytes: adding beyond that drops the
 * oldest files, counted and logged.  Order is kept: nothing newer is sent
 * before an older file has gone. */
#ifndef PYPERF_SPOOL_H
#define PYPERF_SPOOL_H

#include <stddef.h>
#include <stdint.h>

struct spool;

struct spool_stats {
	uint64_t sent, sent_bytes;       /* accepted by the server */
	uint64_t dropped, dropped_bytes; /* spool full, or refused by the server */
	uint64_t failures;               /* attempts that will be retried */
	uint64_t pending, pending_bytes; /* in the spool now */
};

/* Create (if needed) dir and start the uploader; NULL with a message. */
struct spool *spool_open(const char *dir, uint64_t max_bytes, const char *url, char *err,
			 size_t errlen);
/* Queue one profile; 0, or -1 with a message (it could not be written). */
int spool_add(struct spool *s, const char *query, const void *data, size_t len, char *err,
	      size_t errlen);
void spool_get_stats(struct spool *s, struct spool_stats *st);
/* Change the limit or the server (SIGHUP). */
void spool_configure(struct spool *s, uint64_t max_bytes, const char *url);
/* Try for up to timeout_s to send what is queued, then stop the uploader.
 * What was not sent stays in the directory for the next start; returns how
 * many profiles that is. */
size_t spool_close(struct spool *s, double timeout_s);

#endif
