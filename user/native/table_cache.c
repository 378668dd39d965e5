/* table_cache.c - unwind tables kept between runs (table_cache.h).
 *
 * A file is a struct head, then the table's rows with the header's id 0.
 * Its name is "tab-" and a hash of the head's identity fields; the head
 * itself is compared whole, so a hash collision reads nothing wrong. */
#include "table_cache.h"
#include "elfsym.h"
#include "runcache.h"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

static char builder[48];
static pthread_once_t builder_once = PTHREAD_ONCE_INIT;

static void read_builder(void)
{
	char hex[128];

	/* no build-id: no way to tell builds apart, so nothing is kept */
	if (!elf_read_build_id("/proc/self/exe", hex, sizeof(hex)) && hex[0])
		snprintf(builder, sizeof(builder), "%.47s", hex);
}

/* the head of fd's binary (len and sum 0) and the file's name; false: none */
static bool identify(int fd, struct head *h, char *name, size_t len)
{
	struct stat st;

	pthread_once(&builder_once, read_builder);
	/* no links: a memfd (the vDSO's copy) or a deleted binary, which no
	 * later run can open again */
	if (!builder[0] || fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_nlink == 0)
		return false;
	memset(h, 0, sizeof(*h));
	memcpy(h->magic, MAGIC, 8);
	memcpy(h->builder, builder, sizeof(builder));
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

static bool read_all(int fd, void *buf, size_t len)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = read(fd, (char *)buf + done, len - done);

		if (n <= 0)
			return false;
		done += (size_t)n;
	}
	return true;
}

struct unwind_row *table_cache_get(int fd, uint32_t id, size_t *len)
{
	char name[32], path[64];
	struct head want, got;
	struct unwind_row *v = NULL;
	struct stat st;
	int cfd;

	if (!identify(fd, &want, name, sizeof(name)))
		return NULL;
	snprintf(path, sizeof(path), RUNCACHE_DIR "/%s", name);
	cfd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (cfd < 0)
		return NULL;
	if (fstat(cfd, &st) || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & 022) || (size_t)st.st_size < sizeof(got) ||
	    !read_all(cfd, &got, sizeof(got)) || got.len == 0 ||
	    got.len > TABLE_CACHE_MAX_ONE / sizeof(*v) ||
	    (size_t)st.st_size != sizeof(got) + got.len * sizeof(*v))
		goto out;
	want.len = got.len;
	want.sum = got.sum;
	if (memcmp(&want, &got, sizeof(got)) || !(v = malloc(got.len * sizeof(*v))))
		goto out;
	if (!read_all(cfd, v, got.len * sizeof(*v)) ||
	    runcache_hash(RUNCACHE_HASH0, v, got.len * sizeof(*v)) != got.sum || !sound(v, got.len)) {
		free(v);
		v = NULL;
		goto out;
	}
	v[0].pc = id;
	*len = got.len;
	futimens(cfd, NULL); /* its last use, for trimming */
out:
	close(cfd);
	return v;
}

/* Remove the least recently used tables until `more` bytes fit. */
static void trim(uint64_t more)
{
	struct kept { char name[32]; uint64_t size; struct timespec used; } *k = NULL;
	size_t n = 0, cap = 0;
	uint64_t total = more;
	DIR *d = opendir(RUNCACHE_DIR);
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d))) {
		struct stat st;

		if (strncmp(e->d_name, "tab-", 4) || strlen(e->d_name) >= sizeof(k->name) ||
		    fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode))
			continue;
		if (n == cap) {
			struct kept *nk = realloc(k, (cap = cap ? cap * 2 : 16) * sizeof(*k));

			if (!nk)
				break;
			k = nk;
		}
		snprintf(k[n].name, sizeof(k[n].name), "%s", e->d_name);
		k[n].size = (uint64_t)st.st_size;
		k[n].used = st.st_mtim;
		total += k[n++].size;
	}
	while (total > TABLE_CACHE_MAX_ALL && n) {
		size_t old = 0;

		for (size_t i = 1; i < n; i++)
			if (k[i].used.tv_sec < k[old].used.tv_sec ||
			    (k[i].used.tv_sec == k[old].used.tv_sec &&
			     k[i].used.tv_nsec < k[old].used.tv_nsec))
				old = i;
		unlinkat(dirfd(d), k[old].name, 0);
		total -= k[old].size;
		k[old] = k[--n];
	}
	closedir(d);
	free(k);
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
	trim(sizeof(h) + bytes);
	runcache_write(name, buf, sizeof(h) + bytes);
	free(buf);
}
