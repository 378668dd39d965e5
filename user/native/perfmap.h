/* perfmap.h - the symbol file a JIT writes for perf, /tmp/perf-PID.map
 * (CPython's -X perf trampolines, and other JITs): lines "START SIZE NAME",
 * START and SIZE in hex.
 *
 * The file lives in a directory every user can write, so it is untrusted:
 * it is opened without following a symlink and without blocking on a FIFO,
 * kept only if it is a regular file owned by the process's user and at most
 * PERFMAP_MAX_BYTES long, and read from where the last read stopped (JITs
 * only append). */
#ifndef PYPERF_PERFMAP_H
#define PYPERF_PERFMAP_H

#include <stddef.h>
#include <stdint.h>

#define PERFMAP_MAX_BYTES (64ull << 20)
#define PERFMAP_MAX_NAME 4096    /* longer names are cut, ending in "..." */

struct jit_sym {
	uint64_t start, end;
	char *name;
};

struct perfmap {
	struct jit_sym *v;           /* sorted by start once perfmap_read returns */
	size_t n, cap;
	uint64_t read_to;            /* bytes of the file parsed (whole lines) */
	uint64_t ino;                /* the file read; another one starts over */
};

/* Parse the whole lines of buf[0..len) into m (appended; call perfmap_sort
 * after).  Returns how many bytes were consumed: up to the end of the last
 * complete line.  Lines that do not parse are skipped. */
size_t perfmap_parse(struct perfmap *m, const char *buf, size_t len);
void perfmap_sort(struct perfmap *m);
/* Append one symbol [start, start + size) named name[0..len) (cut at
 * PERFMAP_MAX_NAME, control bytes made '?'); nothing when out of memory. */
void perfmap_add(struct perfmap *m, uint64_t start, uint64_t size, const char *name, size_t len);
/* Read what pid's perf map gained since the last call.  Returns 1 if m
 * changed, 0 if not (or there is no file), -1 if the file is refused, with
 * why set (one line: not a regular file, not the process's user's, too big). */
int perfmap_read(struct perfmap *m, int pid, char *why, size_t whylen);
/* For the readers of a JIT's files (this one, jitdump.h): is the file
 * open on fd one to read for pid?  A regular file owned by the process's
 * user, at most max bytes.  1: yes, *size its size, and m started over if
 * it is another file than the one read last or was cut short; 0: the
 * process is gone; -1: refused, with why (naming the file `name`).  fd is
 * closed unless 1 is returned. */
int perfmap_take_file(struct perfmap *m, int fd, int pid, const char *name, uint64_t max,
		      uint64_t *size, char *why, size_t whylen);
/* The symbol whose [start, end) holds pc, or NULL. */
const struct jit_sym *perfmap_find(const struct perfmap *m, uint64_t pc);
void perfmap_free(struct perfmap *m);

#endif
