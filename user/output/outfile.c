/* outfile.c - output files written under a temporary name and renamed into
 * place when complete (see outfile.h). */
#include "outfile.h"
#include "errmsg.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* where a link to a file not there yet points (one level), else path */
static void dangling_target(const char *path, char *out, size_t len)
{
	char link[PATH_MAX], dir[PATH_MAX], joined[2 * PATH_MAX + 2];
	struct stat st;
	ssize_t n;

	snprintf(out, len, "%s", path);
	if (lstat(path, &st) || !S_ISLNK(st.st_mode))
		return;
	n = readlink(path, link, sizeof(link) - 1);
	if (n <= 0)
		return;
	link[n] = 0;
	snprintf(dir, sizeof(dir), "%s", path);
	if (link[0] == '/')
		snprintf(joined, sizeof(joined), "%s", link);
	else
		snprintf(joined, sizeof(joined), "%s/%s", dirname(dir), link);
	if (strlen(joined) < len)
		memcpy(out, joined, strlen(joined) + 1);
}

int outfile_open(struct outfile *o, const char *path, char *err, size_t errlen)
{
	return outfile_open_mode(o, path, 0644, err, errlen);
}

int outfile_open_mode(struct outfile *o, const char *path, mode_t mode, char *err,
		      size_t errlen)
{
	char dir[PATH_MAX];
	struct stat st;
	int fd;

	memset(o, 0, sizeof(*o));
	o->path = path;
	if (!path) {
		o->f = stdout;
		return 0;
	}
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
		set_err(err, errlen, "cannot write %s: %s", path, strerror(EISDIR));
		return -1;
	}
	if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
		o->direct = 1;
		o->f = fopen(path, "we");
		if (!o->f) {
			set_err(err, errlen, "cannot write %s: %s", path, strerror(errno));
			return -1;
		}
		return 0;
	}
	/* an existing file (through any links) is replaced where it really is */
	if (!realpath(path, o->real))
		dangling_target(path, o->real, sizeof(o->real));
	snprintf(dir, sizeof(dir), "%s", o->real);
	snprintf(o->tmp, sizeof(o->tmp), "%s/.pyperf-bpf.XXXXXX", dirname(dir));
	fd = mkostemp(o->tmp, O_CLOEXEC); /* a profiled command must not inherit it */
	if (fd < 0) {
		set_err(err, errlen, "cannot write %s: %s", path, strerror(errno));
		o->tmp[0] = 0;
		return -1;
	}
	fchmod(fd, mode);
	o->f = fdopen(fd, "w");
	if (!o->f) {
		set_err(err, errlen, "cannot write %s: %s", path, strerror(errno));
		close(fd);
		unlink(o->tmp);
		o->tmp[0] = 0;
		return -1;
	}
	return 0;
}

int outfile_commit(struct outfile *o, char *err, size_t errlen)
{
	int rc;

	if (o->f == stdout) {
		o->f = NULL;
		return fflush(stdout) ? -1 : 0;
	}
	rc = o->f ? fclose(o->f) : -1;
	o->f = NULL;
	if (o->direct) {
		if (rc == 0)
			return 0;
		set_err(err, errlen, "cannot write %s: %s", o->path, strerror(errno));
		return -1;
	}
	if (rc == 0 && rename(o->tmp, o->real) == 0) {
		o->tmp[0] = 0;
		return 0;
	}
	set_err(err, errlen, "cannot write %s: %s", o->path, strerror(errno));
	outfile_discard(o);
	return -1;
}

void outfile_discard(struct outfile *o)
{
	if (o->f && o->f != stdout)
		fclose(o->f);
	o->f = NULL;
	if (o->tmp[0])
		unlink(o->tmp);
	o->tmp[0] = 0;
}
