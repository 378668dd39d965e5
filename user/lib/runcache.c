/* runcache.c - the directory of files kept between runs (runcache.h). */
#include "runcache.h"
#include "elfsym.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

bool runcache_ready(void)
{
	struct stat st;

	if (mkdir(RUNCACHE_DIR, 0700) && errno != EEXIST)
		return false;
	return !lstat(RUNCACHE_DIR, &st) && S_ISDIR(st.st_mode) && st.st_uid == geteuid() &&
	       !(st.st_mode & 022);
}

int runcache_write(const char *name, const void *data, size_t len)
{
	char path[PATH_MAX], tmp[PATH_MAX + 32];
	const char *p = data;
	size_t done = 0;
	int fd;

	if (!runcache_ready() ||
	    snprintf(path, sizeof(path), RUNCACHE_DIR "/%s", name) >= (int)sizeof(path))
		return -1;
	/* per thread: two table workers may write at once */
	snprintf(tmp, sizeof(tmp), "%s.%d.tmp", path, (int)gettid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return -1;
	while (done < len) {
		ssize_t n = write(fd, p + done, len - done);

		if (n <= 0) {
			if (n < 0 && errno == EINTR)
				continue;
			break;
		}
		done += (size_t)n;
	}
	if (close(fd) || done != len || rename(tmp, path)) {
		unlink(tmp);
		return -1;
	}
	return 0;
}

uint64_t runcache_hash(uint64_t h, const void *p, size_t n)
{
	const unsigned char *c = p;
	size_t i = 0;

	for (; i + 8 <= n; i += 8) {
		uint64_t w;

		memcpy(&w, c + i, 8);
		h = (h ^ w) * 1099511628211ull;
	}
	for (; i < n; i++)
		h = (h ^ c[i]) * 1099511628211ull;
	return h;
}

void *runcache_map(int fd, size_t len)
{
	void *p = len ? mmap(NULL, len, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0) : MAP_FAILED;

	return p == MAP_FAILED ? NULL : p;
}

void runcache_unmap(void *p, size_t len)
{
	if (p)
		munmap(p, len);
}

static char builder[48];
static pthread_once_t builder_once = PTHREAD_ONCE_INIT;

static void read_builder(void)
{
	char hex[128];

	if (!elf_read_build_id("/proc/self/exe", hex, sizeof(hex)) && hex[0])
		snprintf(builder, sizeof(builder), "%.47s", hex);
}

const char *runcache_builder(void)
{
	pthread_once(&builder_once, read_builder);
	return builder;
}

void runcache_trim(const char *prefix, uint64_t max_all, uint64_t more)
{
	struct kept { char name[64]; uint64_t size; struct timespec used; } *k = NULL;
	size_t n = 0, cap = 0, plen = strlen(prefix);
	uint64_t total = more;
	DIR *d = opendir(RUNCACHE_DIR);
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d))) {
		struct stat st;

		if (strncmp(e->d_name, prefix, plen) || strlen(e->d_name) >= sizeof(k->name) ||
		    fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode))
			continue;
		if (n == cap) {
			struct kept *nk = realloc(k, (cap = cap ? cap * 2 : 16) * sizeof(*k));

			if (!nk)
				break;
			k = nk;
		}
		memcpy(k[n].name, e->d_name, strlen(e->d_name) + 1);
		k[n].size = (uint64_t)st.st_size;
		k[n].used = st.st_mtim;
		total += k[n++].size;
	}
	while (total > max_all && n) {
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
