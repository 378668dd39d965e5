/* spool.c - the push queue (see spool.h).  The main thread only writes
 * files; the uploader thread only reads, checks and removes them.  Both keep
 * the directory's contents in order by their sequence numbers, which
 * continue across restarts from the highest one found.
 *
 * Duplicates.  A profile is removed the moment the server's 2xx arrives,
 * before anything else is done, so a crash can resend it only if it falls
 * between the server taking the request and that unlink: one round trip
 * (the server's processing and its reply), plus, for a power loss, the time
 * until the file system commits the unlink (not fsynced: that would cost a
 * disk flush per profile sent).  Closing that window for good needs the
 * server to drop repeats (an id in the query) or at-most-once delivery
 * (rename before sending, lose on a crash); a duplicate profile in
 * Pyroscope only doubles one interval of one process, a lost one is gone,
 * so this keeps at least once. */
#include "spool.h"
#include "errmsg.h"
#include "clock.h"
#include "dlog.h"
#include "http.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#define BACKOFF_FIRST_S 1
#define BACKOFF_MAX_S 60
#define MAGIC "pyperf-spool"
#define VERSION 1
#define HEADER_MAX 64 /* "pyperf-spool 1 " + 20 digits + " " + 8 hex + "\n" */

struct spool {
	char dir[4096];
	enum spool_proto proto;
	char *url;
	uint64_t max_bytes;
	uint64_t next_seq;
	pthread_t thread;
	bool started;
	pthread_mutex_t lock;        /* everything below, and the url */
	pthread_cond_t wake;
	bool stopping;
	double deadline;             /* when stopping: give up at this time */
	uint64_t refused_seq;        /* the file the server refused last (uploader's) */
	unsigned refusals;           /* and how many times in a row */
	struct spool_stats st;
};

struct entry {
	uint64_t seq;
	uint64_t size;
};

static int cmp_entry(const void *a, const void *b)
{
	uint64_t x = ((const struct entry *)a)->seq, y = ((const struct entry *)b)->seq;

	return x < y ? -1 : x > y;
}

/* The spooled files, oldest first (caller frees); NULL and 0 if none. */
static struct entry *list(const struct spool *s, size_t *n)
{
	DIR *d = opendir(s->dir);
	struct entry *v = NULL;
	size_t cap = 0;
	struct dirent *e;

	*n = 0;
	if (!d)
		return NULL;
	while ((e = readdir(d))) {
		char path[4400], *end;
		unsigned long long seq = strtoull(e->d_name, &end, 10);
		struct stat st;

		if (end == e->d_name || strcmp(end, ".prof"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", s->dir, e->d_name);
		if (stat(path, &st))
			continue;
		if (*n == cap) {
			struct entry *nv = realloc(v, (cap = cap ? cap * 2 : 64) * sizeof(*v));

			if (!nv)
				break;
			v = nv;
		}
		v[*n].seq = seq;
		v[(*n)++].size = (uint64_t)st.st_size;
	}
	closedir(d);
	if (*n) /* an empty spool has no array: qsort wants one */
		qsort(v, *n, sizeof(*v), cmp_entry);
	return v;
}

static void entry_path(const struct spool *s, uint64_t seq, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%012llu.prof", s->dir, (unsigned long long)seq);
}

/* ---- reading and checking a file ---- */

/* One spool file, read whole: query and body point into buf. */
struct loaded {
	char *buf;
	size_t size;
	const char *query; /* NUL-terminated (its newline replaced) */
	const char *body;
	size_t body_len;
};

enum { LOAD_OK, LOAD_GONE, LOAD_RETRY, LOAD_UNREADABLE, LOAD_CORRUPT };

/* the file at path into buf (one byte more, a NUL); LOAD_OK or another LOAD_ */
static int read_whole(const char *path, struct loaded *f, char *why, size_t whylen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	size_t got = 0;

	if (fd < 0) {
		snprintf(why, whylen, "%s", strerror(errno));
		return errno == ENOENT ? LOAD_GONE : LOAD_RETRY;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		snprintf(why, whylen, "not a regular file");
		close(fd);
		return LOAD_CORRUPT;
	}
	f->size = (size_t)st.st_size;
	if (!(f->buf = malloc(f->size + 1))) {
		snprintf(why, whylen, "out of memory for %zu bytes", f->size);
		close(fd);
		return LOAD_RETRY;
	}
	while (got < f->size) {
		ssize_t r = read(fd, f->buf + got, f->size - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			snprintf(why, whylen, "read: %s", r ? strerror(errno) : "shorter than its size");
			close(fd);
			return LOAD_UNREADABLE;
		}
		got += (size_t)r;
	}
	close(fd);
	f->buf[f->size] = 0;
	return LOAD_OK;
}

/* "pyperf-spool 1 BODYLEN CRC32\n": the lengths and CRC it states, and the
 * header's length; 0 if buf does not start with such a line */
static size_t parse_header(const char *buf, size_t size, unsigned long long *body_len,
			   unsigned long *crc, unsigned *version)
{
	const char *nl = memchr(buf, '\n', size < HEADER_MAX ? size : HEADER_MAX);
	char line[HEADER_MAX + 1], tail;
	size_t n;

	if (!nl || strncmp(buf, MAGIC " ", sizeof(MAGIC)))
		return 0;
	n = (size_t)(nl - buf);
	memcpy(line, buf, n);
	line[n] = 0;
	/* %lx takes no sign or space here: the line is ours, exactly 8 digits */
	if (sscanf(line, MAGIC " %u %llu %8lx%c", version, body_len, crc, &tail) != 3 ||
	    strspn(line + sizeof(MAGIC), "0123456789abcdef ") != n - sizeof(MAGIC))
		return 0;
	return n + 1;
}

/* the query line as the daemon writes it: name=... (Pyroscope) or otlp=...,
 * URL-escaped, printable */
static bool plausible_query(const char *q, size_t len)
{
	if (len < 6 || (strncmp(q, "name=", 5) && strncmp(q, "otlp=", 5)))
		return false;
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)q[i] <= ' ' || (unsigned char)q[i] >= 0x7f)
			return false;
	return true;
}

