/* pyproc.h - is this process CPython, which version, where is its interpreter
 * state and which struct offsets apply? */
#ifndef PYPERF_PYPROC_H
#define PYPERF_PYPROC_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "procmaps.h"
#include "pyperf.h"
#include "pyread.h"

enum pyproc_status {
	PYPROC_OK,
	PYPROC_NOT_PYTHON,   /* no CPython runtime mapped (yet) */
	PYPROC_UNSUPPORTED,  /* CPython, but a version or build we cannot read */
	PYPROC_GONE,         /* no such process (any more) */
};

struct pyproc {
	int pid;
	int major, minor;
	uint64_t runtime_addr;       /* &_PyRuntime in the target */
	struct py_offsets off;
	struct py_types types;       /* its code, str and bytes types (0: unknown) */
	bool debug_offsets;          /* offsets came from the target's _Py_DebugOffsets */
	char binary[PATH_MAX];       /* file that holds _PyRuntime, as the process maps it */
	char binary_file[PATH_MAX + 32]; /* where the profiler opens that very file
				      * (procmaps_file_path) */
	struct proc_image image;     /* the image read (procmaps_image, taken
				      * first): what was read is still so while
				      * procmaps_same_image holds */
};

/* Classify pid.  On PYPROC_OK *out is filled; otherwise err says why, in one
 * line naming the pid (and the version, when it is unsupported). */
enum pyproc_status pyproc_inspect(int pid, struct pyproc *out, char *err, size_t errlen);

/* /proc/PID/comm into buf ("?" if gone); /proc/PID/cmdline with spaces. */
void proc_comm(int pid, char *buf, size_t len);
void proc_cmdline(int pid, char *buf, size_t len);

#endif
