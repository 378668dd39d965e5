/* test_spool.c - the daemon's push queue (user/daemon/spool.c).  With a server
 * that never answers (a closed loopback port): profiles wait in the
 * directory in order, the oldest are dropped and counted when it is full, a
 * profile that can never fit is dropped at once, and what was not sent is
 * still there after a restart, numbered on from where it left off.  With a
 * small HTTP server here that keeps what it receives: spool files cut
 * short, changed by one byte, empty, or not spool files at all are removed
 * and counted, never sent; a half-written temporary file of a crash is
 * removed; files of the format before the header are sent when their gzip
 * body is whole; everything else arrives exactly once, in order. */
#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <cmocka.h>

#include "spool.h"

#define URL "http://127.0.0.1:9" /* discard port: refused, nothing listens */

/* the .prof files in dir, sorted, into names (at most max) */
static size_t files(const char *dir, char names[][256], size_t max)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	size_t n = 0;

	assert_non_null(d);
	while ((e = readdir(d)))
		if (strstr(e->d_name, ".prof") && n < max)
			snprintf(names[n++], 256, "%s", e->d_name);
	closedir(d);
	qsort(names, n, 256, (int (*)(const void *, const void *))strcmp);
	return n;
}

/* the query line of the spool file named name in dir (after the header) */
static void first_line(const char *dir, const char *name, char *out, size_t len)
{
	char path[8192];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "r");
	assert_non_null(f);
	assert_non_null(fgets(out, (int)len, f));
	assert_int_equal(strncmp(out, "pyperf-spool 1 ", 15), 0);
	assert_non_null(fgets(out, (int)len, f));
	fclose(f);
}

static void test_queue_in_order_full_and_restart(void **state)
{
	char dir[] = "/tmp/pyperf-spool-XXXXXX", err[256] = "", names[16][256], path[8192];
	char data[100], big[300];
	struct spool_stats st;
	struct spool *s;

	(void)state;
	assert_non_null(mkdtemp(dir));
	memset(data, 'x', sizeof(data));
	memset(big, 'z', sizeof(big));
	/* room for two profiles of 100 bytes plus their header and query line
	 * (28 + 7 + 100 bytes each) */
	s = spool_open(dir, 300, SPOOL_PYROSCOPE, URL, err, sizeof(err));
	assert_non_null(s);
	assert_int_equal(spool_add(s, "name=a", data, sizeof(data), err, sizeof(err)), 0);
	assert_int_equal(spool_add(s, "name=b", data, sizeof(data), err, sizeof(err)), 0);
	assert_int_equal(spool_add(s, "name=c", data, sizeof(data), err, sizeof(err)), 0);
	spool_get_stats(s, &st);
	assert_int_equal(st.pending, 2);
	assert_int_equal(st.dropped, 1); /* a, the oldest */
	assert_int_equal(st.sent, 0);
	/* larger than the whole spool: dropped at once, nothing else goes */
	assert_int_equal(spool_add(s, "name=big", big, sizeof(big), err, sizeof(err)), 0);
	spool_get_stats(s, &st);
	assert_int_equal(st.pending, 2);
	assert_int_equal(st.dropped, 2);
	assert_int_equal(spool_close(s, 0.2), 2);
	assert_int_equal(files(dir, names, 16), 2);
	/* the first line of each file is its query: b, then c */
	first_line(dir, names[0], data, sizeof(data));
	assert_string_equal(data, "name=b\n");
	/* a restart finds them and numbers new ones after them */
	s = spool_open(dir, 1000, SPOOL_PYROSCOPE, URL, err, sizeof(err));
	assert_non_null(s);
	spool_get_stats(s, &st);
	assert_int_equal(st.pending, 2);
	assert_int_equal(spool_add(s, "name=d", "y", 1, err, sizeof(err)), 0);
	assert_int_equal(spool_close(s, 0.2), 3);
	assert_int_equal(files(dir, names, 16), 3);
	first_line(dir, names[2], data, sizeof(data));
	assert_string_equal(data, "name=d\n");
	for (size_t i = 0; i < 3; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		unlink(path);
	}
	rmdir(dir);
}

