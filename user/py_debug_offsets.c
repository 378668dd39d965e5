/* py_debug_offsets.c - turn a CPython 3.13 _Py_DebugOffsets block, copied out
 * of a target process, into the `struct py_offsets` the sampler uses.
 *
 * How it works: _Py_DebugOffsets (Include/internal/pycore_runtime.h of 3.13)
 * is an 8-byte cookie "xdebugpy", the PY_VERSION_HEX, a free-threaded flag,
 * and then fifteen groups ("sections") of uint64_t words, one group per
 * CPython struct: the struct's size followed by offsets of some of its
 * fields.  Nothing in the block describes its own layout, and CPython only
 * promises it stable within one minor version, so a newer interpreter may
 * carry a different layout behind the same cookie.  SECTIONS below is the
 * 3.13 layout; after the cookie, version and free-threaded checks, every
 * section is checked against it:
 *   - its size lies in a range that fits that struct,
 *   - every other word of the section is an offset below that size,
 *   - the fields we use fit our u16 table, and pointer-sized fields are
 *     8-aligned (ints 4-aligned),
 *   - fields that must agree across sections do (every object header has
 *     the same length, the str header is followed by the 16 bytes of
 *     PyCompactUnicodeObject and its data pointer), and
 *   - the frame fields lie within the bytes the BPF program reads.
 * A layout that shifted by even one word fails several of these at once.
 *
 * Values the block does not carry are those of 3.13 (a later version that
 * keeps this layout is assumed to keep them too): there is no _PyCFrame,
 * frames hold an instruction pointer, the C-stack shim frames are owned by
 * FRAME_OWNED_BY_CSTACK (3), line tables are PEP 626/657 location tables, and
 * sizeof(PyCompactUnicodeObject) is derived as described at
 * unicode_compact_size below. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "pyperf.h"
#include "linetable.h"
#include "py_debug_offsets.h"

#define COOKIE "xdebugpy"
#define MIN_VERSION_HEX 0x030d0000ULL      /* 3.13.0a0 */
#define NEXT_MAJOR_HEX 0x04000000ULL
#define PY313_FRAME_OWNED_BY_CSTACK 3      /* enum _frameowner in pycore_frame.h */
/* PyCompactUnicodeObject after its PyASCIIObject: Py_ssize_t utf8_length and
 * char *utf8 (3.12 dropped the wstr fields). */
#define COMPACT_EXTRA 16

/* The sections of the 3.13 layout, in order, after the 24-byte head. */
enum {
	S_RUNTIME, S_INTERP, S_TSTATE, S_FRAME, S_CODE, S_PYOBJECT, S_TYPE, S_TUPLE,
	S_LIST, S_DICT, S_FLOAT, S_LONG, S_BYTES, S_UNICODE, S_GC, S_NR
};

struct section {
	const char *name;
	unsigned words;          /* uint64_t words including `size` */
	uint64_t min_size, max_size;
};

/* Size ranges are generous bounds for the C struct each section describes
 * (3.13.0: runtime 283320, interpreter 194968, thread 304, frame 80, code
 * 208, type 416 bytes); they only have to tell a size from an offset or a
 * stray word. */
static const struct section SECTIONS[S_NR] = {
	[S_RUNTIME] = { "runtime_state", 3, 256, 64u << 20 },
	[S_INTERP] = { "interpreter_state", 13, 256, 64u << 20 },
	[S_TSTATE] = { "thread_state", 9, 64, 1u << 20 },
	[S_FRAME] = { "interpreter_frame", 6, 32, 4096 },
	[S_CODE] = { "code_object", 10, 64, 4096 },
	[S_PYOBJECT] = { "pyobject", 2, 16, 64 },
	[S_TYPE] = { "type_object", 4, 128, 4096 },
	[S_TUPLE] = { "tuple_object", 3, 24, 256 },
	[S_LIST] = { "list_object", 3, 24, 256 },
	[S_DICT] = { "dict_object", 3, 24, 256 },
	[S_FLOAT] = { "float_object", 2, 24, 256 },
	[S_LONG] = { "long_object", 3, 24, 256 },
	[S_BYTES] = { "bytes_object", 3, 24, 256 },
	[S_UNICODE] = { "unicode_object", 4, 32, 256 },
	[S_GC] = { "gc", 2, 8, 1u << 20 },
};

#define HEAD_BYTES 24  /* cookie, version, free_threaded */

/* Fields we copy into struct py_offsets: section, word index, required
 * alignment and name for messages. */
