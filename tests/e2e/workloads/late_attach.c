/* late_attach.c - a thread that runs native code first and Python later,
 * as a C++ worker pool that calls Python hooks does.  Built by the test
 * into a shared library that late_attach.py loads with ctypes. */
#include <pthread.h>
#include <time.h>

typedef void (*callback)(void);

static callback cb;
static double native_s;
static volatile unsigned long sink;

static double thread_cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* native work, never a Python frame on this thread */
__attribute__((noinline)) void late_attach_spin(double seconds)
{
	double end = thread_cpu_s() + seconds;

	while (thread_cpu_s() < end)
		for (int i = 0; i < 10000; i++)
			sink += i;
}

static void *worker(void *arg)
{
	late_attach_spin(native_s);
	cb(); /* a ctypes callback: the thread takes a thread state and the GIL here */
	return arg;
}

/* start the thread, wait for it */
int late_attach_run(callback fn, double native_seconds)
{
	pthread_t t;

	cb = fn;
	native_s = native_seconds;
	if (pthread_create(&t, NULL, worker, NULL))
		return -1;
	return pthread_join(t, NULL);
}
