/* jitdump.c - code loads from a JIT's jitdump file (see jitdump.h). */
#include "jitdump.h"
#include "errmsg.h"
#include "procmaps.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAGIC 0x4A695444u        /* "JiTD" as the writer's u32 */
#define HEADER_MIN 40u
#define REC_HEADER 16u
#define LOAD_FIXED 40u           /* pid, tid, vma, code_addr, code_size, code_index */
#define MOVE_FIXED 48u           /* pid, tid, vma, old, new, code_size, code_index */
#define CODE_LOAD 0
#define CODE_MOVE 1
#define CHUNK (1u << 20)

static uint32_t u32_at(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static uint64_t u64_at(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* a move: the symbol loaded at old, copied to new */
static void code_moved(struct perfmap *m, uint64_t old, uint64_t new, uint64_t size)
{
	for (size_t i = m->n; i-- > 0;)
		if (m->v[i].start == old) {
			char *name = m->v[i].name;

			perfmap_add(m, new, size, name, strlen(name));
			return;
		}
}

int jitdump_parse(struct perfmap *m, const uint8_t *buf, size_t len, uint64_t at,
		  uint64_t file_size, uint64_t *next)
{
	size_t p = 0;

	*next = at;
	if (at == 0) {
		uint32_t hsize;

		if (len < HEADER_MIN)
			return 0; /* not all written yet */
		if (u32_at(buf) != MAGIC || u32_at(buf + 4) != 1)
			return -1; /* another version, or the other byte order */
		hsize = u32_at(buf + 8);
		if (hsize < HEADER_MIN || hsize > CHUNK)
			return -1;
		if (hsize > len)
			return 0;
		p = hsize;
	}
	while (len - p >= REC_HEADER) {
		uint32_t id = u32_at(buf + p), size = u32_at(buf + p + 4);
		const uint8_t *body = buf + p + REC_HEADER;
		size_t have = len - p - REC_HEADER;

		if (size < REC_HEADER)
			break; /* a broken record: nothing after it can be found */
		if (at + p + size > file_size)
			break; /* not all written yet */
		if (id == CODE_LOAD) {
			const uint8_t *name = body + LOAD_FIXED, *nul;
			size_t room = size - REC_HEADER;

			if (room < LOAD_FIXED + 1)
				goto skip;
			room -= LOAD_FIXED;
			if (have < LOAD_FIXED + 1)
				break; /* fixed fields past buf: read again from here */
			have -= LOAD_FIXED;
			nul = memchr(name, 0, room < have ? room : have);
			if (!nul) {
				if (have < room && p > 0)
					break; /* the name goes on past buf: read again from here */
				goto skip; /* no NUL in the record, or a name longer than a read */
			}
			perfmap_add(m, u64_at(body + 16), u64_at(body + 24), (const char *)name,
				    (size_t)(nul - name));
		} else if (id == CODE_MOVE) {
			if (size - REC_HEADER < MOVE_FIXED)
				goto skip;
			if (have < MOVE_FIXED)
				break;
			code_moved(m, u64_at(body + 16), u64_at(body + 24), u64_at(body + 32));
		}
skip:
		p += size;
		if (p > len) { /* its code bytes go on past buf */
			*next = at + p;
			return 0;
		}
	}
	*next = at + p;
	return 0;
}

/* the mapping of pid named `want`, opened as the process maps it */
static int open_mapped(int pid, const char *want, char *why, size_t whylen)
{
	struct proc_maps maps = { 0 };
	char path[PATH_MAX + 32], err[256];
	int fd = -1;

	if (procmaps_read(pid, &maps, err, sizeof(err)))
		return -2; /* gone */
	for (size_t i = 0; i < maps.n; i++) {
		const struct proc_map *mp = &maps.v[i];

		if (!mp->path || mp->path[0] != '/' || strcmp(procmaps_basename(mp), want))
			continue;
		if (procmaps_file_path(pid, mp, path, sizeof(path)))
			fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0)
			set_err(why, whylen, "%s: %s", mp->path, strerror(errno));
		break;
	}
	procmaps_free(&maps);
	return fd;
}

int jitdump_read(struct perfmap *m, int pid, char *why, size_t whylen)
{
	char name[32];
	uint8_t *buf = NULL;
	uint64_t at, size;
	size_t n0;
	int fd, rc;

	*why = '\0';
	/* named by the pid the process knows itself by (inside a container,
	 * its namespace's) */
	snprintf(name, sizeof(name), "jit-%d.dump", procmaps_ns_pid(pid));
	fd = open_mapped(pid, name, why, whylen);
	if (fd < 0)
		return fd == -1 && *why ? -1 : 0;
	if ((rc = perfmap_take_file(m, fd, pid, name, JITDUMP_MAX_BYTES, &size, why, whylen)) <= 0)
		return rc;
	n0 = m->n; /* after a start over, none */
	at = m->read_to;
	if (size > at)
		buf = malloc(CHUNK);
	while (buf && at < size) {
		size_t want = size - at < CHUNK ? (size_t)(size - at) : CHUNK;
		ssize_t got = pread(fd, buf, want, (off_t)at);
		uint64_t next;

		if (got <= 0)
			break;
		if (jitdump_parse(m, buf, (size_t)got, at, size, &next)) {
			set_err(why, whylen, "jit-%d.dump: not a jitdump file (version 1, this "
				"machine's byte order)", pid);
			free(buf);
			close(fd);
			return -1;
		}
		if (next == at)
			break; /* the next record is not all there yet */
		at = next;
	}
	m->read_to = at;
	free(buf);
	close(fd);
	if (m->n == n0)
		return 0;
	perfmap_sort(m);
	return 1;
}