struct used_field {
	unsigned sec, word, align;
	const char *name;
};

enum {
	U_INTERP_HEAD, U_THREADS_HEAD, U_TS_NEXT, U_TS_FRAME, U_TS_THREAD_ID,
	U_FR_PREVIOUS, U_FR_EXECUTABLE, U_FR_INSTR, U_FR_OWNER,
	U_CO_FILENAME, U_CO_NAME, U_CO_QUALNAME, U_CO_LINETABLE, U_CO_FIRSTLINENO, U_CO_ADAPTIVE,
	U_BYTES_SIZE, U_BYTES_SVAL, U_STR_STATE, U_STR_LENGTH, U_STR_ASCII_SIZE, U_NR
};

static const struct used_field USED[U_NR] = {
	[U_INTERP_HEAD] = { S_RUNTIME, 2, 8, "runtime_state.interpreters_head" },
	[U_THREADS_HEAD] = { S_INTERP, 3, 8, "interpreter_state.threads_head" },
	[U_TS_NEXT] = { S_TSTATE, 2, 8, "thread_state.next" },
	[U_TS_FRAME] = { S_TSTATE, 4, 8, "thread_state.current_frame" },
	[U_TS_THREAD_ID] = { S_TSTATE, 5, 8, "thread_state.thread_id" },
	[U_FR_PREVIOUS] = { S_FRAME, 1, 8, "interpreter_frame.previous" },
	[U_FR_EXECUTABLE] = { S_FRAME, 2, 8, "interpreter_frame.executable" },
	[U_FR_INSTR] = { S_FRAME, 3, 8, "interpreter_frame.instr_ptr" },
	[U_FR_OWNER] = { S_FRAME, 5, 1, "interpreter_frame.owner" },
	[U_CO_FILENAME] = { S_CODE, 1, 8, "code_object.filename" },
	[U_CO_NAME] = { S_CODE, 2, 8, "code_object.name" },
	[U_CO_QUALNAME] = { S_CODE, 3, 8, "code_object.qualname" },
	[U_CO_LINETABLE] = { S_CODE, 4, 8, "code_object.linetable" },
	[U_CO_FIRSTLINENO] = { S_CODE, 5, 4, "code_object.firstlineno" },
	[U_CO_ADAPTIVE] = { S_CODE, 9, 2, "code_object.co_code_adaptive" },
	[U_BYTES_SIZE] = { S_BYTES, 1, 8, "bytes_object.ob_size" },
	[U_BYTES_SVAL] = { S_BYTES, 2, 1, "bytes_object.ob_sval" },
	[U_STR_STATE] = { S_UNICODE, 1, 4, "unicode_object.state" },
	[U_STR_LENGTH] = { S_UNICODE, 2, 8, "unicode_object.length" },
	/* a size, not an offset, but also below sizeof(PyUnicodeObject) */
	[U_STR_ASCII_SIZE] = { S_UNICODE, 3, 8, "unicode_object.asciiobject_size" },
};

struct reader {
	const unsigned char *buf;
	size_t sec_off[S_NR];     /* byte offset of each section in buf */
	char *err;
	size_t errlen;
};

static uint64_t rd_u64(const unsigned char *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));  /* target and host share byte order */
	return v;
}

static uint64_t word(const struct reader *r, unsigned sec, unsigned idx)
{
	return rd_u64(r->buf + r->sec_off[sec] + 8 * (size_t)idx);
}

static uint64_t used(const struct reader *r, unsigned u)
{
	return word(r, USED[u].sec, USED[u].word);
}

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		int n = snprintf(err, errlen, "_Py_DebugOffsets: ");

		if (n > 0 && (size_t)n < errlen) {
			va_start(ap, fmt);
			vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
			va_end(ap);
		}
	}
	return -1;
}

/* every section: size in range, every offset below the size */
static int check_sections(const struct reader *r)
{
	for (unsigned s = 0; s < S_NR; s++) {
		const struct section *sec = &SECTIONS[s];
		uint64_t size = word(r, s, 0);

		if (size < sec->min_size || size > sec->max_size)
			return fail(r->err, r->errlen,
				    "%s.size = %" PRIu64 " outside %" PRIu64 "..%" PRIu64
				    ": not the 3.13 layout",
				    sec->name, size, sec->min_size, sec->max_size);
		for (unsigned i = 1; i < sec->words; i++) {
			uint64_t v = word(r, s, i);

			if (v >= size)
				return fail(r->err, r->errlen,
					    "%s word %u = %" PRIu64 " not below its size %" PRIu64
					    ": not the 3.13 layout",
					    sec->name, i, v, size);
		}
	}
	return 0;
}

