/* table_cache.c - unwind tables kept between runs (table_cache.h).
 *
 * A file is a struct head, then the table's rows with the header's id 0.
 * Its name is "tab-" and a hash of the head's identity fields; the head
 * itself is compared whole, so a hash collision reads nothing wrong. */
#include "table_cache.h"
#include "runcache.h"

#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAGIC "pyperfT1"

struct head {
	char magic[8];
	char builder[48];            /* our own build-id, hex */
	uint64_t dev, ino, size;     /* the binary's */
	int64_t mtime_s, mtime_ns, ctime_s, ctime_ns;
	uint64_t len;                /* rows that follow */
	uint64_t sum;                /* of them */
};

/* the head of fd's binary (len and sum 0) and the file's name; false: none */
static bool identify(int fd, struct head *h, char *name, size_t len)
{
	const char *builder = runcache_builder();
	struct stat st;

	/* no links: a memfd (the vDSO's copy) or a deleted binary, which no
	 * later run can open again */
	if (!builder[0] || fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_nlink == 0)
		return false;
	memset(h, 0, sizeof(*h));
	memcpy(h->magic, MAGIC, 8);
	snprintf(h->builder, sizeof(h->builder), "%s", builder);
	h->dev = st.st_dev;
	h->ino = st.st_ino;
	h->size = (uint64_t)st.st_size;
	h->mtime_s = st.st_mtim.tv_sec;
	h->mtime_ns = st.st_mtim.tv_nsec;
	h->ctime_s = st.st_ctim.tv_sec;
	h->ctime_ns = st.st_ctim.tv_nsec;
	snprintf(name, len, "tab-%016llx.rows",
		 (unsigned long long)runcache_hash(RUNCACHE_HASH0, h, sizeof(*h)));
	return true;
}

/* does v[0..len) have the layout unwind_table_layout gives */
static bool sound(const struct unwind_row *v, size_t len)
{
	uint64_t nrows, npages;

	if (!len)
		return false;
	nrows = v[0].nrows;
	if (nrows == 0)
		return len == 1;
	if (nrows >= len - 1)
		return false;
	npages = v[1 + nrows].nrows & 0xffffff;
	if (len != 1 + nrows + 1 + (npages + 2) / 2)
		return false;
	for (uint64_t i = 2; i <= nrows; i++)
		if (v[i].pc <= v[i - 1].pc)
			return false;
	return true;
}

struct unwind_row *table_cache_get(int fd, uint32_t id, size_t *len)
{
	char name[32], path[64];
	struct head want, got;
	struct unwind_row *v = NULL;
	struct stat st;
	char *file = NULL;
	size_t size = 0;
	int cfd;

	_Static_assert(sizeof(struct head) % _Alignof(struct unwind_row) == 0,
		       "the rows follow the head aligned");
	if (!identify(fd, &want, name, sizeof(name)))
		return NULL;
	snprintf(path, sizeof(path), RUNCACHE_DIR "/%s", name);
	cfd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (cfd < 0)
		return NULL;
	if (fstat(cfd, &st) || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & 022) || (size_t)st.st_size < sizeof(got) ||
	    (size_t)st.st_size > sizeof(got) + TABLE_CACHE_MAX_ONE ||
	    !(file = runcache_map(cfd, size = (size_t)st.st_size)))
		goto out;
	memcpy(&got, file, sizeof(got));
	if (got.len == 0 || got.len > TABLE_CACHE_MAX_ONE / sizeof(*v) ||
	    size != sizeof(got) + got.len * sizeof(*v))
		goto out;
	want.len = got.len;
	want.sum = got.sum;
	v = (struct unwind_row *)(void *)(file + sizeof(got));
	/* the header row takes the id: that page alone is copied, privately */
	if (memcmp(&want, &got, sizeof(got)) ||
	    runcache_hash(RUNCACHE_HASH0, v, got.len * sizeof(*v)) != got.sum || !sound(v, got.len) ||
	    mprotect(file, sizeof(got) + sizeof(*v), PROT_READ | PROT_WRITE)) {
		v = NULL;
		goto out;
	}
	v[0].pc = id;
	*len = got.len;
	futimens(cfd, NULL); /* its last use, for trimming */
out:
	if (!v)
		runcache_unmap(file, size);
	close(cfd);
	return v;
}

void table_cache_release(struct unwind_row *v, size_t len)
{
	if (v)
		runcache_unmap((char *)v - sizeof(struct head), sizeof(struct head) + len * sizeof(*v));
}

void table_cache_put(int fd, const struct unwind_row *v, size_t len)
{
	char name[32];
	struct head h;
	size_t bytes = len * sizeof(*v);
	char *buf;

	if (!len || bytes > TABLE_CACHE_MAX_ONE || !identify(fd, &h, name, sizeof(name)) ||
	    !runcache_ready() /* before trim removes anything there */ ||
	    !(buf = malloc(sizeof(h) + bytes)))
		return;
	memcpy(buf + sizeof(h), v, bytes);
	((struct unwind_row *)(void *)(buf + sizeof(h)))[0].pc = 0;
	h.len = len;
	h.sum = runcache_hash(RUNCACHE_HASH0, buf + sizeof(h), bytes);
	memcpy(buf, &h, sizeof(h));
	runcache_trim("tab-", TABLE_CACHE_MAX_ALL, sizeof(h) + bytes);
	runcache_write(name, buf, sizeof(h) + bytes);
	free(buf);
}
