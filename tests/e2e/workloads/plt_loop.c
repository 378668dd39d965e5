/* plt_loop.c - native code that calls two libc functions through its PLT
 * in a tight loop, so that a good share of samples land in the stubs
 * themselves.  Built by the test (-fno-builtin: real calls) into a shared
 * library that plt_loop.py loads with ctypes. */
#include <stdlib.h>
#include <time.h>

static volatile long sink;

static double thread_cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void plt_spin(double seconds)
{
	double end = thread_cpu_s() + seconds;
	long acc = 0;

	while (thread_cpu_s() < end) {
		for (int i = 0; i < 100000; i++) {
			acc += labs(acc - i);
			acc -= abs(i - 50000);
		}
		sink = acc;
	}
}
