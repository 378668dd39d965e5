/* waits.h - what a session's loop sleeps on besides the ring buffer: the
 * native worker's eventfd, and the end of the command and of each -p
 * process, each as a pidfd (pidfd_open, Linux 5.3) that poll finds
 * readable once the process has exited.  With those the loop sleeps until
 * its next task is due (a drain, the thread names, the end of -d) instead
 * of waking every POLL_MS to ask whether the processes still run: a woken
 * loop costs a context switch and a few syscalls, most of what an idle
 * recording or daemon spends.  A process whose pidfd cannot be had is
 * looked at as before, with kill(pid, 0), and the loop then wakes often. */
#ifndef PYPERF_WAITS_H
#define PYPERF_WAITS_H

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* targets beyond this many are looked at with kill (an fd each, and one
 * poll for them all) */
#define WAITS_PIDFDS_MAX 254

struct waits {
	/* [0] the worker's eventfd, [1] the command, [2 + i] target i; fd < 0:
	 * none (poll passes over it) */
	struct pollfd *fds;
	size_t nfds;
	const int *pids;  /* the targets (-p), as given */
	size_t npids;
	bool *ended;      /* per target: its pidfd said it exited */
	bool child_polled; /* a command without a pidfd */
};

/* child: the command (0: none); pids: the -p targets.  Without memory for
 * the set it holds no fds (nfds 0), and everything is looked at by polling:
 * waits_polled says so, waits_any_target_alive asks kill. */
void waits_init(struct waits *w, int wake_fd, pid_t child, const int *pids, size_t npids);
/* Must the loop look every POLL_MS (a command or a live target without a
 * pidfd)? */
bool waits_polled(const struct waits *w);
/* After a poll: empty the worker's eventfd, and note the targets that
 * ended (their pidfds closed: readable once, readable for good). */
void waits_after_poll(struct waits *w);
/* Does any target still run?  (Ended by its pidfd, else kill(pid, 0).) */
bool waits_any_target_alive(const struct waits *w);
void waits_free(struct waits *w);

#endif