/* Is p..p+len exactly one complete gzip stream?  zlib checks the trailer's
 * CRC-32 and length against what it inflated. */
static bool whole_gzip(const char *p, size_t len, char *why, size_t whylen)
{
	unsigned char out[16384];
	z_stream z = { 0 };
	int rc;

	if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) {
		snprintf(why, whylen, "zlib: cannot start");
		return false;
	}
	z.next_in = (unsigned char *)p;
	z.avail_in = len > UINT32_MAX ? UINT32_MAX : (uInt)len;
	do {
		z.next_out = out;
		z.avail_out = sizeof(out);
		rc = inflate(&z, Z_NO_FLUSH);
	} while (rc == Z_OK);
	if (rc != Z_STREAM_END)
		snprintf(why, whylen, "body is not a whole gzip stream (%s)",
			 rc == Z_BUF_ERROR ? "cut short" : z.msg ? z.msg : "bad data");
	else if (z.avail_in || len > UINT32_MAX)
		snprintf(why, whylen, "bytes after the gzip stream");
	inflateEnd(&z);
	return rc == Z_STREAM_END && !z.avail_in && len <= UINT32_MAX;
}

/* Read and check the spool file at path; LOAD_OK with f filled (free
 * f->buf), or why not. */
static int load(const char *path, struct loaded *f, char *why, size_t whylen)
{
	unsigned long long body_len;
	unsigned long crc;
	unsigned version;
	size_t hlen;
	char *nl;
	int rc;

	memset(f, 0, sizeof(*f));
	if ((rc = read_whole(path, f, why, whylen)) != LOAD_OK)
		return rc;
	hlen = parse_header(f->buf, f->size, &body_len, &crc, &version);
	nl = memchr(f->buf + hlen, '\n', f->size - hlen);
	if (!nl) {
		snprintf(why, whylen, f->size ? "no query line" : "empty");
		return LOAD_CORRUPT;
	}
	*nl = 0;
	f->query = f->buf + hlen;
	f->body = nl + 1;
	f->body_len = (size_t)(f->buf + f->size - f->body);
	if (!hlen) {
		/* the format before the header: QUERY\n then the gzipped pprof */
		if (!strncmp(f->buf, MAGIC, sizeof(MAGIC) - 1)) {
			snprintf(why, whylen, "bad header");
			return LOAD_CORRUPT;
		}
		if (!plausible_query(f->query, (size_t)(nl - f->query))) {
			snprintf(why, whylen, "not a spool file: neither a header nor a query line");
			return LOAD_CORRUPT;
		}
		return whole_gzip(f->body, f->body_len, why, whylen) ? LOAD_OK : LOAD_CORRUPT;
	}
	if (version != VERSION) {
		snprintf(why, whylen, "format version %u, this daemon reads %d", version, VERSION);
		return LOAD_CORRUPT;
	}
	if (body_len != f->body_len) {
		snprintf(why, whylen, "body is %zu bytes, its header says %llu", f->body_len,
			 body_len);
		return LOAD_CORRUPT;
	}
	*nl = '\n';
	if (crc32_z(0, (const unsigned char *)f->buf + hlen, f->size - hlen) != crc) {
		snprintf(why, whylen, "CRC-32 mismatch");
		return LOAD_CORRUPT;
	}
	*nl = 0;
	return LOAD_OK;
}

