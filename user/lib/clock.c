/* clock.c - see clock.h. */
#include "clock.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

void clock_rss_kb(long *anon_kb, long *file_kb)
{
	char line[128];
	FILE *f = fopen("/proc/self/status", "re");

	*anon_kb = *file_kb = -1;
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "RssAnon:", 8))
			*anon_kb = strtol(line + 8, NULL, 10);
		else if (!strncmp(line, "RssFile:", 8))
			*file_kb = strtol(line + 8, NULL, 10);
	}
	fclose(f);
}