static void test_unusable_directory_is_an_error(void **state)
{
	char err[256] = "";

	(void)state;
	assert_null(spool_open("/proc/no/such/spool", 1000, SPOOL_PYROSCOPE, URL, err, sizeof(err)));
	assert_non_null(strstr(err, "spool /proc/no/such/spool"));
}

/* ---- a loopback HTTP server that keeps every POST ---- */

#define MAX_UPLOADS 32

struct upload {
	char query[512];
	unsigned char body[4096];
	size_t len;
};

static struct server {
	int fd, port;
	pthread_t thread;
	volatile int stop;
	pthread_mutex_t lock;
	struct upload up[MAX_UPLOADS];
	size_t n;
	int refuse;                  /* answer this many requests 422, as a starting
				      * Pyroscope does ("empty ring") */
} srv = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* one request on c: "POST /ingest?QUERY HTTP/1.1", headers, body; 200 */
static void serve_one(int c)
{
	char req[8192], *end, *cl, *q, *sp;
	size_t got = 0, hdr, want;
	struct upload u = { 0 };
	ssize_t r;

	while (!(end = (got ? memmem(req, got, "\r\n\r\n", 4) : NULL))) {
		if (got == sizeof(req) - 1 || (r = read(c, req + got, sizeof(req) - 1 - got)) <= 0)
			return;
		got += (size_t)r;
	}
	req[got] = 0;
	hdr = (size_t)(end + 4 - req);
	*end = 0;
	cl = strcasestr(req, "\r\ncontent-length:");
	want = cl ? strtoul(cl + 17, NULL, 10) : 0;
	if (want > sizeof(u.body))
		return;
	if (strcasestr(req, "\r\nexpect: 100-continue"))
		(void)!write(c, "HTTP/1.1 100 Continue\r\n\r\n", 25);
	memcpy(u.body, req + hdr, got - hdr);
	u.len = got - hdr;
	while (u.len < want && (r = read(c, u.body + u.len, want - u.len)) > 0)
		u.len += (size_t)r;
	q = strchr(req, '?');
	sp = q ? strchr(q, ' ') : NULL;
	if (sp && !strncmp(req, "POST /ingest?", 13))
		snprintf(u.query, sizeof(u.query), "%.*s", (int)(sp - q - 1), q + 1);
	pthread_mutex_lock(&srv.lock);
	if (srv.refuse > 0) {
		srv.refuse--;
		pthread_mutex_unlock(&srv.lock);
		(void)!write(c, "HTTP/1.1 422 Unprocessable Entity\r\nContent-Length: 0\r\n"
			     "Connection: close\r\n\r\n", 75);
		return;
	}
	if (srv.n < MAX_UPLOADS)
		srv.up[srv.n++] = u;
	pthread_mutex_unlock(&srv.lock);
	(void)!write(c, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", 57);
}

static void *serve(void *arg)
{
	while (!srv.stop) {
		struct pollfd p = { .fd = srv.fd, .events = POLLIN };
		int c;

		if (poll(&p, 1, 50) <= 0)
			continue;
		if ((c = accept(srv.fd, NULL, NULL)) < 0)
			continue;
		serve_one(c);
		close(c);
	}
	return NULL;
}

static void server_start(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);

	srv.n = 0;
	srv.stop = 0;
	srv.refuse = 0;
	srv.fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(srv.fd >= 0);
	assert_int_equal(bind(srv.fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(srv.fd, 16), 0);
	assert_int_equal(getsockname(srv.fd, (struct sockaddr *)&a, &al), 0);
	srv.port = ntohs(a.sin_port);
	assert_int_equal(pthread_create(&srv.thread, NULL, serve, NULL), 0);
}

static void server_stop(void)
{
	srv.stop = 1;
	pthread_join(srv.thread, NULL);
	close(srv.fd);
}

/* ---- spool files made and spoiled by hand ---- */

/* text gzipped as one stream into out; its length */
static size_t gzip(const char *text, unsigned char *out, size_t cap)
{
	z_stream z = { 0 };
	size_t n;

	assert_int_equal(deflateInit2(&z, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY),
			 Z_OK);
	z.next_in = (unsigned char *)text;
	z.avail_in = (uInt)strlen(text);
	z.next_out = out;
	z.avail_out = (uInt)cap;
	assert_int_equal(deflate(&z, Z_FINISH), Z_STREAM_END);
	n = z.total_out;
	deflateEnd(&z);
	return n;
}

static void spool_path(const char *dir, unsigned seq, char *out, size_t len)
{
	snprintf(out, len, "%s/%012u.prof", dir, seq);
}

static void write_file(const char *path, const void *a, size_t alen, const void *b, size_t blen)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	assert_int_equal(fwrite(a, 1, alen, f), alen);
	if (blen)
		assert_int_equal(fwrite(b, 1, blen, f), blen);
	assert_int_equal(fclose(f), 0);
}