int spool_check_file(const char *path, char **buf, const char **query, const char **body,
		     size_t *body_len, char *why, size_t whylen)
{
	struct loaded f;
	int rc = load(path, &f, why, whylen);

	if (rc != LOAD_OK) {
		free(f.buf);
		*buf = NULL;
		return 0;
	}
	*buf = f.buf;
	*query = f.query;
	*body = f.body;
	*body_len = f.body_len;
	return 1;
}

/* ---- the uploader ---- */

enum { POST_RETRY, POST_SENT, POST_REFUSED };

/* gRPC codes worth trying again (OTLP's list): CANCELLED, DEADLINE_EXCEEDED,
 * RESOURCE_EXHAUSTED, ABORTED, OUT_OF_RANGE, UNAVAILABLE, DATA_LOSS */
static bool grpc_retryable(int code)
{
	return code == 1 || code == 4 || code == 8 || code == 10 || code == 11 || code == 14 ||
	       code == 15;
}

/* POST one checked profile; the file at path is removed the moment the
 * server accepted it (see the note on duplicates at the top) */
static int post(struct http *c, enum spool_proto proto, const char *url,
		const struct loaded *f, const char *path, char *why, size_t whylen)
{
	const char *h[5] = { NULL };
	struct http_answer a;
	char *full = NULL, *frame = NULL;
	const char *body = f->body;
	size_t body_len = f->body_len;
	int result = POST_RETRY;

	if (proto == SPOOL_OTLP_GRPC) {
		/* OTLP/gRPC over cleartext HTTP/2: the Export method, the gzipped
		 * request as one compressed length-prefixed message */
		if (asprintf(&full, "%s/opentelemetry.proto.collector.profiles.v1development."
			     "ProfilesService/Export", url) < 0)
			return POST_RETRY;
		if (!(frame = malloc(body_len + 5))) {
			free(full);
			return POST_RETRY;
		}
		frame[0] = 1;
		frame[1] = (char)(body_len >> 24);
		frame[2] = (char)(body_len >> 16);
		frame[3] = (char)(body_len >> 8);
		frame[4] = (char)body_len;
		memcpy(frame + 5, body, body_len);
		body = frame;
		body_len += 5;
		h[0] = "Content-Type: application/grpc";
		h[1] = "TE: trailers";
		h[2] = "grpc-encoding: gzip";
		h[3] = "grpc-accept-encoding: gzip";
	} else if (proto == SPOOL_OTLP_HTTP) {
		/* OTLP/HTTP: the URL is the endpoint itself, the body a gzipped
		 * protobuf Export request */
		if (!(full = strdup(url)))
			return POST_RETRY;
		h[0] = "Content-Type: application/x-protobuf";
		h[1] = "Content-Encoding: gzip";
	} else {
		if (asprintf(&full, "%s/ingest?%s", url, f->query) < 0)
			return POST_RETRY;
		h[0] = "Content-Type: application/octet-stream";
	}
	if (http_post(c, full, h, body, body_len, proto == SPOOL_OTLP_GRPC, &a, why, whylen)) {
		result = POST_RETRY;
	} else if (proto == SPOOL_OTLP_GRPC && a.status == 200 && a.grpc_code != 0) {
		/* the HTTP exchange went through; the call did not */
		if (a.grpc_code < 0)
			snprintf(why, whylen, "gRPC: no grpc-status in the answer");
		else
			snprintf(why, whylen, "gRPC status %d: %s", a.grpc_code, a.grpc_message);
		result = a.grpc_code < 0 || grpc_retryable(a.grpc_code) ? POST_RETRY : POST_REFUSED;
	} else if (a.status >= 200 && a.status < 300) {
		unlink(path); /* first of all: a crash from here on cannot resend it */
		result = POST_SENT;
	} else {
		snprintf(why, whylen, "HTTP status %ld", a.status);
		result = a.status >= 500 || a.status == 408 || a.status == 429 ? POST_RETRY
									     : POST_REFUSED;
	}
	free(full);
	free(frame);
	return result;
}

