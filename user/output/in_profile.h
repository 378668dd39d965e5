/* in_profile.h - our own outputs read back (folded, pprof, speedscope) as
 * one list of stacks, each frame labelled as the folded output labels it,
 * so that the same recording reads the same whatever format it was kept in
 * (pyperf-bpf diff compares two of them). */
#ifndef PYPERF_IN_PROFILE_H
#define PYPERF_IN_PROFILE_H

#include <stddef.h>

struct in_stack {
	char **frames;               /* root first, each labelled as the folded output labels it */
	size_t n;
	double value;
};

struct in_profile {
	struct in_stack *v;
	size_t n, cap;
	char unit[32];               /* what a value is: "samples", "nanoseconds", "bytes"; "" when the format does not say (folded) */
	char format[16];             /* "folded", "pprof" or "speedscope" */
	double total;                /* sum of the values */
};

/* Read path, its format told by its content (gzip magic: pprof, gzipped
 * profile.proto; a '{' first: speedscope JSON; else folded stacks).  0, or
 * -1 with a one-line message naming the file (unreadable, not one of the
 * three, malformed).  Stacks that label alike are merged; those of value 0
 * are left out.  A frame's strings are its own: the caller may shorten them
 * in place. */
int in_profile_read(const char *path, struct in_profile *out, char *err, size_t errlen);
void in_profile_free(struct in_profile *p);

#endif
