/* runcache.h - files one run leaves for the next in /run/pyperf-bpf: what
 * costs a start-up its time and cannot change until the next boot or until
 * its source changes (the kernel's BTF cut to our relocations, a binary's
 * unwind table).  /run is a tmpfs emptied at each boot.  The directory is
 * used only while it is ours alone (owned by us, written by no one else);
 * a file is made whole under a temporary name and renamed, so a run never
 * reads half of one. */
#ifndef PYPERF_RUNCACHE_H
#define PYPERF_RUNCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RUNCACHE_DIR "/run/pyperf-bpf"

/* Make the directory if need be; true when it is there and only we may
 * write it. */
bool runcache_ready(void);

/* What a kept file was made from, or its checksum: FNV-1a's step over
 * 8-byte words, then the tail's bytes, from h (RUNCACHE_HASH0 to start). */
#define RUNCACHE_HASH0 1469598103934665603ull
uint64_t runcache_hash(uint64_t h, const void *p, size_t n);

/* Write len bytes of data as RUNCACHE_DIR/name, atomically; 0 or -1. */
int runcache_write(const char *name, const void *data, size_t len);

/* The len bytes of the kept file open on fd, mapped read-only and private
 * (mprotect a page writable to change it: the file does not change), its
 * pages mapped at once: no copy into fresh memory, which the kernel would
 * first fault in and zero, nor a fault a page; NULL if it cannot.  Kept
 * files are replaced by a rename, never rewritten in place, so the mapping
 * stays whole.  Undone by runcache_unmap. */
void *runcache_map(int fd, size_t len);
void runcache_unmap(void *p, size_t len);

/* The build-id of this program, hex ("" when it has none: then nothing is
 * kept, as no later build could tell the files apart). */
const char *runcache_builder(void);

/* Remove the least recently used (by modification time) files whose names
 * start with prefix until they and `more` bytes fit in max_all. */
void runcache_trim(const char *prefix, uint64_t max_all, uint64_t more);

#endif