/* wait until woken or `until` (monotonic seconds), when stopping not past
 * the deadline */
static void nap(struct spool *s, double until)
{
	struct timespec ts;
	double t;

	pthread_mutex_lock(&s->lock);
	if (s->stopping && until > s->deadline)
		until = s->deadline;
	if (until > (clock_mono_ns() / 1e9)) {
		t = clock_unix_ns() / 1e9 + (until - (clock_mono_ns() / 1e9));
		ts.tv_sec = (time_t)t;
		ts.tv_nsec = (long)((t - (double)ts.tv_sec) * 1e9);
		pthread_cond_timedwait(&s->wake, &s->lock, &ts);
	}
	pthread_mutex_unlock(&s->lock);
}

static bool done(struct spool *s, bool idle)
{
	bool stop;

	pthread_mutex_lock(&s->lock);
	stop = s->stopping && (idle || (clock_mono_ns() / 1e9) >= s->deadline);
	pthread_mutex_unlock(&s->lock);
	return stop;
}

/* Check the oldest file and send it; the outcome (UP_GONE: a full spool
 * removed it meanwhile, and counted it), as counted in the stats, its bytes,
 * and why it failed. */
enum { UP_SENT, UP_RETRY, UP_REFUSED, UP_CORRUPT, UP_GONE };

static int upload_one(struct spool *s, struct http *c, const char *url, uint64_t seq,
		      const char *path, uint64_t *bytes, char *why, size_t whylen)
{
	struct loaded f;
	int r = load(path, &f, why, whylen);

	*bytes = f.size;
	if (r == LOAD_OK) {
		int p = url ? post(c, s->proto, url, &f, path, why, whylen) : POST_RETRY;

		if (p == POST_SENT)
			*bytes = f.body_len;
		/* a refusal may pass (a server starting): the file stays for a
		 * few tries, with the backoff of a failure */
		if (p == POST_REFUSED) {
			s->refusals = s->refused_seq == seq ? s->refusals + 1 : 1;
			s->refused_seq = seq;
			if (s->refusals < SPOOL_REFUSALS)
				p = POST_RETRY;
		}
		r = p == POST_SENT ? UP_SENT : p == POST_REFUSED ? UP_REFUSED : UP_RETRY;
	} else {
		r = r == LOAD_GONE ? UP_GONE : r == LOAD_RETRY ? UP_RETRY :
		    r == LOAD_UNREADABLE ? UP_REFUSED : UP_CORRUPT;
	}
	free(f.buf);
	/* a file that cannot be removed would come back at once: wait and
	 * retry instead, logged once like a failing server */
	if ((r == UP_REFUSED || r == UP_CORRUPT) && unlink(path) && errno != ENOENT) {
		snprintf(why, whylen, "cannot remove %.200s (%s): %s", path,
			 r == UP_CORRUPT ? "corrupt" : "refused", strerror(errno));
		r = UP_RETRY;
	}
	pthread_mutex_lock(&s->lock);
	if (r == UP_SENT) {
		s->st.sent++;
		s->st.sent_bytes += *bytes;
	} else if (r == UP_REFUSED) {
		s->st.dropped++;
		s->st.dropped_bytes += *bytes;
	} else if (r == UP_CORRUPT) {
		s->st.corrupt++;
		s->st.corrupt_bytes += *bytes;
	} else if (r == UP_RETRY) {
		s->st.failures++;
	}
	pthread_mutex_unlock(&s->lock);
	return r;
}

