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

int outfile_open(struct outfile *o, const char *path, char *err, size_t errlen)
{
	char dir[PATH_MAX];
	int fd;

	memset(o, 0, sizeof(*o));
	o->path = path;
	if (!path) {
		o->f = stdout;
		return 0;
	}
	snprintf(dir, sizeof(dir), "%s", path);
	snprintf(o->tmp, sizeof(o->tmp), "%s/.pyperf-bpf.XXXXXX", dirname(dir));
	fd = mkostemp(o->tmp, O_CLOEXEC); /* a profiled command must not inherit it */
	if (fd < 0) {
		set_err(err, errlen, "cannot write %s: %s", path, strerror(errno));
		o->tmp[0] = 0;
		return -1;
	}
	fchmod(fd, 0644);
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
	if (rc == 0 && rename(o->tmp, o->path) == 0) {
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
