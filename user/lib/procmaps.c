/* procmaps.c - parse /proc/PID/maps into struct proc_maps.
 *
 * How it works: the file is read line by line with getline().  Each line is
 *
 *   start-end perms offset major:minor inode          [path]
 *
 * with the numbers in hex except the inode.  The fixed fields are read with
 * sscanf; everything after the whitespace that follows the inode is the path,
 * taken verbatim up to the newline (so paths with spaces survive).  A trailing
 * " (deleted)" is stripped and recorded in `deleted`.  The kernel escapes a
 * newline inside a path as "\012"; such paths are kept escaped, as printed.
 *
 * The array grows by doubling.  Errors are reported as -1 with errno set and
 * a one-line message naming the pid and file in the caller's buffer.
 * procmaps_parse reads text already in memory through the same line reader
 * (fmemopen), so what the fuzzer exercises is what reads the real file. */
#include "procmaps.h"
#include "errmsg.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DELETED_SUFFIX " (deleted)"


/* Copy of the path part of a maps line (NULL when there is none), with a
 * trailing newline and " (deleted)" removed; *deleted says whether the latter
 * was there.  Sets errno ENOMEM and returns NULL on allocation failure, so
 * the caller tells the two NULLs apart by *oom. */
static char *path_from_tail(const char *tail, bool *deleted, bool *oom)
{
	size_t len, sfx = strlen(DELETED_SUFFIX);
	char *path;

	*deleted = false;
	*oom = false;
	while (*tail == ' ' || *tail == '\t')
		tail++;
	len = strcspn(tail, "\n");
	if (len == 0)
		return NULL;
	if (len > sfx && memcmp(tail + len - sfx, DELETED_SUFFIX, sfx) == 0) {
		len -= sfx;
		*deleted = true;
	}
	path = strndup(tail, len);
	if (!path)
		*oom = true;
	return path;
}

/* 0 when `line` parsed into *map, -1 for a malformed line, -2 when out of
 * memory. */
static int parse_line(const char *line, struct proc_map *map)
{
	int tail = 0;
	bool oom;

	memset(map, 0, sizeof(*map));
	if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %4s %" SCNx64 " %" SCNx32 ":%" SCNx32
		   " %" SCNu64 "%n",
		   &map->start, &map->end, map->perms, &map->offset, &map->dev_major,
		   &map->dev_minor, &map->inode, &tail) != 7 || tail == 0)
		return -1;
	if (line[tail] != ' ' && line[tail] != '\n' && line[tail] != '\0')
		return -1;
	map->path = path_from_tail(line + tail, &map->deleted, &oom);
	return oom ? -2 : 0;
}

/* Make room for one more entry; 0 or -1 (ENOMEM). */
static int grow(struct proc_maps *m, size_t *cap)
{
	size_t ncap;
	struct proc_map *nv;

	if (m->n < *cap)
		return 0;
	ncap = *cap ? *cap * 2 : 64;
	nv = realloc(m->v, ncap * sizeof(*nv));
	if (!nv)
		return -1;
	m->v = nv;
	*cap = ncap;
	return 0;
}

/* Open /proc/PID/maps, turning "no such file" into ESRCH. */
static FILE *open_maps(int pid, char *err, size_t errlen)
{
	char fn[64];
	FILE *f;

	if (pid <= 0) {
		set_err(err, errlen, "pid %d: invalid pid", pid);
		errno = EINVAL;
		return NULL;
	}
	snprintf(fn, sizeof(fn), "/proc/%d/maps", pid);
	f = fopen(fn, "re");
	if (f)
		return f;
	if (errno == ENOENT || errno == ESRCH) {
		set_err(err, errlen, "pid %d: no such process (cannot open %s)", pid, fn);
		errno = ESRCH;
	} else {
		int e = errno;

		set_err(err, errlen, "pid %d: cannot open %s: %s", pid, fn, strerror(e));
		errno = e;
	}
	return NULL;
}

/* Read every line of `f` into `out`; 0 or -1 with errno and message set.
 * `what` names the text in messages ("pid 42: /proc/42/maps"). */
static int read_lines(const char *what, FILE *f, struct proc_maps *out, char *err,
		      size_t errlen)
{
	char *line = NULL;
	size_t linecap = 0, cap = 0, lineno = 0;
	int rc = 0, e = 0;

	while (getline(&line, &linecap, f) >= 0) {
		lineno++;
		if (grow(out, &cap) < 0) {
			rc = -2;
			break;
		}
		rc = parse_line(line, &out->v[out->n]);
		if (rc < 0)
			break;
		out->n++;
	}
	if (rc == 0 && ferror(f)) {
		e = errno == ENOENT ? ESRCH : errno;
		set_err(err, errlen, "%s: reading: %s", what,
			e == ESRCH ? "no such process" : strerror(e));
		rc = -1;
	} else if (rc == -1) {
		e = EINVAL;
		set_err(err, errlen, "%s line %zu: cannot parse", what, lineno);
	} else if (rc == -2) {
		e = ENOMEM;
		set_err(err, errlen, "%s: out of memory", what);
		rc = -1;
	}
	free(line);
	errno = e;
	return rc;
}