static void *uploader(void *arg)
{
	struct spool *s = arg;
	struct http *c = http_new();
	double backoff = 0;
	bool failing = false;

	while (c) {
		size_t n;
		struct entry *v = list(s, &n);
		char path[4400], why[256] = "", *url;
		uint64_t bytes = 0, seq;
		int r;

		if (!n) {
			free(v);
			if (done(s, true))
				break;
			nap(s, (clock_mono_ns() / 1e9) + 1);
			continue;
		}
		if (done(s, false)) {
			free(v);
			break;
		}
		seq = v[0].seq;
		entry_path(s, seq, path, sizeof(path));
		free(v);
		pthread_mutex_lock(&s->lock);
		url = strdup(s->url);
		pthread_mutex_unlock(&s->lock);
		r = upload_one(s, c, url, seq, path, &bytes, why, sizeof(why));
		if (r == UP_SENT && failing)
			dlog(DLOG_INFO, "push to %s works again; %zu profiles were waiting", url, n);
		if (r == UP_REFUSED)
			dlog(DLOG_WARN, "push to %s: profile %s dropped: %s", url, path, why);
		if (r == UP_CORRUPT)
			dlog(DLOG_WARN, "spool: %s is corrupt, dropped unsent (%llu bytes): %s",
			     path, (unsigned long long)bytes, why);
		if (r == UP_RETRY) {
			backoff = backoff ? backoff * 2 : BACKOFF_FIRST_S;
			if (backoff > BACKOFF_MAX_S)
				backoff = BACKOFF_MAX_S;
			if (!failing)
				dlog(DLOG_WARN, "push to %s failed: %s; %zu profiles spooled, retrying "
				     "with backoff", url, why, n);
			failing = true;
			free(url);
			nap(s, (clock_mono_ns() / 1e9) + backoff);
			continue;
		}
		if (r == UP_SENT || r == UP_REFUSED) {
			failing = false;
			backoff = 0;
		}
		free(url);
	}
	http_free(c);
	return NULL;
}

/* ---- the main thread's side ---- */

/* Remove the .new.XXXXXX files a crash left half written: only spool_add
 * makes them, and it renames or removes each before it returns.  (Two
 * daemons must not share a spool: their numbers would collide too.) */
static void remove_unfinished(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	size_t n = 0;

	if (!d)
		return;
	while ((e = readdir(d))) {
		char path[4400];

		if (strncmp(e->d_name, ".new.", 5))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (unlink(path) == 0)
			n++;
	}
	closedir(d);
	if (n)
		dlog(DLOG_INFO, "spool %s: removed %zu unfinished files of an earlier run", dir, n);
}

struct spool *spool_open(const char *dir, uint64_t max_bytes, enum spool_proto proto,
			 const char *url, char *err, size_t errlen)
{
	struct spool *s = calloc(1, sizeof(*s));
	struct entry *v;
	size_t n;

	if (!s || !(s->url = strdup(url))) {
		set_err(err, errlen, "out of memory");
		free(s);
		return NULL;
	}
	snprintf(s->dir, sizeof(s->dir), "%s", dir);
	s->proto = proto;
	s->max_bytes = max_bytes;
	if (mkdir(dir, 0700) && errno != EEXIST) {
		set_err(err, errlen, "spool %s: %s", dir, strerror(errno));
		goto fail;
	}
	if (access(dir, W_OK | X_OK)) {
		set_err(err, errlen, "spool %s: %s", dir, strerror(errno));
		goto fail;
	}
	remove_unfinished(dir);
	v = list(s, &n);
	s->next_seq = n ? v[n - 1].seq + 1 : 1;
	free(v);
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->wake, NULL);
	if (http_init(err, errlen))
		goto fail;
	if (pthread_create(&s->thread, NULL, uploader, s)) {
		set_err(err, errlen, "cannot start the uploader thread");
		goto fail;
	}
	s->started = true;
	return s;
fail:
	free(s->url);
	free(s);
	return NULL;
}

/* drop the oldest files until `incoming` more bytes fit */
static void make_room(struct spool *s, uint64_t incoming)
{
	size_t n, i = 0;
	struct entry *v = list(s, &n);
	uint64_t total = incoming, dropped = 0, dbytes = 0;

	for (size_t k = 0; k < n; k++)
		total += v[k].size;
	for (; i < n && total > s->max_bytes; i++) {
		char path[4400];

		entry_path(s, v[i].seq, path, sizeof(path));
		if (unlink(path) == 0) { /* else the uploader just sent it */
			dropped++;
			dbytes += v[i].size;
		}
		total -= v[i].size;
	}
	free(v);
	if (!dropped)
		return;
	pthread_mutex_lock(&s->lock);
	s->st.dropped += dropped;
	s->st.dropped_bytes += dbytes;
	pthread_mutex_unlock(&s->lock);
	dlog(DLOG_WARN, "spool %s is full (%llu bytes at most): dropped the %llu oldest profiles "
	     "(%llu bytes)", s->dir, (unsigned long long)s->max_bytes, (unsigned long long)dropped,
	     (unsigned long long)dbytes);
}

static int write_all(int fd, const void *p, size_t len)
{
	while (len) {
		ssize_t w = write(fd, p, len);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p = (const char *)p + w;
		len -= (size_t)w;
	}
	return 0;
}