static off_t file_size(const char *path)
{
	struct stat st;

	assert_int_equal(stat(path, &st), 0);
	return st.st_size;
}

/* change one byte at off (from the end if negative) */
static void flip_byte(const char *path, off_t off)
{
	int fd = open(path, O_RDWR);
	unsigned char c;

	assert_true(fd >= 0);
	if (off < 0)
		off += file_size(path);
	assert_int_equal(pread(fd, &c, 1, off), 1);
	c ^= 0x20;
	assert_int_equal(pwrite(fd, &c, 1, off), 1);
	close(fd);
}

/* A server that refuses a while (422 while it starts) gets the profile once
 * it takes it: a refusal is tried again, with backoff, SPOOL_REFUSALS times. */
static void test_refusals_of_a_starting_server_are_tried_again(void **state)
{
	char dir[] = "/tmp/pyperf-spool-XXXXXX", err[256] = "", url[64];
	struct spool_stats st;
	struct spool *s;

	(void)state;
	assert_non_null(mkdtemp(dir));
	server_start();
	srv.refuse = 2;
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", srv.port);
	s = spool_open(dir, 1 << 20, SPOOL_PYROSCOPE, url, err, sizeof(err));
	assert_non_null(s);
	assert_int_equal(spool_add(s, "name=late", "body", 4, err, sizeof(err)), 0);
	for (int i = 0; i < 200; i++) { /* 1 s, then 2 s of backoff */
		spool_get_stats(s, &st);
		if (st.sent)
			break;
		usleep(50000);
	}
	assert_int_equal(spool_close(s, 5), 0);
	server_stop();
	assert_int_equal(st.sent, 1);
	assert_int_equal(st.dropped, 0);
	assert_int_equal(st.failures, 2);
	assert_int_equal(srv.n, 1);
	assert_string_equal(srv.up[0].query, "name=late");
	rmdir(dir);
}