/* Lines of `f` into `out`, which is emptied on failure. */
static int read_all(const char *what, FILE *f, struct proc_maps *out, char *err, size_t errlen)
{
	int rc = read_lines(what, f, out, err, errlen), e = errno;

	fclose(f);
	if (rc < 0) {
		procmaps_free(out);
		errno = e;
		return -1;
	}
	return 0;
}

int procmaps_read(int pid, struct proc_maps *out, char *err, size_t errlen)
{
	char what[64];
	FILE *f;

	out->v = NULL;
	out->n = 0;
	f = open_maps(pid, err, errlen);
	if (!f)
		return -1;
	snprintf(what, sizeof(what), "pid %d: /proc/%d/maps", pid, pid);
	return read_all(what, f, out, err, errlen);
}

int procmaps_parse(const char *text, size_t len, struct proc_maps *out, char *err,
		   size_t errlen)
{
	FILE *f;

	out->v = NULL;
	out->n = 0;
	if (!len)
		return 0; /* fmemopen refuses an empty buffer */
	f = fmemopen((void *)text, len, "r");
	if (!f) {
		int e = errno;

		set_err(err, errlen, "maps text: %s", strerror(e));
		errno = e;
		return -1;
	}
	return read_all("maps text", f, out, err, errlen);
}

void procmaps_free(struct proc_maps *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->n; i++)
		free(m->v[i].path);
	free(m->v);
	m->v = NULL;
	m->n = 0;
}

char *procmaps_host_path(int pid, const char *path, char *buf, size_t len)
{
	int n;

	if (!path || path[0] != '/' || !buf) {
		errno = EINVAL;
		return NULL;
	}
	n = snprintf(buf, len, "/proc/%d/root%s", pid, path);
	if (n < 0 || (size_t)n >= len) {
		errno = ENAMETOOLONG;
		return NULL;
	}
	return buf;
}

char *procmaps_file_path(int pid, const struct proc_map *m, char *buf, size_t len)
{
	int n;

	if (!m || !buf) {
		errno = EINVAL;
		return NULL;
	}
	n = snprintf(buf, len, "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, pid, m->start, m->end);
	if (n > 0 && (size_t)n < len && access(buf, F_OK) == 0)
		return buf;
	if (!procmaps_host_path(pid, m->path, buf, len))
		return NULL;
	return access(buf, F_OK) == 0 ? buf : NULL;
}

/* fields of /proc/PID/stat, counted from 1 as proc(5) does: startcode,
 * endcode, startstack; start_data .. env_end (Linux 3.5) */
static const int image_fields[] = { 26, 27, 28, 45, 46, 47, 48, 49, 50, 51 };

int procmaps_image(int pid, struct proc_image *out)
{
	char path[64], buf[1024];
	const char *p;
	ssize_t n;
	int fd, field = 3; /* the one after ") " */
	size_t k = 0;
	bool any = false;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	p = strrchr(buf, ')'); /* comm may hold spaces and parentheses */
	if (!p || p[1] != ' ') {
		errno = EINVAL;
		return -1;
	}
	memset(out, 0, sizeof(*out));
	for (p += 2; *p && k < sizeof(image_fields) / sizeof(image_fields[0]); field++) {
		if (field == image_fields[k]) {
			out->v[k] = strtoull(p, NULL, 10);
			any |= out->v[k] != 0;
			k++;
		}
		p = strchr(p, ' ');
		if (!p)
			break;
		p++;
	}
	if (k < sizeof(image_fields) / sizeof(image_fields[0]) || !any) {
		errno = ESRCH; /* a zombie's (no memory) reads all zero */
		return -1;
	}
	return 0;
}

bool procmaps_same_image(int pid, const struct proc_image *was)
{
	struct proc_image now;

	return procmaps_image(pid, &now) == 0 && !memcmp(&now, was, sizeof(now));
}

int procmaps_ns_pid(int pid)
{
	char path[64], line[256];
	int ns = pid;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "re");
	if (!f)
		return pid;
	while (fgets(line, sizeof(line), f)) {
		char *p = line + 6, *end;

		if (strncmp(line, "NSpid:", 6))
			continue;
		/* one pid per level, the host's first, the innermost last */
		for (long v; (v = strtol(p, &end, 10)), end != p; p = end)
			if (v > 0 && v <= INT32_MAX)
				ns = (int)v;
		break;
	}
	fclose(f);
	return ns;
}

const char *procmaps_basename(const struct proc_map *map)
{
	const char *slash;

	if (!map->path)
		return "";
	slash = strrchr(map->path, '/');
	return slash ? slash + 1 : map->path;
}

const struct proc_map *procmaps_first_basename_match(
	const struct proc_maps *m, bool (*pred)(const char *basename, void *arg),
	void *arg)
{
	for (size_t i = 0; i < m->n; i++) {
		const struct proc_map *map = &m->v[i];

		if (map->path && map->path[0] == '/' && pred(procmaps_basename(map), arg))
			return map;
	}
	return NULL;
}

static bool has_prefix(const char *basename, void *prefix)
{
	const char *p = prefix;

	return strncmp(basename, p, strlen(p)) == 0;
}

const struct proc_map *procmaps_first_basename_prefix(const struct proc_maps *m,
						      const char *prefix)
{
	return procmaps_first_basename_match(m, has_prefix, (void *)prefix);
}
