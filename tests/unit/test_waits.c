/* test_waits.c - the loop's wait set: a target's pidfd wakes a poll when the
 * process exits, the target then counts as ended before anybody reaps it,
 * and a target without a pidfd (a pid that is gone) is looked at by kill
 * and makes the loop poll. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "waits.h"

static pid_t sleeper(void)
{
	pid_t pid = fork();

	if (pid == 0) {
		pause();
		_exit(0);
	}
	assert_true(pid > 0);
	return pid;
}

static void an_exit_wakes_the_poll_and_ends_the_target_unreaped(void **state)
{
	pid_t a = sleeper(), b = sleeper();
	int pids[2] = { a, b };
	struct waits w;

	(void)state;
	waits_init(&w, -1, 0, pids, 2);
	assert_false(waits_polled(&w)); /* both have pidfds: no polling */
	assert_true(waits_any_target_alive(&w));
	/* nothing happens: the poll times out */
	assert_int_equal(poll(w.fds, w.nfds, 50), 0);
	waits_after_poll(&w);
	assert_false(w.ended[0] || w.ended[1]);
	kill(a, SIGKILL);
	assert_int_equal(poll(w.fds, w.nfds, 5000), 1);
	waits_after_poll(&w);
	assert_true(w.ended[0]);
	assert_false(w.ended[1]);
	assert_true(waits_any_target_alive(&w)); /* b still runs */
	kill(b, SIGKILL);
	assert_int_equal(poll(w.fds, w.nfds, 5000), 1);
	waits_after_poll(&w);
	/* both zombies, neither reaped: kill(pid, 0) would still succeed */
	assert_int_equal(kill(a, 0), 0);
	assert_false(waits_any_target_alive(&w));
	waits_free(&w);
	assert_int_equal(waitpid(a, NULL, 0), a);
	assert_int_equal(waitpid(b, NULL, 0), b);
}

static void the_workers_eventfd_wakes_it_and_is_emptied(void **state)
{
	int efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	uint64_t one = 1;
	struct waits w;

	(void)state;
	assert_true(efd >= 0);
	waits_init(&w, efd, 0, NULL, 0);
	assert_int_equal(write(efd, &one, sizeof(one)), (int)sizeof(one));
	assert_int_equal(poll(w.fds, w.nfds, 5000), 1);
	waits_after_poll(&w);
	assert_int_equal(poll(w.fds, w.nfds, 0), 0); /* read: not readable again */
	waits_free(&w);
	assert_int_equal(close(efd), 0); /* the caller's fd: not closed by waits_free */
}

static void a_command_wakes_it_until_reaped(void **state)
{
	pid_t c = sleeper();
	struct waits w;

	(void)state;
	waits_init(&w, -1, c, NULL, 0);
	assert_false(waits_polled(&w));
	kill(c, SIGKILL);
	assert_int_equal(poll(w.fds, w.nfds, 5000), 1);
	assert_true(w.fds[1].revents & POLLIN);
	waits_after_poll(&w);
	/* the loop reaps the command (and ends): its fd is left to it */
	assert_true(w.fds[1].fd >= 0);
	assert_int_equal(waitpid(c, NULL, 0), c);
	waits_free(&w);
}

static void a_target_without_a_pidfd_is_polled_by_kill(void **state)
{
	pid_t gone = sleeper();
	int pids[1];
	struct waits w;

	(void)state;
	kill(gone, SIGKILL);
	assert_int_equal(waitpid(gone, NULL, 0), gone); /* reaped: no pidfd for it */
	pids[0] = gone;
	waits_init(&w, -1, 0, pids, 1);
	assert_true(w.fds[2].fd < 0);
	assert_true(waits_polled(&w));
	assert_false(waits_any_target_alive(&w)); /* kill: ESRCH */
	waits_free(&w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(an_exit_wakes_the_poll_and_ends_the_target_unreaped),
		cmocka_unit_test(the_workers_eventfd_wakes_it_and_is_emptied),
		cmocka_unit_test(a_command_wakes_it_until_reaped),
		cmocka_unit_test(a_target_without_a_pidfd_is_polled_by_kill),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
