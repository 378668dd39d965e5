/* clock.c - see clock.h. */
#include "clock.h"

#include <sys/resource.h>
#include <time.h>

static uint64_t read_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t clock_mono_ns(void)
{
	return read_ns(CLOCK_MONOTONIC);
}

uint64_t clock_unix_ns(void)
{
	return read_ns(CLOCK_REALTIME);
}

double clock_cpu_s(long *maxrss_kb)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	if (maxrss_kb)
		*maxrss_kb = ru.ru_maxrss;
	return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec +
	       ru.ru_stime.tv_usec / 1e6;
}
