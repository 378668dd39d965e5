/* ksyms.h - names for kernel stack addresses, from /proc/kallsyms: the
 * fallback of sampler_name_kernel, which asks the kernel directly. */
#ifndef PYPERF_KSYMS_H
#define PYPERF_KSYMS_H

#include <stddef.h>
#include <stdint.h>

/* Name addrs[0..n) (sorted ascending, no duplicates): names[i] becomes a
 * malloc'd name of the text symbol containing addrs[i], or NULL.  Returns 0,
 * or -1 when the symbol file cannot be read. */
int ksyms_resolve(const char *path, const uint64_t *addrs, size_t n, char **names);
/* The reverse, in one pass: addrs[i] becomes the address of the first text
 * symbol called names[i], or 0.  Returns 0, or -1 when the file cannot be
 * read. */
int ksyms_lookup(const char *path, const char *const *names, size_t n, uint64_t *addrs);

#endif