/* Make a rename in dir survive a power loss. */
static void sync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd >= 0) {
		fsync(fd);
		close(fd);
	}
}

/* The file is written whole and fsynced before it gets its name, so no crash
 * or power loss leaves a .prof file that is short or empty; the fsyncs cost
 * one disk flush per profile (one per process per interval), in the
 * interval's writing step. */
int spool_add(struct spool *s, const char *query, const void *data, size_t len, char *err,
	      size_t errlen)
{
	char tmp[4400], path[4400], header[HEADER_MAX];
	size_t qlen = strlen(query), hlen, total;
	uLong crc = crc32_z(0, NULL, 0);
	int fd;

	crc = crc32_z(crc, (const unsigned char *)query, qlen);
	crc = crc32_z(crc, (const unsigned char *)"\n", 1);
	crc = crc32_z(crc, data, len);
	hlen = (size_t)snprintf(header, sizeof(header), MAGIC " %d %zu %08lx\n", VERSION, len,
				(unsigned long)crc);
	total = hlen + qlen + 1 + len;
	if (total > s->max_bytes) { /* it would never fit */
		pthread_mutex_lock(&s->lock);
		s->st.dropped++;
		s->st.dropped_bytes += total;
		pthread_mutex_unlock(&s->lock);
		dlog(DLOG_WARN, "spool %s is full (%llu bytes at most): dropped a profile of %zu bytes",
		     s->dir, (unsigned long long)s->max_bytes, len);
		return 0;
	}
	make_room(s, total);
	snprintf(tmp, sizeof(tmp), "%s/.new.XXXXXX", s->dir);
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		set_err(err, errlen, "spool %s: %s", s->dir, strerror(errno));
		return -1;
	}
	if (write_all(fd, header, hlen) || write_all(fd, query, qlen) ||
	    write_all(fd, "\n", 1) || write_all(fd, data, len) || fsync(fd)) {
		set_err(err, errlen, "spool %s: %s", s->dir, strerror(errno));
		close(fd);
		unlink(tmp);
		return -1;
	}
	if (close(fd)) {
		set_err(err, errlen, "spool %s: %s", s->dir, strerror(errno));
		unlink(tmp);
		return -1;
	}
	entry_path(s, s->next_seq++, path, sizeof(path));
	if (rename(tmp, path)) {
		set_err(err, errlen, "spool %s: %s", s->dir, strerror(errno));
		unlink(tmp);
		return -1;
	}
	sync_dir(s->dir);
	pthread_mutex_lock(&s->lock);
	pthread_cond_signal(&s->wake);
	pthread_mutex_unlock(&s->lock);
	return 0;
}

void spool_get_stats(struct spool *s, struct spool_stats *st)
{
	size_t n;
	struct entry *v = list(s, &n);

	pthread_mutex_lock(&s->lock);
	*st = s->st;
	pthread_mutex_unlock(&s->lock);
	st->pending = n;
	st->pending_bytes = 0;
	for (size_t i = 0; i < n; i++)
		st->pending_bytes += v[i].size;
	free(v);
}

void spool_stats_add(struct spool_stats *sum, const struct spool_stats *st)
{
	sum->sent += st->sent;
	sum->sent_bytes += st->sent_bytes;
	sum->dropped += st->dropped;
	sum->dropped_bytes += st->dropped_bytes;
	sum->failures += st->failures;
	sum->corrupt += st->corrupt;
	sum->corrupt_bytes += st->corrupt_bytes;
	sum->pending += st->pending;
	sum->pending_bytes += st->pending_bytes;
}

void spool_configure(struct spool *s, uint64_t max_bytes, const char *url)
{
	char *u = strdup(url);

	pthread_mutex_lock(&s->lock);
	s->max_bytes = max_bytes;
	if (u) {
		free(s->url);
		s->url = u;
	}
	pthread_cond_signal(&s->wake);
	pthread_mutex_unlock(&s->lock);
}

size_t spool_close(struct spool *s, double timeout_s)
{
	size_t left = 0;

	if (!s)
		return 0;
	if (s->started) {
		pthread_mutex_lock(&s->lock);
		s->stopping = true;
		s->deadline = (clock_mono_ns() / 1e9) + timeout_s;
		pthread_cond_signal(&s->wake);
		pthread_mutex_unlock(&s->lock);
		pthread_join(s->thread, NULL);
	}
	free(list(s, &left));
	free(s->url);
	free(s);
	return left;
}
