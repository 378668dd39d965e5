/* dlog.c - see dlog.h. */
#include "dlog.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static FILE *out;        /* NULL: stderr */
static char *out_path;

int dlog_open(const char *path)
{
	FILE *f = NULL;

	if (path && !(f = fopen(path, "ae")))
		return -1;
	pthread_mutex_lock(&lock);
	if (out)
		fclose(out);
	out = f;
	free(out_path);
	out_path = path ? strdup(path) : NULL;
	pthread_mutex_unlock(&lock);
	return 0;
}

int dlog_reopen(void)
{
	FILE *f;
	int rc = 0;

	pthread_mutex_lock(&lock);
	if (out_path) {
		if ((f = fopen(out_path, "ae"))) {
			fclose(out);
			out = f;
		} else {
			rc = -1; /* keep writing to the old one */
		}
	}
	pthread_mutex_unlock(&lock);
	return rc;
}

void dlog(enum dlog_level level, const char *fmt, ...)
{
	char msg[2048], stamp[32];
	time_t now = time(NULL);
	struct tm tm;
	va_list ap;
	FILE *f;
	int saved = errno;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	for (char *p = msg; *p; p++)
		if (*p == '\n')
			*p = ' '; /* one message, one line */
	pthread_mutex_lock(&lock);
	f = out ? out : stderr;
	if (!out && getenv("JOURNAL_STREAM")) {
		fprintf(f, "<%d>%s\n", level, msg);
	} else {
		gmtime_r(&now, &tm);
		strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%SZ", &tm);
		fprintf(f, "%s pyperf-bpf: %s%s\n", stamp,
			level == DLOG_ERR ? "error: " : level == DLOG_WARN ? "warning: " : "", msg);
	}
	fflush(f);
	pthread_mutex_unlock(&lock);
	errno = saved;
}
