/* jitdump.h - the jitdump file a JIT writes for perf, jit-PID.dump
 * (CPython 3.13+'s -X perf_jit, LLVM's perf JIT listener, V8's
 * --perf-prof, ...): a 40-byte header (magic "JiTD", version 1, its own
 * size), then records of a 16-byte header (id, total size, timestamp).  A
 * code load (id 0) gives pid, tid, vma, code address, code size, an index,
 * the function's NUL-terminated name, then the code's bytes; a code move
 * (id 1) gives the old and new address of code loaded before.  Debug info,
 * unwinding info and close records are skipped.
 *
 * perf finds the file because the JIT maps it (a page, executable); so do
 * we: the mapping named jit-PID.dump in /proc/PID/maps, opened through
 * /proc/PID/map_files (the very file the process mapped, wherever it is).
 * The file is untrusted: a regular file owned by the process's user, at
 * most JITDUMP_MAX_BYTES, read from where the last read stopped (JITs only
 * append); a record is taken once the file holds all of it.  Symbols go to
 * a struct perfmap (perfmap.h), names cut and cleaned as there. */
#ifndef PYPERF_JITDUMP_H
#define PYPERF_JITDUMP_H

#include "perfmap.h"

#include <stddef.h>
#include <stdint.h>

#define JITDUMP_MAX_BYTES (256ull << 20)

/* The records of buf[0..len), the file's bytes from offset at (0: the file
 * header first), into m (appended, unsorted); the file is file_size long.
 * A record is taken when the file holds all of it and buf its fixed fields
 * and name.  *next is the offset to go on from.  Returns 0, or -1 if the
 * header is not a jitdump's (magic, version, byte order, size). */
int jitdump_parse(struct perfmap *m, const uint8_t *buf, size_t len, uint64_t at,
		  uint64_t file_size, uint64_t *next);
/* Read what pid's jitdump file gained since the last call (m->read_to,
 * m->ino as in perfmap_read).  Returns 1 if m changed, 0 if not (or the
 * process maps none), -1 if the file is refused, with why set. */
int jitdump_read(struct perfmap *m, int pid, char *why, size_t whylen);

#endif
