/* dbgspin.c - native code whose busy function is static: in a stripped
 * copy of the library only a debug file names it.  Built by the test with
 * -g; its debug file goes to a debuginfod server, the library is stripped. */
#include <time.h>

static volatile long sink;

static double thread_cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static __attribute__((noinline)) long hidden_spin(long n)
{
	long s = sink;

	for (long i = 0; i < n; i++)
		s += i ^ (s >> 3);
	return s;
}

void dbg_spin(double seconds)
{
	double end = thread_cpu_s() + seconds;

	while (thread_cpu_s() < end)
		sink = hidden_spin(100000);
}