static void test_corrupt_files_are_dropped_and_the_rest_sent_once(void **state)
{
	char dir[] = "/tmp/pyperf-spool-XXXXXX", err[256] = "", path[8192], url[64], text[64];
	unsigned char gz[8][256];
	size_t gzlen[8], names;
	struct spool_stats st;
	struct spool *s;
	char left[16][256];

	(void)state;
	assert_non_null(mkdtemp(dir));
	for (int i = 0; i < 8; i++) {
		snprintf(text, sizeof(text), "profile %d: %s", i, "a pprof would be here");
		gzlen[i] = gzip(text, gz[i], sizeof(gz[i]));
	}
	/* 1..5 written by the spool while the server is down */
	s = spool_open(dir, 1 << 20, SPOOL_PYROSCOPE, URL, err, sizeof(err));
	assert_non_null(s);
	for (int i = 1; i <= 5; i++) {
		char q[32];

		snprintf(q, sizeof(q), "name=p%d", i);
		assert_int_equal(spool_add(s, q, gz[i], gzlen[i], err, sizeof(err)), 0);
	}
	assert_int_equal(spool_close(s, 0.2), 5);

	/* 2: cut short (a crash could not do this, a full disk or a copy could) */
	spool_path(dir, 2, path, sizeof(path));
	assert_int_equal(truncate(path, file_size(path) - 7), 0);
	/* 3: one byte of the body changed */
	spool_path(dir, 3, path, sizeof(path));
	flip_byte(path, -10);
	/* 4: not a spool file at all, named like one */
	spool_path(dir, 4, path, sizeof(path));
	write_file(path, "garbage\n\x01\x02\x03", 11, NULL, 0);
	/* 6: the format before the header, whole: sent */
	spool_path(dir, 6, path, sizeof(path));
	write_file(path, "name=p6\n", 8, gz[6], gzlen[6]);
	/* 7: the format before the header, its gzip cut short: dropped */
	spool_path(dir, 7, path, sizeof(path));
	write_file(path, "name=p7\n", 8, gz[7], gzlen[7] - 5);
	/* 8: empty */
	spool_path(dir, 8, path, sizeof(path));
	write_file(path, "", 0, NULL, 0);
	/* 9: the format before the header, one byte of its deflate data changed */
	spool_path(dir, 9, path, sizeof(path));
	write_file(path, "name=p9\n", 8, gz[7], gzlen[7]);
	flip_byte(path, -10);
	/* 10: a header of a format version this spool does not know */
	spool_path(dir, 10, path, sizeof(path));
	write_file(path, "pyperf-spool 2 3 00000000\nname=p10\nabc", 38, NULL, 0);
	/* a temporary file a crash left behind: removed, never sent */
	snprintf(path, sizeof(path), "%s/.new.Ab12Cd", dir);
	write_file(path, "name=p0\n", 8, gz[0], gzlen[0]);

	server_start();
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", srv.port);
	s = spool_open(dir, 1 << 20, SPOOL_PYROSCOPE, url, err, sizeof(err));
	assert_non_null(s);
	assert_int_equal(access(path, F_OK), -1); /* the .new file is gone at once */
	for (int i = 0; i < 200; i++) {
		spool_get_stats(s, &st);
		if (st.sent + st.corrupt == 10 && !st.pending)
			break;
		usleep(50000);
	}
	assert_int_equal(spool_close(s, 5), 0);
	server_stop();
	/* exactly 1, 5 and 6, in order, each once, body for body */
	assert_int_equal(srv.n, 3);
	assert_string_equal(srv.up[0].query, "name=p1");
	assert_string_equal(srv.up[1].query, "name=p5");
	assert_string_equal(srv.up[2].query, "name=p6");
	for (size_t k = 0; k < 3; k++) {
		int i = k == 0 ? 1 : k == 1 ? 5 : 6;

		assert_int_equal(srv.up[k].len, gzlen[i]);
		assert_memory_equal(srv.up[k].body, gz[i], gzlen[i]);
	}
	assert_int_equal(st.sent, 3);
	assert_int_equal(st.sent_bytes, gzlen[1] + gzlen[5] + gzlen[6]);
	assert_int_equal(st.corrupt, 7); /* 2, 3, 4, 7, 8, 9 and 10 */
	assert_int_equal(st.dropped, 0);
	assert_int_equal(st.pending, 0);
	names = files(dir, left, 16);
	assert_int_equal(names, 0);
	assert_int_equal(rmdir(dir), 0); /* nothing else left either */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_queue_in_order_full_and_restart),
		cmocka_unit_test(test_unusable_directory_is_an_error),
		cmocka_unit_test(test_refusals_of_a_starting_server_are_tried_again),
		cmocka_unit_test(test_corrupt_files_are_dropped_and_the_rest_sent_once),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
