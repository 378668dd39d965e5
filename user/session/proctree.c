/* proctree.c - a command's process tree, from /proc (see proctree.h). */
#include "proctree.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

struct proc {
	pid_t pid, ppid;
	char state;
};

/* every process's parent and state; *n of them (malloc'd, NULL: none) */
static struct proc *read_all(size_t *n)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	struct proc *v = NULL;
	size_t cap = 0;

	*n = 0;
	if (!d)
		return NULL;
	while ((e = readdir(d))) {
		char path[64], buf[512], *close_paren;
		int fd;
		ssize_t got;
		struct proc p;

		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%.20s/stat", e->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		got = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (got <= 0)
			continue;
		buf[got] = '\0';
		/* "pid (comm) S ppid ...": comm may hold spaces and parentheses */
		close_paren = strrchr(buf, ')');
		if (!close_paren || sscanf(close_paren + 1, " %c %d", &p.state, &p.ppid) != 2)
			continue;
		p.pid = (pid_t)atoi(buf);
		if (*n == cap) {
			size_t c = cap ? 2 * cap : 1024;
			struct proc *w = realloc(v, c * sizeof(*w));

			if (!w)
				break;
			v = w;
			cap = c;
		}
		v[(*n)++] = p;
	}
	closedir(d);
	return v;
}

/* one of our own debuginfod helpers (dbgfetch.c): this program's
 * debuginfod-fetch, or the static build's debuginfod-find? */
static bool is_helper(pid_t pid)
{
	static const char dyn[] = "pyperf-bpf\0debuginfod-fetch";
	static const char stat[] = "debuginfod-find\0debuginfo";
	char path[64], buf[sizeof(dyn) > sizeof(stat) ? sizeof(dyn) : sizeof(stat)];
	int fd;
	ssize_t got;

	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	got = read(fd, buf, sizeof(buf));
	close(fd);
	return (got >= (ssize_t)sizeof(dyn) && !memcmp(buf, dyn, sizeof(dyn))) ||
	       (got >= (ssize_t)sizeof(stat) && !memcmp(buf, stat, sizeof(stat)));
}

int proctree_members(pid_t self, pid_t root, pid_t *out, int max)
{
	size_t n;
	struct proc *v = read_all(&n);
	bool *in = v ? calloc(n, sizeof(*in)) : NULL;
	bool grew = true;
	int k = 0;

	if (!in) {
		free(v);
		return 0;
	}
	for (size_t i = 0; i < n; i++)
		in[i] = v[i].pid == root ||
			(v[i].ppid == self && v[i].state != 'Z' && !is_helper(v[i].pid));
	while (grew) { /* children of members, until no more */
		grew = false;
		for (size_t i = 0; i < n; i++) {
			if (in[i])
				continue;
			for (size_t j = 0; j < n; j++)
				if (in[j] && v[j].pid == v[i].ppid) {
					in[i] = grew = true;
					break;
				}
		}
	}
	for (size_t i = 0; i < n && k < max; i++)
		if (in[i] && v[i].state != 'Z' && v[i].state != 'X')
			out[k++] = v[i].pid;
	free(in);
	free(v);
	return k;
}

void proctree_reap(pid_t self, pid_t root)
{
	size_t n;
	struct proc *v = read_all(&n);

	for (size_t i = 0; i < n; i++)
		if (v[i].ppid == self && v[i].state == 'Z' && v[i].pid != root)
			(void)waitpid(v[i].pid, NULL, WNOHANG);
	free(v);
}
