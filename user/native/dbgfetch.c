/* dbgfetch.c - debug files from debuginfod servers, fetched by helper
 * processes (see dbgfetch.h). */
#include "dbgfetch.h"
#include "clock.h"

#ifndef PYPERF_STATIC
#include "dynlib.h"
#include <elfutils/debuginfod.h>
#endif
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define MAX_IDS 4096             /* build-ids asked in one run */

enum { QUEUED, RUNNING, FETCHED, FAILED };

struct want {
	char hex[81];
	int state;
	char *path;
};

struct dbgfetch {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	struct want *v;
	size_t n, cap;
	char *urls;                  /* "DEBUGINFOD_URLS=..." */
	double timeout_s;
	bool verbose, stop;
	pid_t helper;                /* running, or 0 */
	uint64_t gen;
};

/* Run the helper for hex; its one line (the path, or why not) into line.
 * Returns true if it fetched. */
static bool run_helper(struct dbgfetch *f, const char *hex, char *line, size_t len)
{
#ifdef PYPERF_STATIC
	/* the static build links no libdebuginfod (it would bring libcurl and
	 * its TLS stack): elfutils' own client program fetches, with the same
	 * cache and environment, and prints the path */
	char *argv[] = { "debuginfod-find", "debuginfo", (char *)hex, NULL };
#else
	char *argv[] = { "pyperf-bpf", "debuginfod-fetch", (char *)hex, NULL };
#endif
	size_t nenv = 0, got = 0;
	char **envp, buf[4096];
	posix_spawn_file_actions_t fa;
	uint64_t deadline = clock_mono_ns() + (uint64_t)(f->timeout_s * 1e9);
	int p[2], status = 0;
	bool killed = false;
	pid_t pid;

	snprintf(line, len, "cannot start the helper");
	while (environ[nenv])
		nenv++;
	envp = calloc(nenv + 2, sizeof(*envp));
	if (!envp || pipe2(p, O_CLOEXEC)) {
		free(envp);
		return false;
	}
	memcpy(envp, environ, nenv * sizeof(*envp));
	envp[nenv] = f->urls;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, p[1], 1);
	posix_spawn_file_actions_adddup2(&fa, p[1], 2);
	pthread_mutex_lock(&f->lock);
#ifdef PYPERF_STATIC
	if (f->stop || posix_spawnp(&pid, "debuginfod-find", &fa, NULL, argv, envp)) {
		pid = 0;
		if (!f->stop)
			snprintf(line, len, "cannot run debuginfod-find (Debian package debuginfod), "
				 "which this static build fetches debug files with");
	}
#else
	if (f->stop || posix_spawn(&pid, "/proc/self/exe", &fa, NULL, argv, envp))
		pid = 0;
#endif
	f->helper = pid;
	pthread_mutex_unlock(&f->lock);
	posix_spawn_file_actions_destroy(&fa);
	free(envp);
	close(p[1]);
	if (!pid) {
		close(p[0]);
		return false;
	}
	for (;;) {
		uint64_t now = clock_mono_ns();
		struct pollfd pfd = { .fd = p[0], .events = POLLIN };
		ssize_t r;

		if (now >= deadline) {
			kill(pid, SIGKILL);
			killed = true;
			break;
		}
		if (poll(&pfd, 1, (int)((deadline - now) / 1000000 + 1)) <= 0)
			continue;
		r = read(p[0], buf + got, sizeof(buf) - 1 - got);
		if (r <= 0)
			break;
		got += (size_t)r;
		if (got == sizeof(buf) - 1) { /* keep the end: the last line counts */
			memmove(buf, buf + got / 2, got - got / 2);
			got -= got / 2;
		}
	}
	close(p[0]);
	while (waitpid(pid, &status, 0) < 0) {
		if (errno == ECHILD) { /* reaped by a subreaper's sweep (proctree.c) */
			status = 0;
			break;
		}
		if (errno != EINTR)
			break;
	}
	pthread_mutex_lock(&f->lock);
	f->helper = 0;
	pthread_mutex_unlock(&f->lock);
	buf[got] = '\0';
	while (got && (buf[got - 1] == '\n' || buf[got - 1] == '\r'))
		buf[--got] = '\0';
	{
		char *last = strrchr(buf, '\n');

		snprintf(line, len, "%.*s", (int)len - 1, last ? last + 1 : buf);
	}
	if (killed) {
		snprintf(line, len, "no answer in %.0f s", f->timeout_s);
		return false;
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || line[0] != '/') {
		if (!WIFEXITED(status))
			snprintf(line, len, "%s", f->stop ? "the run ended before an answer"
							   : "the helper was killed");
		else if (!line[0])
			snprintf(line, len, "the helper failed");
		return false;
	}
	return true;
}

