/* http.c - one HTTP POST through libcurl, or through the curl program in
 * the static build (see http.h). */
#include "http.h"
#include "errmsg.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* a header line of the answer: grpc-status and grpc-message are kept */
static void answer_header(struct http_answer *a, const char *p, size_t len)
{
	if (len > 12 && !strncasecmp(p, "grpc-status:", 12))
		a->grpc_code = atoi(p + 12);
	else if (len > 13 && !strncasecmp(p, "grpc-message:", 13)) {
		const char *v = p + 13 + strspn(p + 13, " ");
		size_t n = strcspn(v, "\r\n");

		if (n > (size_t)(p + len - v))
			n = (size_t)(p + len - v);
		snprintf(a->grpc_message, sizeof(a->grpc_message), "%.*s", (int)n, v);
	}
}

#ifndef PYPERF_STATIC

#include "dynlib.h"

#include <curl/curl.h>

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

int http_init(char *err, size_t errlen)
{
	static void *lib;
	static const char *const names[] = {
		"curl_global_init", "curl_easy_init", "curl_easy_reset", "curl_easy_setopt",
		"curl_easy_perform", "curl_easy_getinfo", "curl_easy_strerror", "curl_easy_cleanup",
		"curl_slist_append", "curl_slist_free_all",
	};
	char why[256];

	if (lib)
		return 0;
	lib = dynlib_open("libcurl.so.4", names, (void **)&curl, sizeof(names) / sizeof(names[0]),
			  why, sizeof(why));
	if (!lib) {
		set_err(err, errlen, "--push and --otlp need libcurl (Debian package libcurl4): %s", why);
		return -1;
	}
	curl.global_init(CURL_GLOBAL_DEFAULT);
	return 0;
}

struct http *http_new(void)
{
	return (struct http *)curl.easy_init();
}

void http_free(struct http *h)
{
	if (h)
		curl.easy_cleanup((CURL *)h);
}

static size_t discard_body(void *p, size_t size, size_t n, void *ctx)
{
	return size * n;
}

static size_t on_header(char *p, size_t size, size_t n, void *ctx)
{
	answer_header(ctx, p, size * n);
	return size * n;
}

int http_post(struct http *h, const char *url, const char *const *headers, const void *body,
	      size_t len, bool grpc, struct http_answer *a, char *why, size_t whylen)
{
	CURL *c = (CURL *)h;
	struct curl_slist *hl = NULL;
	CURLcode rc;

	memset(a, 0, sizeof(*a));
	a->grpc_code = -1;
	for (size_t i = 0; headers[i]; i++)
		hl = curl.slist_append(hl, headers[i]);
	curl.easy_reset(c);
	curl.easy_setopt(c, CURLOPT_URL, url);
	curl.easy_setopt(c, CURLOPT_POST, 1L);
	curl.easy_setopt(c, CURLOPT_POSTFIELDS, body);
	curl.easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	curl.easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	curl.easy_setopt(c, CURLOPT_HEADERDATA, a);
	if (grpc) {
		curl.easy_setopt(c, CURLOPT_HTTP_VERSION, (long)(strncmp(url, "https:", 6)
				 ? CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE : CURL_HTTP_VERSION_2TLS));
		/* one connection per call: a reused HTTP/2 connection after
		 * curl_easy_reset failed in its framing layer here (one call an
		 * interval: nothing to save) */
		curl.easy_setopt(c, CURLOPT_FRESH_CONNECT, 1L);
		curl.easy_setopt(c, CURLOPT_FORBID_REUSE, 1L);
	}
	curl.easy_setopt(c, CURLOPT_HTTPHEADER, hl);
	curl.easy_setopt(c, CURLOPT_TIMEOUT, (long)HTTP_TIMEOUT_S);
	curl.easy_setopt(c, CURLOPT_CONNECTTIMEOUT, (long)HTTP_CONNECT_TIMEOUT_S);
	curl.easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl.easy_setopt(c, CURLOPT_USERAGENT, "pyperf-bpf");
	curl.easy_setopt(c, CURLOPT_WRITEFUNCTION, discard_body);
	rc = curl.easy_perform(c);
	if (rc == CURLE_OK)
		curl.easy_getinfo(c, CURLINFO_RESPONSE_CODE, &a->status);
	else
		snprintf(why, whylen, "%s", curl.easy_strerror(rc));
	curl.slist_free_all(hl);
	return rc == CURLE_OK ? 0 : -1;
}

#else /* PYPERF_STATIC: the curl program */

#include "clock.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

struct http {
	char out[16384];             /* what curl printed: headers, then the status */
};

/* Is there an executable curl on PATH? */
static bool curl_on_path(void)
{
	const char *path = getenv("PATH");
	char buf[4096];

	if (!path || !*path)
		path = "/usr/local/bin:/usr/bin:/bin";
	while (*path) {
		size_t n = strcspn(path, ":");

		snprintf(buf, sizeof(buf), "%.*s/curl", (int)n, n ? path : ".");
		if (access(buf, X_OK) == 0)
			return true;
		path += n + (path[n] == ':');
	}
	return false;
}

int http_init(char *err, size_t errlen)
{
	if (!curl_on_path()) {
		set_err(err, errlen, "--push and --otlp need the curl program on PATH in this static "
			"build (Debian package curl)");
		return -1;
	}
	return 0;
}

struct http *http_new(void)
{
	return calloc(1, sizeof(struct http));
}

void http_free(struct http *h)
{
	free(h);
}

/* Feed body to fd in and read fd out into h->out until curl closes it or
 * the deadline; false if the deadline passed. */