/* fields we use: fit the u16 table, aligned */
static int check_used(const struct reader *r)
{
	for (unsigned u = 0; u < U_NR; u++) {
		uint64_t v = used(r, u);

		if (v >= PYPERF_NO_OFFSET)
			return fail(r->err, r->errlen, "%s = %" PRIu64 " too large for the table",
				    USED[u].name, v);
		if (v % USED[u].align)
			return fail(r->err, r->errlen, "%s = %" PRIu64 " not %u-aligned",
				    USED[u].name, v, USED[u].align);
	}
	return 0;
}

/* values that different sections must agree on */
static int check_consistency(const struct reader *r)
{
	uint64_t ob_head = word(r, S_PYOBJECT, 0);     /* sizeof(PyObject) */
	uint64_t ob_type = word(r, S_PYOBJECT, 1);
	uint64_t ascii = used(r, U_STR_ASCII_SIZE);
	uint64_t str_size = word(r, S_UNICODE, 0);     /* sizeof(PyUnicodeObject) */
	uint64_t state = used(r, U_STR_STATE), length = used(r, U_STR_LENGTH);
	uint64_t frame_max = 0;

	if (ob_head % 8 || ob_type + 8 != ob_head)
		return fail(r->err, r->errlen,
			    "PyObject of %" PRIu64 " bytes with ob_type at %" PRIu64
			    ": not the 3.13 layout", ob_head, ob_type);
	/* ob_size follows the PyObject header in every variable-size object */
	if (word(r, S_TUPLE, 2) != ob_head || word(r, S_LIST, 2) != ob_head ||
	    used(r, U_BYTES_SIZE) != ob_head)
		return fail(r->err, r->errlen,
			    "ob_size of tuple/list/bytes (%" PRIu64 "/%" PRIu64 "/%" PRIu64
			    ") does not follow the %" PRIu64 "-byte object header: not the 3.13 layout",
			    word(r, S_TUPLE, 2), word(r, S_LIST, 2), used(r, U_BYTES_SIZE), ob_head);
	if (used(r, U_BYTES_SVAL) <= used(r, U_BYTES_SIZE))
		return fail(r->err, r->errlen, "bytes ob_sval at %" PRIu64 " not after ob_size",
			    used(r, U_BYTES_SVAL));
	/* str: length right after the header, then hash, state; the ASCII
	 * header ends after state */
	if (length != ob_head || state <= length || state + 4 > ascii)
		return fail(r->err, r->errlen,
			    "str length %" PRIu64 ", state %" PRIu64 ", header %" PRIu64
			    ": not the 3.13 layout", length, state, ascii);
	/* unicode_compact_size: _Py_DebugOffsets has no sizeof(PyCompactUnicodeObject).
	 * In 3.13 PyUnicodeObject is PyCompactUnicodeObject plus one data
	 * pointer, and PyCompactUnicodeObject is PyASCIIObject plus utf8_length
	 * and utf8 (16 bytes).  Both sizes we do get must bear that out. */
	if (ascii + COMPACT_EXTRA + 8 != str_size)
		return fail(r->err, r->errlen,
			    "sizeof(PyUnicodeObject) %" PRIu64 " is not PyASCIIObject %" PRIu64
			    " + %d: str layout changed", str_size, ascii, COMPACT_EXTRA + 8);
	/* the BPF program reads the first PYPERF_FRAME_READ_MAX bytes of a frame */
	for (unsigned u = U_FR_PREVIOUS; u <= U_FR_INSTR; u++)
		if (used(r, u) + 8 > frame_max)
			frame_max = used(r, u) + 8;
	if (used(r, U_FR_OWNER) + 1 > frame_max)
		frame_max = used(r, U_FR_OWNER) + 1;
	if (frame_max > PYPERF_FRAME_READ_MAX)
		return fail(r->err, r->errlen,
			    "frame fields reach byte %" PRIu64 ", the sampler reads only %d",
			    frame_max, PYPERF_FRAME_READ_MAX);
	if (used(r, U_FR_PREVIOUS) == used(r, U_FR_EXECUTABLE) ||
	    used(r, U_FR_PREVIOUS) == used(r, U_FR_INSTR) ||
	    used(r, U_FR_EXECUTABLE) == used(r, U_FR_INSTR))
		return fail(r->err, r->errlen, "frame fields overlap: not the 3.13 layout");
	return 0;
}