static void *fetch_main(void *arg)
{
	struct dbgfetch *f = arg;

	pthread_mutex_lock(&f->lock);
	for (;;) {
		size_t i;
		char hex[81], line[1024];
		bool ok;

		for (i = 0; i < f->n && f->v[i].state != QUEUED; i++)
			;
		if (f->stop)
			break;
		if (i == f->n) {
			pthread_cond_wait(&f->wake, &f->lock);
			continue;
		}
		f->v[i].state = RUNNING;
		memcpy(hex, f->v[i].hex, sizeof(hex));
		pthread_mutex_unlock(&f->lock);
		ok = run_helper(f, hex, line, sizeof(line));
		if (f->verbose)
			fprintf(stderr, "pyperf-bpf: debuginfod: %s: %s%s\n", hex,
				ok ? "debug file " : "", line);
		pthread_mutex_lock(&f->lock);
		f->v[i].state = ok ? FETCHED : FAILED;
		f->v[i].path = ok ? strdup(line) : NULL;
		__atomic_add_fetch(&f->gen, 1, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&f->lock);
	return NULL;
}

struct dbgfetch *dbgfetch_start(double timeout_s, bool verbose)
{
	const char *urls = getenv("DEBUGINFOD_URLS");
	struct dbgfetch *f;
	size_t len;

	if (!urls || !*urls)
		return NULL;
	f = calloc(1, sizeof(*f));
	len = strlen(urls) + sizeof("DEBUGINFOD_URLS=");
	if (!f || !(f->urls = malloc(len))) {
		free(f);
		return NULL;
	}
	snprintf(f->urls, len, "DEBUGINFOD_URLS=%s", urls);
	unsetenv("DEBUGINFOD_URLS"); /* libdwfl asks no server itself */
	f->timeout_s = timeout_s;
	f->verbose = verbose;
	pthread_mutex_init(&f->lock, NULL);
	pthread_cond_init(&f->wake, NULL);
	if (pthread_create(&f->thread, NULL, fetch_main, f)) {
		fprintf(stderr, "pyperf-bpf: debuginfod: cannot start a thread; no debug files "
			"are fetched\n");
		free(f->urls);
		free(f);
		return NULL;
	}
	return f;
}

void dbgfetch_want(struct dbgfetch *f, const char *hex)
{
	if (!f || strlen(hex) >= sizeof(f->v[0].hex))
		return;
	pthread_mutex_lock(&f->lock);
	for (size_t i = 0; i < f->n; i++)
		if (!strcmp(f->v[i].hex, hex))
			goto out;
	if (f->n == f->cap) {
		size_t cap = f->cap ? f->cap * 2 : 16;
		struct want *v = cap <= MAX_IDS ? realloc(f->v, cap * sizeof(*v)) : NULL;

		if (!v)
			goto out;
		f->v = v;
		f->cap = cap;
	}
	memset(&f->v[f->n], 0, sizeof(f->v[0]));
	strcpy(f->v[f->n].hex, hex);
	f->v[f->n++].state = QUEUED;
	pthread_cond_signal(&f->wake);
out:
	pthread_mutex_unlock(&f->lock);
}

uint64_t dbgfetch_generation(struct dbgfetch *f)
{
	return f ? __atomic_load_n(&f->gen, __ATOMIC_ACQUIRE) : 0;
}

char *dbgfetch_path(struct dbgfetch *f, const char *hex)
{
	char *path = NULL;

	if (!f)
		return NULL;
	pthread_mutex_lock(&f->lock);
	for (size_t i = 0; i < f->n; i++)
		if (!strcmp(f->v[i].hex, hex)) {
			if (f->v[i].state == FETCHED && f->v[i].path)
				path = strdup(f->v[i].path);
			break;
		}
	pthread_mutex_unlock(&f->lock);
	return path;
}

bool dbgfetch_wait(struct dbgfetch *f, double seconds)
{
	uint64_t until = clock_mono_ns() + (uint64_t)(seconds * 1e9);

	if (!f)
		return true;
	for (;;) {
		bool busy = false;

		pthread_mutex_lock(&f->lock);
		for (size_t i = 0; i < f->n && !busy; i++)
			busy = f->v[i].state == QUEUED || f->v[i].state == RUNNING;
		pthread_mutex_unlock(&f->lock);
		if (!busy)
			return true;
		if (clock_mono_ns() >= until)
			return false;
		usleep(20000);
	}
}

void dbgfetch_stop(struct dbgfetch *f)
{
	if (!f)
		return;
	pthread_mutex_lock(&f->lock);
	f->stop = true;
	if (f->helper > 0)
		kill(f->helper, SIGKILL);
	pthread_cond_signal(&f->wake);
	pthread_mutex_unlock(&f->lock);
	pthread_join(f->thread, NULL);
	for (size_t i = 0; i < f->n; i++) {
		/* one helper at a time: the build-ids still queued behind the
		 * one asked last get no answer either, and -v says so for each */
		if (f->verbose && f->v[i].state == QUEUED)
			fprintf(stderr, "pyperf-bpf: debuginfod: %s: the run ended before an answer "
				"(not asked yet: one build-id at a time)\n", f->v[i].hex);
		free(f->v[i].path);
	}
	free(f->v);
	free(f->urls);
	pthread_mutex_destroy(&f->lock);
	pthread_cond_destroy(&f->wake);
	free(f);
}

#ifdef PYPERF_STATIC
int dbgfetch_helper(const char *hex)
{
	printf("this static build fetches with debuginfod-find, not with a helper\n");
	return 1;
}
#else
static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

int dbgfetch_helper(const char *hex)
{
	unsigned char id[40];
	size_t len = strlen(hex);
	static const char *const names[] = { "debuginfod_begin", "debuginfod_find_debuginfo",
					     "debuginfod_end" };
	struct {
		debuginfod_client *(*begin)(void);
		int (*find)(debuginfod_client *, const unsigned char *, int, char **);
		void (*end)(debuginfod_client *);
	} di;
	debuginfod_client *c;
	char why[256];
	char *path = NULL;
	int fd;

	if (len < 2 || len % 2 || len / 2 > sizeof(id)) {
		printf("not a build-id: %s\n", hex);
		return 1;
	}
	for (size_t i = 0; i < len / 2; i++) {
		int hi = hexval(hex[2 * i]), lo = hexval(hex[2 * i + 1]);

		if (hi < 0 || lo < 0) {
			printf("not a build-id: %s\n", hex);
			return 1;
		}
		id[i] = (unsigned char)(hi << 4 | lo);
	}
	/* opened here, in the helper, not linked: the library and what it
	 * needs (libcurl, gnutls, krb5, ...: 30 libraries) were loaded into
	 * every run, which fetches nothing unless DEBUGINFOD_URLS is set */
	if (!dynlib_open("libdebuginfod.so.1", names, (void **)&di, 3, why, sizeof(why))) {
		printf("cannot load libdebuginfod.so.1 (Debian package libdebuginfod1): %s\n", why);
		return 1;
	}
	if (!(c = di.begin())) {
		printf("cannot start a debuginfod client\n");
		return 1;
	}
	fd = di.find(c, id, (int)(len / 2), &path);
	di.end(c);
	if (fd < 0) {
		printf("%s\n", fd == -ENOENT ? "no server has it" : strerror(-fd));
		free(path);
		return 1;
	}
	close(fd);
	printf("%s\n", path);
	free(path);
	return 0;
}
#endif
