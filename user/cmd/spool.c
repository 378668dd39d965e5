/* spool.c - the push queue (see spool.h).  The main thread only writes
 * files; the uploader thread only reads and removes them.  Both keep the
 * directory's contents in order by their sequence numbers, which continue
 * across restarts from the highest one found. */
#include "spool.h"
#include "errmsg.h"
#include "clock.h"
#include "dlog.h"

#include <curl/curl.h>
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define BACKOFF_FIRST_S 1
#define BACKOFF_MAX_S 60
#define HTTP_TIMEOUT_S 20

struct spool {
	char dir[4096];
	char *url;
	uint64_t max_bytes;
	uint64_t next_seq;
	pthread_t thread;
	bool started;
	pthread_mutex_t lock;        /* everything below, and the url */
	pthread_cond_t wake;
	bool stopping;
	double deadline;             /* when stopping: give up at this time */
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

/* libcurl is loaded when a spool opens, not linked: with its TLS, LDAP and
 * Kerberos libraries it would add about 10 MB to the RSS of every run,
 * pushing or not. */
static struct {
	CURLcode (*global_init)(long);
	CURL *(*easy_init)(void);
	void (*easy_reset)(CURL *);
	CURLcode (*easy_setopt)(CURL *, CURLoption, ...);
	CURLcode (*easy_perform)(CURL *);
	CURLcode (*easy_getinfo)(CURL *, CURLINFO, ...);
	const char *(*easy_strerror)(CURLcode);
	void (*easy_cleanup)(CURL *);
	struct curl_slist *(*slist_append)(struct curl_slist *, const char *);
	void (*slist_free_all)(struct curl_slist *);
} curl;

static int load_curl(char *err, size_t errlen)
{
	static void *lib;
	static const char *const names[] = {
		"curl_global_init", "curl_easy_init", "curl_easy_reset", "curl_easy_setopt",
		"curl_easy_perform", "curl_easy_getinfo", "curl_easy_strerror", "curl_easy_cleanup",
		"curl_slist_append", "curl_slist_free_all",
	};
	void **slots = (void **)&curl;

	if (lib)
		return 0;
	lib = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		set_err(err, errlen, "--push needs libcurl (Debian package libcurl4): %s", dlerror());
		return -1;
	}
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		/* POSIX: a data pointer from dlsym may be used as a function pointer */
		slots[i] = dlsym(lib, names[i]);
		if (!slots[i]) {
			set_err(err, errlen, "libcurl.so.4 lacks %s", names[i]);
			dlclose(lib);
			lib = NULL;
			return -1;
		}
	}
	curl.global_init(CURL_GLOBAL_DEFAULT);
	return 0;
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

/* ---- the uploader ---- */

static size_t discard_body(void *p, size_t size, size_t n, void *ctx)
{
	return size * n;
}

/* POST one file; 1 sent, 0 retry later, -1 refused for good, 2 gone (a
 * full spool dropped it meanwhile, and counted it) */
static int post(CURL *c, const char *url, const char *path, uint64_t *bytes, char *why,
		size_t whylen)
{
	FILE *f = fopen(path, "re");
	char *body = NULL, *query, *nl, *full = NULL;
	long size, status = 0;
	struct curl_slist *h = NULL;
	CURLcode rc;
	int result = 0;

	if (!f) {
		snprintf(why, whylen, "%s", strerror(errno));
		return errno == ENOENT ? 2 : 0;
	}
	if (fseek(f, 0, SEEK_END) || (size = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) ||
	    !(body = malloc((size_t)size + 1)) || fread(body, 1, (size_t)size, f) != (size_t)size) {
		snprintf(why, whylen, "cannot read %.200s", path);
		fclose(f);
		free(body);
		return -1;
	}
	fclose(f);
	body[size] = 0;
	query = body;
	nl = memchr(body, '\n', (size_t)size);
	if (!nl) {
		snprintf(why, whylen, "%.200s is not a spooled profile", path);
		free(body);
		return -1;
	}
	*nl = 0;
	if (asprintf(&full, "%s/ingest?%s", url, query) < 0) {
		free(body);
		return 0;
	}
	h = curl.slist_append(h, "Content-Type: application/octet-stream");
	curl.easy_reset(c);
	curl.easy_setopt(c, CURLOPT_URL, full);
	curl.easy_setopt(c, CURLOPT_POST, 1L);
	curl.easy_setopt(c, CURLOPT_POSTFIELDS, nl + 1);
	curl.easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)(body + size - (nl + 1)));
	curl.easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl.easy_setopt(c, CURLOPT_TIMEOUT, (long)HTTP_TIMEOUT_S);
	curl.easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 5L);
	curl.easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl.easy_setopt(c, CURLOPT_USERAGENT, "pyperf-bpf");
	curl.easy_setopt(c, CURLOPT_WRITEFUNCTION, discard_body);
	rc = curl.easy_perform(c);
	if (rc != CURLE_OK) {
		snprintf(why, whylen, "%s", curl.easy_strerror(rc));
	} else {
		curl.easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
		if (status >= 200 && status < 300) {
			*bytes = (uint64_t)(body + size - (nl + 1));
			result = 1;
		} else {
			snprintf(why, whylen, "HTTP status %ld", status);
			result = status >= 500 || status == 408 || status == 429 ? 0 : -1;
		}
	}
	curl.slist_free_all(h);
	free(full);
	free(body);
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

