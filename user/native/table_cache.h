/* table_cache.h - a binary's laid-out unwind table (unwind_table_layout)
 * kept in /run/pyperf-bpf (runcache.h) for the next run, which reads it in
 * place of building it again: building is the largest part of a merged
 * recording's start-up in user space (~3 ms of ~35 for python3.12 and
 * libc, 0.1-0.2 s for libtorch).
 *
 * A table is named by the binary's identity (device, inode, size,
 * modification and change times, as fstat gives them) and by the build-id
 * of the program that built it, so a rebuilt or replaced binary, or another
 * build of pyperf-bpf, never reads a table made for something else; the
 * file repeats that identity and carries a checksum of its rows, and its
 * layout is checked before use.  Tables over TABLE_CACHE_MAX_ONE are not
 * kept, and the oldest (by last use) go when the kept ones would pass
 * TABLE_CACHE_MAX_ALL. */
#ifndef PYPERF_TABLE_CACHE_H
#define PYPERF_TABLE_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "pyperf.h"

#define TABLE_CACHE_MAX_ONE (8u << 20)
#define TABLE_CACHE_MAX_ALL (32u << 20)

/* The table kept for the binary open on fd, its header's id set to id:
 * the file mapped (table_cache_release lets it go), its length in *len;
 * NULL when none is kept (or it is not sound). */
struct unwind_row *table_cache_get(int fd, uint32_t id, size_t *len);
void table_cache_release(struct unwind_row *v, size_t len);

/* Keep table v[0..len) of the binary open on fd (its id is not kept). */
void table_cache_put(int fd, const struct unwind_row *v, size_t len);

#endif
