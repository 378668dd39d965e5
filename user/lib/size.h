/* size.h - a byte size as the options and the daemon's configuration take
 * it: a number, optionally with a K, M or G suffix (1024-based) and a B. */
#ifndef PYPERF_SIZE_H
#define PYPERF_SIZE_H

#include <stdbool.h>
#include <stdint.h>

/* s into *out; false for anything else (negative, trailing text, over 1e15) */
bool size_parse(const char *s, uint64_t *out);

#endif
