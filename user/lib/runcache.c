/* runcache.c - the directory of files kept between runs (runcache.h). */
#include "runcache.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
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
