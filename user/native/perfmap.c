/* perfmap.c - /tmp/perf-PID.map, read safely and incrementally (see
 * perfmap.h). */
#include "perfmap.h"
#include "errmsg.h"
#include "procmaps.h"

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CHUNK (1u << 20)         /* read this much at a time */

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = (char)(c | 0x20);
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* a hex number (optionally 0x) at *p, then at least one blank; false if
 * none or longer than 16 digits */
static bool hex_field(const char **p, const char *end, uint64_t *out)
{
	const char *s = *p;
	uint64_t v = 0;
	int n = 0, d;

	if (end - s > 2 && s[0] == '0' && (s[1] | 0x20) == 'x')
		s += 2;
	while (s < end && (d = hexval(*s)) >= 0) {
		if (++n > 16)
			return false;
		v = v << 4 | (uint64_t)d;
		s++;
	}
	if (!n || s == end || (*s != ' ' && *s != '\t'))
		return false;
	while (s < end && (*s == ' ' || *s == '\t'))
		s++;
	*out = v;
	*p = s;
	return true;
}

void perfmap_add(struct perfmap *m, uint64_t start, uint64_t size, const char *name, size_t len)
{
	bool cut = len > PERFMAP_MAX_NAME;
	char *s;

	if (!len || start + size < start)
		return;
	if (m->n == m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 64;
		struct jit_sym *v = realloc(m->v, cap * sizeof(*v));

		if (!v)
			return;
		m->v = v;
		m->cap = cap;
	}
	if (cut)
		len = PERFMAP_MAX_NAME;
	s = malloc(len + (cut ? 4 : 1));
	if (!s)
		return;
	memcpy(s, name, len);
	if (cut)
		memcpy(s + len, "...", 3);
	s[len + (cut ? 3 : 0)] = 0;
	/* no control bytes in a frame name; all len of them, as a NUL would
	 * otherwise cut the name short or leave it empty */
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)s[i] < 0x20)
			s[i] = '?';
	m->v[m->n].start = start;
	m->v[m->n].end = start + size;
	m->v[m->n++].name = s;
}

size_t perfmap_parse(struct perfmap *m, const char *buf, size_t len)
{
	const char *p = buf, *end = buf + len;

	for (;;) {
		const char *nl = memchr(p, '\n', (size_t)(end - p)), *s = p, *e;
		uint64_t start, size;

		if (!nl)
			break;
		e = nl;
		if (e > s && e[-1] == '\r')
			e--;
		if (hex_field(&s, e, &start) && hex_field(&s, e, &size))
			perfmap_add(m, start, size, s, (size_t)(e - s));
		p = nl + 1;
	}
	return (size_t)(p - buf);
}

static int cmp_sym(const void *a, const void *b)
{
	const struct jit_sym *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

void perfmap_sort(struct perfmap *m)
{
	if (m->n)
		qsort(m->v, m->n, sizeof(*m->v), cmp_sym);
}

static void clear(struct perfmap *m)
{
	for (size_t i = 0; i < m->n; i++)
		free(m->v[i].name);
	m->n = 0;
	m->read_to = 0;
	m->ino = 0;
}

void perfmap_free(struct perfmap *m)
{
	clear(m);
	free(m->v);
	memset(m, 0, sizeof(*m));
}

int perfmap_take_file(struct perfmap *m, int fd, int pid, const char *name, uint64_t max,
		      uint64_t *size, char *why, size_t whylen)
{
	char path[32];
	struct stat st, owner;

	snprintf(path, sizeof(path), "/proc/%d", pid); /* owned by the process's uid */
	if (stat(path, &owner) || fstat(fd, &st)) { /* the process is gone */
		close(fd);
		return 0;
	}
	if (!S_ISREG(st.st_mode))
		set_err(why, whylen, "%s: not a regular file", name);
	else if (st.st_uid != owner.st_uid)
		set_err(why, whylen, "%s: owned by uid %u, not the process's uid %u", name,
			(unsigned)st.st_uid, (unsigned)owner.st_uid);
	else if ((uint64_t)st.st_size > max)
		set_err(why, whylen, "%s: %llu bytes, more than the %llu MB read", name,
			(unsigned long long)st.st_size, (unsigned long long)(max >> 20));
	else {
		if ((uint64_t)st.st_ino != m->ino || (uint64_t)st.st_size < m->read_to) {
			clear(m); /* another file, or cut short: start over */
			m->ino = (uint64_t)st.st_ino;
		}
		*size = (uint64_t)st.st_size;
		return 1;
	}
	close(fd);
	return -1;
}

int perfmap_read(struct perfmap *m, int pid, char *why, size_t whylen)
{
	char path[128], name[40], *buf;
	uint64_t at, size;
	size_t n0;
	int fd, rc;

	/* named by the pid the process knows itself by (inside a container,
	 * its namespace's), in its own /tmp */
	int ns = procmaps_ns_pid(pid);

	snprintf(path, sizeof(path), "/proc/%d/root/tmp/perf-%d.map", pid, ns);
	/* a symlink is refused (ELOOP), a FIFO does not block the open */
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT)
			return 0;
		set_err(why, whylen, "/tmp/perf-%d.map: %s", ns,
			errno == ELOOP ? "a symbolic link" : strerror(errno));
		return -1;
	}
	snprintf(name, sizeof(name), "/tmp/perf-%d.map", ns);
	if ((rc = perfmap_take_file(m, fd, pid, name, PERFMAP_MAX_BYTES, &size, why, whylen)) <= 0)
		return rc;
	n0 = m->n; /* after a start over, none */
	buf = size > m->read_to ? malloc(CHUNK) : NULL;
	at = m->read_to;
	while (buf && at < size) {
		size_t want = size - at < CHUNK ? (size_t)(size - at) : CHUNK;
		ssize_t got = pread(fd, buf, want, (off_t)at);
		size_t used;

		if (got <= 0)
			break;
		used = perfmap_parse(m, buf, (size_t)got);
		if (!used) {
			if ((size_t)got < CHUNK)
				break; /* a line still being written */
			used = (size_t)got; /* a line longer than CHUNK: skipped */
			while (at + used < size) { /* to its end */
				ssize_t more = pread(fd, buf, CHUNK, (off_t)(at + used));
				const char *nl = more > 0 ? memchr(buf, '\n', (size_t)more) : NULL;

				if (more <= 0)
					break;
				if (nl) {
					used += (size_t)(nl - buf) + 1;
					break;
				}
				used += (size_t)more;
			}
		}
		at += used;
	}
	m->read_to = at;
	free(buf);
	close(fd);
	if (m->n == n0)
		return 0;
	perfmap_sort(m);
	return 1;
}

const struct jit_sym *perfmap_find(const struct perfmap *m, uint64_t pc)
{
	size_t lo = 0, hi = m->n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (m->v[mid].start <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo && pc < m->v[lo - 1].end ? &m->v[lo - 1] : NULL;
}
