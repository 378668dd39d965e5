/* py_debug_offsets.h - read struct offsets out of a CPython 3.13+ process.
 *
 * Since 3.13 the first member of _PyRuntime is _Py_DebugOffsets: a cookie,
 * the version, and the offsets of the fields an out-of-process tool needs.
 * The caller copies the start of the target's _PyRuntime into a buffer; this
 * module reads it with the layout of the minor version the block names (3.13,
 * 3.14 and 3.15 are known), checks that the bytes have that shape and turns
 * them into a `struct py_offsets`.  Pure function, no process access.  Needs
 * bpf/ on the include path (-Ibpf) for pyperf.h. */
#ifndef PYPERF_PY_DEBUG_OFFSETS_H
#define PYPERF_PY_DEBUG_OFFSETS_H

#include <stddef.h>
#include <stdint.h>

#include "pyperf.h"

/* Bytes a caller should copy from &_PyRuntime: more than any known layout. */
#define PY_DEBUG_OFFSETS_READ 4096

/* Bytes of _Py_DebugOffsets in the layout of CPython 3.<minor>, or 0 when
 * that layout is not known. */
size_t py_debug_offsets_size(int minor);

/* Parse `len` bytes copied from the target's &_PyRuntime.  On success fills
 * *out and returns 0.  On failure returns -1, leaves *out untouched and
 * writes a one-line reason to err (errlen bytes, may be 0).  *version_hex
 * (PY_VERSION_HEX of the target) is set as soon as the cookie matched, also
 * when a later check fails.  err and version_hex may be NULL.
 *
 * Rejected: a wrong cookie, versions before 3.13 or after the newest known
 * layout, free-threaded builds (unsupported), buffers shorter than the
 * version's layout, and buffers whose values do not look like that layout
 * (sizes, offsets below sizes, alignment, agreement between sections), so
 * that an unknown layout is refused rather than misread. */
int py_debug_offsets_parse(const void *buf, size_t len, struct py_offsets *out,
			   uint64_t *version_hex, char *err, size_t errlen);

#endif