static bool exchange(struct http *h, int in, int out, const char *body, size_t len,
		     uint64_t deadline, size_t *got)
{
	size_t sent = 0;

	*got = 0;
	fcntl(in, F_SETFL, O_NONBLOCK);
	if (!len) {
		close(in);
		in = -1;
	}
	for (;;) {
		struct pollfd p[2] = { { .fd = out, .events = POLLIN }, { .fd = in, .events = POLLOUT } };
		uint64_t now = clock_mono_ns();
		ssize_t r;

		if (now >= deadline) {
			if (in >= 0)
				close(in);
			return false;
		}
		if (poll(p, in >= 0 ? 2 : 1, (int)((deadline - now) / 1000000 + 1)) < 0 &&
		    errno != EINTR)
			continue;
		if (in >= 0 && p[1].revents) {
			r = write(in, body + sent, len - sent);
			if (r > 0)
				sent += (size_t)r;
			if ((r < 0 && errno != EAGAIN && errno != EINTR) || sent == len) {
				close(in); /* EPIPE: curl stopped reading; its output says why */
				in = -1;
			}
		}
		if (p[0].revents) {
			char sink[4096];
			bool full = *got >= sizeof(h->out) - 1;

			r = read(out, full ? sink : h->out + *got,
				 full ? sizeof(sink) : sizeof(h->out) - 1 - *got);
			if (r <= 0 && !(r < 0 && (errno == EINTR || errno == EAGAIN))) {
				if (in >= 0)
					close(in);
				return true;
			}
			if (r > 0 && !full)
				*got += (size_t)r;
		}
	}
}

int http_post(struct http *h, const char *url, const char *const *headers, const void *body,
	      size_t len, bool grpc, struct http_answer *a, char *why, size_t whylen)
{
	char maxtime[16], conntime[16];
	const char *argv[64] = {
		"curl", "-q", "-sS", "--data-binary", "@-", "-o", "/dev/null", "-D", "-",
		"-w", "\\n%{http_code}\\n", "--max-time", maxtime, "--connect-timeout", conntime,
		"-A", "pyperf-bpf", "-H", "Expect:",
	};
	size_t n = 19, got = 0;
	posix_spawn_file_actions_t fa;
	int pin[2], pout[2], status = 0;
	sigset_t pipe_set, old;
	bool answered;
	pid_t pid;

	memset(a, 0, sizeof(*a));
	a->grpc_code = -1;
	snprintf(maxtime, sizeof(maxtime), "%d", HTTP_TIMEOUT_S);
	snprintf(conntime, sizeof(conntime), "%d", HTTP_CONNECT_TIMEOUT_S);
	for (size_t i = 0; headers[i] && n < sizeof(argv) / sizeof(argv[0]) - 6; i++) {
		argv[n++] = "-H";
		argv[n++] = headers[i];
	}
	if (grpc) /* a fresh connection is each curl's own anyway */
		argv[n++] = strncmp(url, "https:", 6) ? "--http2-prior-knowledge" : "--http2";
	argv[n++] = "--url";
	argv[n++] = url;
	argv[n] = NULL;
	if (pipe2(pin, O_CLOEXEC)) {
		snprintf(why, whylen, "pipe: %s", strerror(errno));
		return -1;
	}
	if (pipe2(pout, O_CLOEXEC)) {
		snprintf(why, whylen, "pipe: %s", strerror(errno));
		close(pin[0]);
		close(pin[1]);
		return -1;
	}
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, pin[0], 0);
	posix_spawn_file_actions_adddup2(&fa, pout[1], 1);
	posix_spawn_file_actions_adddup2(&fa, pout[1], 2);
	errno = posix_spawnp(&pid, "curl", &fa, NULL, (char *const *)argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(pin[0]);
	close(pout[1]);
	if (errno) {
		snprintf(why, whylen, "cannot run curl: %s", strerror(errno));
		close(pin[1]);
		close(pout[0]);
		return -1;
	}
	/* a curl that quit before reading the body makes write() raise SIGPIPE
	 * on this thread: held back here, and taken off if it came */
	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
	answered = exchange(h, pin[1], pout[0], body, len,
			    clock_mono_ns() + (uint64_t)(HTTP_TIMEOUT_S + 5) * 1000000000ull, &got);
	{
		struct timespec zero = { 0 };

		while (sigtimedwait(&pipe_set, NULL, &zero) > 0)
			;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	close(pout[0]);
	if (!answered)
		kill(pid, SIGKILL);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	h->out[got] = 0;
	if (!answered) {
		snprintf(why, whylen, "curl gave no answer in %d s", HTTP_TIMEOUT_S + 5);
		return -1;
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		/* -sS: its error is a line "curl: (N) ..." */
		const char *e = strstr(h->out, "curl: (");

		if (e)
			snprintf(why, whylen, "%.*s", (int)strcspn(e, "\r\n"), e);
		else if (WIFEXITED(status))
			snprintf(why, whylen, "curl exited with status %d", WEXITSTATUS(status));
		else
			snprintf(why, whylen, "curl was killed by signal %d", WTERMSIG(status));
		return -1;
	}
	/* the headers (and gRPC's trailers) line by line, then the status code
	 * that -w printed last */
	while (got && (h->out[got - 1] == '\n' || h->out[got - 1] == '\r'))
		h->out[--got] = 0;
	for (char *p = h->out, *e; *p; p = e + (*e != 0)) {
		e = p + strcspn(p, "\n");
		answer_header(a, p, (size_t)(e - p));
	}
	{
		char *last = strrchr(h->out, '\n'), *stop;

		a->status = strtol(last ? last + 1 : h->out, &stop, 10);
		if (*stop)
			a->status = 0;
	}
	if (!a->status) {
		snprintf(why, whylen, "curl printed no HTTP status");
		return -1;
	}
	return 0;
}

#endif