static void *uploader(void *arg)
{
	struct spool *s = arg;
	CURL *c = curl.easy_init();
	double backoff = 0;
	bool failing = false;

	while (c) {
		size_t n;
		struct entry *v = list(s, &n);
		char path[4400], why[256] = "", *url;
		uint64_t bytes = 0;
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
		entry_path(s, v[0].seq, path, sizeof(path));
		pthread_mutex_lock(&s->lock);
		url = strdup(s->url);
		pthread_mutex_unlock(&s->lock);
		r = url ? post(c, url, path, &bytes, why, sizeof(why)) : 0;
		if (r == 2) {
			free(url);
			free(v);
			continue;
		}
		pthread_mutex_lock(&s->lock);
		if (r == 1) {
			s->st.sent++;
			s->st.sent_bytes += bytes;
		} else if (r < 0) {
			s->st.dropped++;
			s->st.dropped_bytes += v[0].size;
		} else {
			s->st.failures++;
		}
		pthread_mutex_unlock(&s->lock);
		if (r != 0)
			unlink(path);
		if (r == 1 && failing)
			dlog(DLOG_INFO, "push to %s works again; %zu profiles were waiting", url, n);
		if (r < 0)
			dlog(DLOG_WARN, "push to %s: profile %s dropped: %s", url, path, why);
		if (r == 0) {
			backoff = backoff ? backoff * 2 : BACKOFF_FIRST_S;
			if (backoff > BACKOFF_MAX_S)
				backoff = BACKOFF_MAX_S;
			if (!failing)
				dlog(DLOG_WARN, "push to %s failed: %s; %zu profiles spooled, retrying "
				     "with backoff", url, why, n);
			failing = true;
			free(url);
			free(v);
			nap(s, (clock_mono_ns() / 1e9) + backoff);
			continue;
		}
		failing = false;
		backoff = 0;
		free(url);
		free(v);
	}
	if (c)
		curl.easy_cleanup(c);
	return NULL;
}

/* ---- the main thread's side ---- */

struct spool *spool_open(const char *dir, uint64_t max_bytes, const char *url, char *err,
			 size_t errlen)
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
	s->max_bytes = max_bytes;
	if (mkdir(dir, 0700) && errno != EEXIST) {
		set_err(err, errlen, "spool %s: %s", dir, strerror(errno));
		goto fail;
	}
	if (access(dir, W_OK | X_OK)) {
		set_err(err, errlen, "spool %s: %s", dir, strerror(errno));
		goto fail;
	}
	v = list(s, &n);
	s->next_seq = n ? v[n - 1].seq + 1 : 1;
	free(v);
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->wake, NULL);
	if (load_curl(err, errlen))
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

int spool_add(struct spool *s, const char *query, const void *data, size_t len, char *err,
	      size_t errlen)
{
	char tmp[4400], path[4400];
	size_t qlen = strlen(query);
	FILE *f;
	int fd;

	if (qlen + 1 + len > s->max_bytes) { /* it would never fit */
		pthread_mutex_lock(&s->lock);
		s->st.dropped++;
		s->st.dropped_bytes += qlen + 1 + len;
		pthread_mutex_unlock(&s->lock);
		dlog(DLOG_WARN, "spool %s is full (%llu bytes at most): dropped a profile of %zu bytes",
		     s->dir, (unsigned long long)s->max_bytes, len);
		return 0;
	}
	make_room(s, qlen + 1 + len);
	snprintf(tmp, sizeof(tmp), "%s/.new.XXXXXX", s->dir);
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0 || !(f = fdopen(fd, "w"))) {
		set_err(err, errlen, "spool %s: %s", s->dir, strerror(errno));
		if (fd >= 0) {
			close(fd);
			unlink(tmp);
		}
		return -1;
	}
	fprintf(f, "%s\n", query);
	fwrite(data, 1, len, f);
	if (fclose(f)) {
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