int py_debug_offsets_parse(const void *buf, size_t len, struct py_offsets *out,
			   uint64_t *version_hex, char *err, size_t errlen)
{
	struct reader r = { .buf = buf, .err = err, .errlen = errlen };
	struct py_offsets o;
	uint64_t ver, ft;
	size_t pos = HEAD_BYTES;

	if (err && errlen)
		err[0] = 0;
	if (!buf || len < sizeof(COOKIE) - 1)
		return fail(err, errlen, "buffer of %zu bytes is too short", buf ? len : 0);
	if (memcmp(buf, COOKIE, sizeof(COOKIE) - 1))
		return fail(err, errlen, "no \"%s\" cookie: not a CPython 3.13+ runtime", COOKIE);
	if (len < PY_DEBUG_OFFSETS_SIZE)
		return fail(err, errlen, "buffer of %zu bytes, need %d", len, PY_DEBUG_OFFSETS_SIZE);
	ver = rd_u64(r.buf + 8);
	ft = rd_u64(r.buf + 16);
	if (version_hex)
		*version_hex = ver;
	if (ver < MIN_VERSION_HEX || ver >= NEXT_MAJOR_HEX)
		return fail(err, errlen, "version 0x%08" PRIx64 " is not 3.13 or a later 3.x", ver);
	if (ft == 1)
		return fail(err, errlen,
			    "free-threaded (no-GIL) CPython %" PRIu64 ".%" PRIu64
			    " is not supported", ver >> 24, (ver >> 16) & 0xff);
	if (ft != 0)
		return fail(err, errlen, "free_threaded = %" PRIu64 ": not the 3.13 layout", ft);

	for (unsigned s = 0; s < S_NR; s++) {
		r.sec_off[s] = pos;
		pos += 8 * (size_t)SECTIONS[s].words;
	}
	/* keeps PY_DEBUG_OFFSETS_SIZE honest */
	if (pos != PY_DEBUG_OFFSETS_SIZE)
		return fail(err, errlen, "internal: layout is %zu bytes, not %d", pos,
			    PY_DEBUG_OFFSETS_SIZE);

	if (check_sections(&r) || check_used(&r) || check_consistency(&r))
		return -1;

	memset(&o, 0, sizeof(o));
	o.runtime_interp_head = (__u16)used(&r, U_INTERP_HEAD);
	o.interp_threads_head = (__u16)used(&r, U_THREADS_HEAD);
	o.tstate_next = (__u16)used(&r, U_TS_NEXT);
	o.tstate_thread_id = (__u16)used(&r, U_TS_THREAD_ID);
	o.tstate_frame = (__u16)used(&r, U_TS_FRAME);
	o.cframe_current_frame = PYPERF_NO_OFFSET;  /* no _PyCFrame since 3.13 */
	o.frame_back = (__u16)used(&r, U_FR_PREVIOUS);
	o.frame_code = (__u16)used(&r, U_FR_EXECUTABLE);
	o.frame_instr = (__u16)used(&r, U_FR_INSTR);
	o.frame_owner = (__u16)used(&r, U_FR_OWNER);
	o.frame_is_entry = PYPERF_NO_OFFSET; /* 3.12+ mark entries with shim frames */
	o.instr_kind = INSTR_POINTER;
	o.owner_cstack = PY313_FRAME_OWNED_BY_CSTACK;
	o.code_firstlineno = (__u16)used(&r, U_CO_FIRSTLINENO);
	o.code_adaptive = (__u16)used(&r, U_CO_ADAPTIVE);
	o.code_filename = (__u16)used(&r, U_CO_FILENAME);
	o.code_name = (__u16)used(&r, U_CO_NAME);
	o.code_qualname = (__u16)used(&r, U_CO_QUALNAME);
	o.code_linetable = (__u16)used(&r, U_CO_LINETABLE);
	o.linetable_kind = LT_LOCATIONS;
	o.unicode_state = (__u16)used(&r, U_STR_STATE);
	o.unicode_length = (__u16)used(&r, U_STR_LENGTH);
	o.unicode_ascii_size = (__u16)used(&r, U_STR_ASCII_SIZE);
	/* checked in check_consistency: equals sizeof(PyCompactUnicodeObject) */
	o.unicode_compact_size = (__u16)(used(&r, U_STR_ASCII_SIZE) + COMPACT_EXTRA);
	o.bytes_size = (__u16)used(&r, U_BYTES_SIZE);
	o.bytes_sval = (__u16)used(&r, U_BYTES_SVAL);
	*out = o;
	return 0;
}
