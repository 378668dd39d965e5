/* daemon_sinks.c - where the daemon's profiles go (see daemon_sinks.h). */
#include "daemon_sinks.h"
#include "errmsg.h"
#include "dlog.h"
#include "mode.h"
#include "outfile.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

void sink_dir_write(const char *dirpath, const char *app, int pid, uint64_t end_ns,
		    const char *data, size_t len)
{
	char path[2048], stamp[32], err[512];
	time_t t = (time_t)(end_ns / 1000000000ull);
	struct outfile o;
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%S", &tm);
	snprintf(path, sizeof(path), "%s/%s-%d-%s.%03lluZ.pb.gz", dirpath, app, pid, stamp,
		 (unsigned long long)(end_ns / 1000000 % 1000));
	for (int i = 2; access(path, F_OK) == 0 && i < 100; i++) /* two images of one pid */
		snprintf(path, sizeof(path), "%s/%s-%d-%s.%03lluZ-%d.pb.gz", dirpath, app, pid,
			 stamp, (unsigned long long)(end_ns / 1000000 % 1000), i);
	/* stacks, file paths and command lines of every process: root's only,
	 * as /proc keeps them (the spool is 0600 too) */
	if (outfile_open_mode(&o, path, 0600, err, sizeof(err)) == 0) {
		if (fwrite(data, 1, len, o.f) == len && outfile_commit(&o, err, sizeof(err)) == 0)
			return;
		if (o.f)
			set_err(err, sizeof(err), "cannot write %.300s: %s", path, strerror(errno));
		outfile_discard(&o);
	}
	dlog(DLOG_ERR, "%s", err);
}

static void url_escape(const char *s, char *out, size_t len)
{
	size_t n = 0;

	for (; *s && n + 4 < len; s++) {
		if (isalnum((unsigned char)*s) || strchr("-._~", *s))
			out[n++] = *s;
		else
			n += (size_t)snprintf(out + n, len - n, "%%%02X", (unsigned char)*s);
	}
	out[n] = 0;
}

void sink_push(struct spool *sp, const char *host, const char *app, int pid, uint64_t from_ns,
	       uint64_t end_ns, int freq, enum pyperf_mode mode, const char *data, size_t len)
{
	char name[512], ename[1600], query[2048], rate[64], err[512];

	snprintf(name, sizeof(name), "%s{hostname=%s,pid=%d,service_name=%s}", app, host, pid, app);
	url_escape(name, ename, sizeof(ename));
	if (mode == MODE_CPU)
		snprintf(rate, sizeof(rate), "sampleRate=%d", freq);
	else if (mode_is_bytes(mode))
		snprintf(rate, sizeof(rate), "units=bytes&aggregationType=sum");
	else
		snprintf(rate, sizeof(rate), "units=nanoseconds&aggregationType=sum");
	snprintf(query, sizeof(query), "name=%s&from=%llu&until=%llu&format=pprof&%s"
		 "&spyName=pyperf-bpf", ename,
		 (unsigned long long)(from_ns / 1000000000ull),
		 (unsigned long long)((end_ns + 999999999ull) / 1000000000ull), rate);
	if (spool_add(sp, query, data, len, err, sizeof(err)))
		dlog(DLOG_ERR, "%s", err);
}

struct dfile {
	char name[512];
	struct timespec mtime;
	uint64_t size;
};

static int cmp_dfile(const void *a, const void *b)
{
	const struct dfile *x = a, *y = b;

	if (x->mtime.tv_sec != y->mtime.tv_sec)
		return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
	if (x->mtime.tv_nsec != y->mtime.tv_nsec)
		return x->mtime.tv_nsec < y->mtime.tv_nsec ? -1 : 1;
	return strcmp(x->name, y->name);
}

void sink_dir_prune(const char *dirpath, long keep, uint64_t keep_bytes)
{
	DIR *dir = opendir(dirpath);
	struct dfile *v = NULL;
	size_t n = 0, cap = 0, removed = 0;
	uint64_t total = 0;
	struct dirent *e;

	if (!dir)
		return;
	while ((e = readdir(dir))) {
		size_t l = strlen(e->d_name);
		char path[2048];
		struct stat st;

		if (e->d_name[0] == '.' || l < 7 || strcmp(e->d_name + l - 6, ".pb.gz") ||
		    l >= sizeof(v->name))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dirpath, e->d_name);
		if (stat(path, &st) || !S_ISREG(st.st_mode))
			continue;
		if (n == cap) {
			struct dfile *nv = realloc(v, (cap = cap ? cap * 2 : 256) * sizeof(*v));

			if (!nv)
				break;
			v = nv;
		}
		snprintf(v[n].name, sizeof(v[n].name), "%s", e->d_name);
		v[n].mtime = st.st_mtim;
		v[n].size = (uint64_t)st.st_size;
		total += v[n++].size;
	}
	closedir(dir);
	qsort(v, n, sizeof(*v), cmp_dfile);
	for (size_t i = 0; i < n && (n - i > (size_t)keep || total > keep_bytes); i++) {
		char path[2048];

		snprintf(path, sizeof(path), "%s/%s", dirpath, v[i].name);
		if (unlink(path) == 0)
			removed++;
		total -= v[i].size;
	}
	free(v);
}

