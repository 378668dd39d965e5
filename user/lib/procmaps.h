/* procmaps.h - read a process's memory map (/proc/PID/maps) into an array,
 * and small helpers to find and open the files mapped into it.
 *
 * Library code: errors come back as -1 (errno set) plus a one-line message in
 * a caller-supplied buffer; nothing here prints or exits. */
#ifndef PYPERF_PROCMAPS_H
#define PYPERF_PROCMAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct proc_map {
	uint64_t start, end;     /* [start, end) in the target's address space */
	uint64_t offset;         /* file offset mapped at `start` */
	uint64_t inode;
	uint32_t dev_major, dev_minor;
	char perms[5];           /* e.g. "r-xp", NUL-terminated */
	char *path;              /* NULL for anonymous; pseudo names such as
				  * "[heap]" or "[vdso]" are kept verbatim */
	bool deleted;            /* the kernel appended " (deleted)"; it has been
				  * stripped from `path` */
};

struct proc_maps {
	struct proc_map *v;      /* sorted by address, as the kernel lists them */
	size_t n;
};

/* Read /proc/PID/maps.  Returns 0, or -1 with errno set and a message in
 * `err` (ESRCH and "... no such process" when the pid is gone).  On success
 * the caller owns `out` and releases it with procmaps_free(). */
int procmaps_read(int pid, struct proc_maps *out, char *err, size_t errlen);

/* The same from the text of a maps file already in memory, text[0..len)
 * (need not end in a NUL or a newline).  Errors as procmaps_read's, naming
 * "maps text". */
int procmaps_parse(const char *text, size_t len, struct proc_maps *out, char *err,
		   size_t errlen);

/* Free what procmaps_read() allocated and reset `m` to empty; safe to call
 * twice or on a zeroed struct. */
void procmaps_free(struct proc_maps *m);

/* Path under which a file the target mapped as `path` can be opened from the
 * profiler's own mount namespace: "/proc/PID/root" + path.  Returns `buf`, or
 * NULL (errno EINVAL / ENAMETOOLONG) if `path` is not absolute or does not
 * fit in `len` bytes. */
char *procmaps_host_path(int pid, const char *path, char *buf, size_t len);

/* Path under which the very file mapped at `m` opens: its
 * /proc/PID/map_files entry (a file deleted or replaced since, a chroot whose
 * maps paths are the host's, another mount namespace), else
 * procmaps_host_path() of its path.  Returns `buf`, or NULL (errno set) if
 * neither exists. */
char *procmaps_file_path(int pid, const struct proc_map *m, char *buf, size_t len);

/* pid as the process knows itself: the last NSpid of /proc/PID/status (1
 * for a container's first process), which names the perf map and jitdump a
 * JIT inside a pid namespace writes; pid itself when it cannot be read. */
int procmaps_ns_pid(int pid);

/* Which memory image a process runs: where the kernel put its code, data,
 * heap, stack, arguments and environment (/proc/PID/stat), which an exec
 * lays out afresh (and randomizes).  A process read before an exec and
 * after it differs here; a forked copy and its parent do not. */
struct proc_image {
	uint64_t v[10];
};

/* pid's image now; -1 (errno set) when it is gone or has no memory (a
 * zombie, a kernel thread) */
int procmaps_image(int pid, struct proc_image *out);

/* Is pid still running the image `was`? (false when it is gone) */
bool procmaps_same_image(int pid, const struct proc_image *was);

/* Final component of a mapping's path ("" for anonymous mappings). */
const char *procmaps_basename(const struct proc_map *map);

/* First file-backed mapping (path starting with '/') whose basename
 * satisfies `pred(basename, arg)`, or NULL. */
const struct proc_map *procmaps_first_basename_match(
	const struct proc_maps *m, bool (*pred)(const char *basename, void *arg),
	void *arg);

/* First file-backed mapping whose basename starts with `prefix`
 * (e.g. "libpython3."), or NULL. */
const struct proc_map *procmaps_first_basename_prefix(const struct proc_maps *m,
						      const char *prefix);

#endif
