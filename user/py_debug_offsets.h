/* py_debug_offsets.h - read struct offsets out of a CPython 3.13+ process.
 *
 * Since 3.13 the first member of _PyRuntime is _Py_DebugOffsets: a cookie,
 * the version, and the offsets of the fields an out-of-process tool needs.
 * The caller copies the start of the target's _PyRuntime into a buffer; this
 * module checks that the bytes have the 3.13 layout and turns them into a
 * `struct py_offsets`.  Pure function, no process access.  Needs bpf/ on the
 * include path (-Ibpf) for pyperf.h. */
#ifndef PYPERF_PY_DEBUG_OFFSETS_H
#define PYPERF_PY_DEBUG_OFFSETS_H

#include <stddef.h>
#include <stdint.h>

#include "pyperf.h"

/* Bytes of _Py_DebugOffsets in the 3.13 layout; a buffer shorter than this is
 * rejected. */
#define PY_DEBUG_OFFSETS_SIZE 584

/* Parse `len` bytes copied from the target's &_PyRuntime.  On success fills
 * *out and returns 0.  On failure returns -1, leaves *out untouched and
 * writes a one-line reason to err (errlen bytes, may be 0).  *version_hex
 * (PY_VERSION_HEX of the target) is set as soon as the cookie matched, also
 * when a later check fails.  err and version_hex may be NULL.
 *
 * Rejected: a wrong cookie, versions before 3.13, free-threaded builds
 * (unsupported), and buffers whose values do not look like the 3.13 layout
 * (a later CPython that reorders or grows _Py_DebugOffsets), so that such a
 * layout is refused rather than misread.  A later version with the same
 * layout is accepted; the values _Py_DebugOffsets does not carry are taken
 * from 3.13 (see py_debug_offsets.c). */
int py_debug_offsets_parse(const void *buf, size_t len, struct py_offsets *out,
			   uint64_t *version_hex, char *err, size_t errlen);

#endif
