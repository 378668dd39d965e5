/* sink_dir.c - --dir: one APP-PID-TIME.pb.gz file per process and interval,
 * pruned to --keep files and --keep-bytes (see sink.h).  The profiles hold
 * every process's stacks, file paths and command lines, which /proc shows
 * only to their owners: the directory is 0700 and the files 0600, or with
 * --group GROUP 0750 and 0640, owned by that group (readers of profiles
 * join it). */
#include "sink.h"
#include "errmsg.h"
#include "dlog.h"
#include "outfile.h"

#include <dirent.h>
#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static void write_one(const char *dirpath, gid_t gid, const char *app, int pid,
		      uint64_t end_ns, const char *data, size_t len)
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
	if (outfile_open_mode(&o, path, gid == (gid_t)-1 ? 0600 : 0640, err, sizeof(err)) == 0) {
		if (gid != (gid_t)-1 && fchown(fileno(o.f), (uid_t)-1, gid))
			dlog(DLOG_WARN, "cannot give %s to group %u: %s", path, (unsigned)gid,
			     strerror(errno));
		if (fwrite(data, 1, len, o.f) == len && outfile_commit(&o, err, sizeof(err)) == 0)
			return;
		if (o.f)
			set_err(err, sizeof(err), "cannot write %.300s: %s", path, strerror(errno));
		outfile_discard(&o);
	}
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

static void prune(const char *dirpath, long keep, uint64_t keep_bytes)
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

struct dir_sink {
	struct sink base;
	char dir[1024];
	gid_t gid;                   /* --group's, or -1 */
	long keep;
	uint64_t keep_bytes;
};

static void dir_put(struct sink *s, struct sink_interval *iv)
{
	struct dir_sink *d = (struct dir_sink *)s;

	for (size_t i = 0; i < iv->nimg; i++) {
		size_t len;
		const char *data = sink_pprof(iv, &iv->img[i], &len);

		if (data)
			write_one(d->dir, d->gid, iv->img[i].app, iv->img[i].pid, iv->end_ns, data,
				  len);
	}
	prune(d->dir, d->keep, d->keep_bytes);
}

static void dir_configure(struct sink *s, const struct daemon_cfg *cfg)
{
	struct dir_sink *d = (struct dir_sink *)s;

	d->keep = cfg->keep;
	d->keep_bytes = cfg->keep_bytes;
}

static size_t dir_close(struct sink *s)
{
	free(s);
	return 0;
}

static const struct sink_ops dir_ops = {
	.name = "dir", .put = dir_put, .configure = dir_configure, .close = dir_close,
};

/* The group called name: its id, or -1 if there is none.  The static build
 * reads /etc/group itself: glibc's getgrnam would load the NSS modules of
 * the host's own C library into a program that has another one linked in.
 * So a group that only LDAP or SSSD knows is not found there (the daemon
 * then says so and stops); the .deb's group, made by its postinst, is in
 * /etc/group. */
static gid_t group_id(const char *name)
{
#ifdef PYPERF_STATIC
	FILE *f = fopen("/etc/group", "re");
	gid_t id = (gid_t)-1;
	struct group *g;

	if (!f)
		return (gid_t)-1;
	while ((g = fgetgrent(f)))
		if (!strcmp(g->gr_name, name)) {
			id = g->gr_gid;
			break;
		}
	fclose(f);
	return id;
#else
	struct group *g = getgrnam(name);

	return g ? g->gr_gid : (gid_t)-1;
#endif
}

static struct sink *sink_dir_open(const struct daemon_cfg *cfg, char *err, size_t errlen)
{
	gid_t gid = (gid_t)-1;
	struct dir_sink *d;

	err[0] = 0;
	if (!cfg->dir[0])
		return NULL;
	if (cfg->group[0]) {
		gid = group_id(cfg->group);
		if (gid == (gid_t)-1) {
			set_err(err, errlen, "--group %s: no such group%s", cfg->group,
#ifdef PYPERF_STATIC
				" in /etc/group (this static build does not ask NSS)"
#else
				""
#endif
			);
			return NULL;
		}
	}
	if (mkdir(cfg->dir, gid == (gid_t)-1 ? 0700 : 0750) && errno != EEXIST) {
		set_err(err, errlen, "--dir %s: %s", cfg->dir, strerror(errno));
		return NULL;
	}
	/* a directory that was there: its group and mode as --group says */
	if (gid != (gid_t)-1 && (chown(cfg->dir, (uid_t)-1, gid) || chmod(cfg->dir, 0750))) {
		set_err(err, errlen, "--dir %s: cannot give it to group %s: %s", cfg->dir,
			cfg->group, strerror(errno));
		return NULL;
	}
	if (!(d = calloc(1, sizeof(*d)))) {
		set_err(err, errlen, "out of memory");
		return NULL;
	}
	d->base.ops = &dir_ops;
	d->gid = gid;
	snprintf(d->dir, sizeof(d->dir), "%s", cfg->dir);
	dir_configure(&d->base, cfg);
	return &d->base;
}

static bool dir_asked(const struct daemon_cfg *c)
{
	return c->dir[0] != 0;
}

static bool dir_restart_differs(const struct daemon_cfg *now, const struct daemon_cfg *was)
{
	return !now->dir[0] != !was->dir[0];
}

static void dir_keep(struct daemon_cfg *now, const struct daemon_cfg *was)
{
	memcpy(now->dir, was->dir, sizeof(now->dir));
}

const struct sink_kind sink_dir_kind = {
	.option = "--dir DIR", .asked = dir_asked, .restart_differs = dir_restart_differs,
	.keep = dir_keep, .open = sink_dir_open,
};
