/* waits.c - the fds a session's loop sleeps on besides the ring buffer
 * (waits.h says why) */
#include "waits.h"

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

/* an fd that poll finds readable when pid has exited (a zombie counts);
 * close-on-exec, as pidfd_open makes every one.  -1: none (a kernel before
 * 5.3, or pid gone already). */
static int pidfd_of(pid_t pid)
{
#ifdef SYS_pidfd_open
	return (int)syscall(SYS_pidfd_open, pid, 0);
#else
	(void)pid;
	errno = ENOSYS;
	return -1;
#endif
}

void waits_init(struct waits *w, int wake_fd, pid_t child, const int *pids, size_t npids)
{
	w->nfds = 2 + (npids < WAITS_PIDFDS_MAX ? npids : WAITS_PIDFDS_MAX);
	w->fds = calloc(w->nfds, sizeof(*w->fds));
	w->ended = calloc(npids ? npids : 1, sizeof(*w->ended));
	w->pids = pids;
	w->npids = npids;
	w->child_polled = false;
	if (!w->fds || !w->ended) {
		free(w->fds);
		free(w->ended);
		w->fds = NULL;
		w->ended = NULL;
		w->nfds = 0;
		return;
	}
	for (size_t i = 0; i < w->nfds; i++) {
		w->fds[i].fd = -1;
		w->fds[i].events = POLLIN;
	}
	w->fds[0].fd = wake_fd;
	if (child > 0)
		w->fds[1].fd = pidfd_of(child);
	w->child_polled = child > 0 && w->fds[1].fd < 0;
	for (size_t i = 0; i < npids && i < WAITS_PIDFDS_MAX; i++)
		w->fds[2 + i].fd = pidfd_of(pids[i]);
}

bool waits_polled(const struct waits *w)
{
	if (!w->fds)
		return true;
	if (w->child_polled)
		return true;
	for (size_t i = 0; i < w->npids; i++)
		if (!w->ended[i] && (i >= WAITS_PIDFDS_MAX || w->fds[2 + i].fd < 0))
			return true;
	return false;
}

void waits_after_poll(struct waits *w)
{
	if (!w->fds)
		return;
	if (w->fds[0].fd >= 0 && (w->fds[0].revents & POLLIN)) {
		uint64_t v;

		(void)!read(w->fds[0].fd, &v, sizeof(v)); /* nonblocking */
	}
	/* the command's pidfd stays: it is readable until the loop reaps the
	 * command, and the loop ends then */
	for (size_t i = 0; i < w->npids && i < WAITS_PIDFDS_MAX; i++) {
		struct pollfd *p = &w->fds[2 + i];

		if (p->fd >= 0 && (p->revents & (POLLIN | POLLHUP | POLLERR))) {
			close(p->fd);
			p->fd = -1;
			w->ended[i] = true;
		}
	}
}

bool waits_any_target_alive(const struct waits *w)
{
	for (size_t i = 0; i < w->npids; i++) {
		if (w->fds && w->ended[i])
			continue;
		if ((w->fds && i < WAITS_PIDFDS_MAX && w->fds[2 + i].fd >= 0) ||
		    kill(w->pids[i], 0) == 0 || errno != ESRCH)
			return true;
	}
	return false;
}

void waits_free(struct waits *w)
{
	for (size_t i = 1; w->fds && i < w->nfds; i++)
		if (w->fds[i].fd >= 0)
			close(w->fds[i].fd);
	free(w->fds);
	free(w->ended);
	w->fds = NULL;
	w->ended = NULL;
}
