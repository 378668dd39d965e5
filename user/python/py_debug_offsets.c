/* py_debug_offsets.c - turn a CPython 3.13+ _Py_DebugOffsets block, copied
 * out of a target process, into the `struct py_offsets` the sampler uses.
 *
 * How it works: _Py_DebugOffsets (Include/internal/pycore_runtime.h in 3.13,
 * pycore_debug_offsets.h from 3.14) is an 8-byte cookie "xdebugpy", the
 * PY_VERSION_HEX, a free-threaded flag, and then groups ("sections") of
 * uint64_t words, one group per CPython struct: mostly the struct's size
 * followed by offsets of some of its fields.  Nothing in the block describes
 * its own layout, and CPython changes it between minor versions (3.14 inserted
 * words in the middle of several sections and added whole sections; 3.15
 * again), so the block is read with the definition of the minor version its
 * `version` word names: LAYOUTS below, one list of section and word names per
 * version, copied from that version's header.  Adding a version is adding
 * its list.  A version newer than the last list is refused: its layout, and
 * the facts the block does not carry, are unknown.
 *
 * The shape checks stay on for known versions, so a block that does not look
 * like its version's layout (a patched or vendored interpreter) is refused
 * rather than misread:
 *   - every section with a size has it in a range that fits that struct,
 *   - every other word of such a section is an offset below that size,
 *   - the fields we use fit our u16 table, and pointer-sized fields are
 *     8-aligned (ints 4-aligned),
 *   - fields that must agree across sections do (every object header has
 *     the same length, the str header is followed by the 16 bytes of
 *     PyCompactUnicodeObject and its data pointer), and
 *   - the frame fields lie within the bytes the BPF program reads.
 *
 * Values the block does not carry come with the layout: frames hold an
 * instruction pointer; the owner value from which frames are shims (the
 * entry frame of each eval-loop call: FRAME_OWNED_BY_CSTACK = 3 in 3.13,
 * FRAME_OWNED_BY_INTERPRETER = 3 from 3.14, also 3.15's base frame); the tag
 * bits of 3.14+'s _PyStackRef f_executable; PEP 626/657 location tables.
 * scripts/gen_offsets.py derives the same facts from the headers, and the
 * unit tests check that both agree. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "pyperf.h"
#include "linetable.h"
#include "py_debug_offsets.h"
#include "py_offsets_table.h"

#define COOKIE "xdebugpy"
#define HEAD_BYTES 24                      /* cookie, version, free_threaded */
#define MIN_MINOR 13
/* PyCompactUnicodeObject after its PyASCIIObject: Py_ssize_t utf8_length and
 * char *utf8 (3.12 dropped the wstr fields). */
#define COMPACT_EXTRA 16

/* A section of the block: its name and its words in order, as in the
 * header.  Sections that start with "size" describe a struct; a word named
 * with a leading '=' is a value, not an offset into that struct. */
struct section {
	const char *name;
	const char *words;
};

struct layout {
	int minor;
	const struct section *sections;
	uint8_t owner_shim;        /* see struct py_offsets */
	uint8_t code_tag_bits;
};

static const struct section LAYOUT_313[] = {
	{ "runtime_state", "size finalizing interpreters_head" },
	{ "interpreter_state", "size id next threads_head gc imports_modules sysdict builtins "
	  "ceval_gil gil_runtime_state gil_runtime_state_enabled gil_runtime_state_locked "
	  "gil_runtime_state_holder" },
	{ "thread_state", "size prev next interp current_frame thread_id native_thread_id "
	  "datastack_chunk status" },
	{ "interpreter_frame", "size previous executable instr_ptr localsplus owner" },
	{ "code_object", "size filename name qualname linetable firstlineno argcount "
	  "localsplusnames localspluskinds co_code_adaptive" },
	{ "pyobject", "size ob_type" },
	{ "type_object", "size tp_name tp_repr tp_flags" },
	{ "tuple_object", "size ob_item ob_size" },
	{ "list_object", "size ob_item ob_size" },
	{ "dict_object", "size ma_keys ma_values" },
	{ "float_object", "size ob_fval" },
	{ "long_object", "size lv_tag ob_digit" },
	{ "bytes_object", "size ob_size ob_sval" },
	{ "unicode_object", "size state length asciiobject_size" },
	{ "gc", "size collecting" },
	{ NULL, NULL },
};

/* 3.14: words inserted in interpreter_state, interpreter_frame and
 * code_object; set_object, gen_object, llist_node and debugger_support added */
static const struct section LAYOUT_314[] = {
	{ "runtime_state", "size finalizing interpreters_head" },
	{ "interpreter_state", "size id next threads_head threads_main gc imports_modules "
	  "sysdict builtins ceval_gil gil_runtime_state gil_runtime_state_enabled "
	  "gil_runtime_state_locked gil_runtime_state_holder code_object_generation "
	  "tlbc_generation" },
	{ "thread_state", "size prev next interp current_frame thread_id native_thread_id "
	  "datastack_chunk status" },
	{ "interpreter_frame", "size previous executable instr_ptr localsplus owner "
	  "stackpointer tlbc_index" },
	{ "code_object", "size filename name qualname linetable firstlineno argcount "
	  "localsplusnames localspluskinds co_code_adaptive co_tlbc" },
	{ "pyobject", "size ob_type" },
	{ "type_object", "size tp_name tp_repr tp_flags" },
	{ "tuple_object", "size ob_item ob_size" },
	{ "list_object", "size ob_item ob_size" },
	{ "set_object", "size used table mask" },
	{ "dict_object", "size ma_keys ma_values" },
	{ "float_object", "size ob_fval" },
	{ "long_object", "size lv_tag ob_digit" },
	{ "bytes_object", "size ob_size ob_sval" },
	{ "unicode_object", "size state length asciiobject_size" },
	{ "gc", "size collecting" },
	{ "gen_object", "size gi_name gi_iframe gi_frame_state" },
	{ "llist_node", "next prev" },
	{ "debugger_support", "eval_breaker remote_debugger_support remote_debugging_enabled "
	  "debugger_pending_call debugger_script_path debugger_script_path_size" },
	{ NULL, NULL },
};

/* 3.15: thread_state gained base_frame and the GIL/exception words, type_object
 * two words, unicode_object the compact size, gc three words; err_stackitem
 * and heap_type_object added */
static const struct section LAYOUT_315[] = {
	{ "runtime_state", "size finalizing interpreters_head" },
	{ "interpreter_state", "size id next threads_head threads_main gc imports_modules "
	  "sysdict builtins ceval_gil gil_runtime_state gil_runtime_state_enabled "
	  "gil_runtime_state_locked gil_runtime_state_holder code_object_generation "
	  "tlbc_generation" },
	{ "thread_state", "size prev next interp current_frame base_frame last_profiled_frame "
	  "last_profiled_frame_seq thread_id native_thread_id datastack_chunk status holds_gil "
	  "gil_requested current_exception exc_state" },
	{ "err_stackitem", "exc_value" },
	{ "interpreter_frame", "size previous executable instr_ptr localsplus owner "
	  "stackpointer tlbc_index" },
	{ "code_object", "size filename name qualname linetable firstlineno argcount "
	  "localsplusnames localspluskinds co_code_adaptive co_tlbc" },
	{ "pyobject", "size ob_type" },
	{ "type_object", "size tp_name tp_repr tp_flags tp_basicsize tp_dictoffset" },
	{ "heap_type_object", "size ht_cached_keys" },
	{ "tuple_object", "size ob_item ob_size" },
	{ "list_object", "size ob_item ob_size" },
	{ "set_object", "size used table mask" },
	{ "dict_object", "size ma_keys ma_values" },
	{ "float_object", "size ob_fval" },
	{ "long_object", "size lv_tag ob_digit" },
	{ "bytes_object", "size ob_size ob_sval" },
	{ "unicode_object", "size state length asciiobject_size compactunicodeobject_size" },
	{ "gc", "size collecting frame =generation_stats_size generation_stats" },
	{ "gen_object", "size gi_name gi_iframe gi_frame_state" },
	{ "llist_node", "next prev" },
	{ "debugger_support", "eval_breaker remote_debugger_support remote_debugging_enabled "
	  "debugger_pending_call debugger_script_path debugger_script_path_size" },
	{ NULL, NULL },
};

static const struct layout LAYOUTS[] = {
	{ 13, LAYOUT_313, .owner_shim = 3, .code_tag_bits = 0 },
	{ 14, LAYOUT_314, .owner_shim = 3, .code_tag_bits = 3 },
	{ 15, LAYOUT_315, .owner_shim = 3, .code_tag_bits = 3 },
};
#define NLAYOUTS (sizeof(LAYOUTS) / sizeof(LAYOUTS[0]))

/* Size ranges: generous bounds for the C struct each section describes
 * (3.13.0: runtime 283320, interpreter 194968, thread 304, frame 80, code
 * 208, type 416 bytes); they only have to tell a size from an offset or a
 * stray word.  A section not listed here is not checked for its size. */
static const struct {
	const char *name;
	uint64_t min, max;
} SIZE_RANGES[] = {
	{ "runtime_state", 256, 64u << 20 },
	{ "interpreter_state", 256, 64u << 20 },
	{ "thread_state", 64, 1u << 20 },
	{ "interpreter_frame", 32, 4096 },
	{ "code_object", 64, 4096 },
	{ "pyobject", 16, 64 },
	{ "type_object", 128, 4096 },
	{ "tuple_object", 24, 256 },
	{ "list_object", 24, 256 },
	{ "dict_object", 24, 256 },
	{ "float_object", 24, 256 },
	{ "long_object", 24, 256 },
	{ "bytes_object", 24, 256 },
	{ "unicode_object", 32, 256 },
	{ "gc", 8, 1u << 20 },
};

/* Fields we copy into struct py_offsets: "section.word", required alignment. */
enum {
	U_INTERP_HEAD, U_THREADS_HEAD, U_TS_NEXT, U_TS_FRAME, U_TS_THREAD_ID,
	U_FR_PREVIOUS, U_FR_EXECUTABLE, U_FR_INSTR, U_FR_OWNER,
	U_CO_FILENAME, U_CO_NAME, U_CO_QUALNAME, U_CO_LINETABLE, U_CO_FIRSTLINENO, U_CO_ADAPTIVE,
	U_BYTES_SIZE, U_BYTES_SVAL, U_STR_STATE, U_STR_LENGTH, U_STR_ASCII_SIZE,
	U_OB_SIZE, U_OB_TYPE, U_TUPLE_SIZE, U_LIST_SIZE, U_STR_SIZE,
	U_GIL_STATE, U_GIL_LOCKED, U_GIL_HOLDER, U_GC, U_GC_COLLECTING,
	U_INTERP_NEXT, U_INTERP_ID, U_NR
};

static const struct {
	const char *name;
	unsigned align;
} USED[U_NR] = {
	[U_INTERP_HEAD] = { "runtime_state.interpreters_head", 8 },
	[U_THREADS_HEAD] = { "interpreter_state.threads_head", 8 },
	[U_TS_NEXT] = { "thread_state.next", 8 },
	[U_TS_FRAME] = { "thread_state.current_frame", 8 },
	[U_TS_THREAD_ID] = { "thread_state.thread_id", 8 },
	[U_FR_PREVIOUS] = { "interpreter_frame.previous", 8 },
	[U_FR_EXECUTABLE] = { "interpreter_frame.executable", 8 },
	[U_FR_INSTR] = { "interpreter_frame.instr_ptr", 8 },
	[U_FR_OWNER] = { "interpreter_frame.owner", 1 },
	[U_CO_FILENAME] = { "code_object.filename", 8 },
	[U_CO_NAME] = { "code_object.name", 8 },
	[U_CO_QUALNAME] = { "code_object.qualname", 8 },
	[U_CO_LINETABLE] = { "code_object.linetable", 8 },
	[U_CO_FIRSTLINENO] = { "code_object.firstlineno", 4 },
	[U_CO_ADAPTIVE] = { "code_object.co_code_adaptive", 2 },
	[U_BYTES_SIZE] = { "bytes_object.ob_size", 8 },
	[U_BYTES_SVAL] = { "bytes_object.ob_sval", 1 },
	[U_STR_STATE] = { "unicode_object.state", 4 },
	[U_STR_LENGTH] = { "unicode_object.length", 8 },
	/* sizes, not offsets, but small and 8-aligned all the same */
	[U_STR_ASCII_SIZE] = { "unicode_object.asciiobject_size", 8 },
	[U_OB_SIZE] = { "pyobject.size", 8 },
	[U_OB_TYPE] = { "pyobject.ob_type", 8 },
	[U_TUPLE_SIZE] = { "tuple_object.ob_size", 8 },
	[U_LIST_SIZE] = { "list_object.ob_size", 8 },
	[U_STR_SIZE] = { "unicode_object.size", 8 },
	/* the interpreter's own GIL and two of its fields, all three offsets
	 * into PyInterpreterState (offsetof(PyInterpreterState, _gil.locked)) */
	[U_GIL_STATE] = { "interpreter_state.gil_runtime_state", 8 },
	[U_GIL_LOCKED] = { "interpreter_state.gil_runtime_state_locked", 4 },
	[U_GIL_HOLDER] = { "interpreter_state.gil_runtime_state_holder", 8 },
	/* the interpreter's GC state, and its int collecting in it */
	[U_GC] = { "interpreter_state.gc", 8 },
	[U_GC_COLLECTING] = { "gc.collecting", 4 },
	/* the interpreters' list (subinterpreters) */
	[U_INTERP_NEXT] = { "interpreter_state.next", 8 },
	[U_INTERP_ID] = { "interpreter_state.id", 8 },
};

struct reader {
	const unsigned char *buf;
	const struct layout *lay;
	uint64_t val[U_NR];
	char *err;
	size_t errlen;
};

static uint64_t rd_u64(const unsigned char *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));  /* target and host share byte order */
	return v;
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

/* The next word name in *p (advanced past it): start and length, 0 at the end. */
static size_t next_word(const char **p, const char **start)
{
	const char *s = *p;
	size_t n = 0;

	while (*s == ' ')
		s++;
	*start = s;
	while (s[n] && s[n] != ' ')
		n++;
	*p = s + n;
	return n;
}

static size_t count_words(const char *words)
{
	const char *p = words, *w;
	size_t n = 0;

	while (next_word(&p, &w))
		n++;
	return n;
}

/* Bytes of the block in this layout. */
static size_t layout_bytes(const struct layout *lay)
{
	size_t n = HEAD_BYTES;

	for (const struct section *s = lay->sections; s->name; s++)
		n += 8 * count_words(s->words);
	return n;
}

/* Byte offset in the block of "section.word", or 0 when the layout has no
 * such word (the head is never a section, so 0 is free). */
static size_t word_offset(const struct layout *lay, const char *dotted)
{
	const char *dot = strchr(dotted, '.'), *p, *w;
	size_t pos = HEAD_BYTES, n;

	if (!dot)
		return 0;
	for (const struct section *s = lay->sections; s->name; s++) {
		bool here = strlen(s->name) == (size_t)(dot - dotted) &&
			    !strncmp(s->name, dotted, (size_t)(dot - dotted));

		for (p = s->words; (n = next_word(&p, &w)); pos += 8) {
			if (*w == '=') {
				w++;
				n--;
			}
			if (here && strlen(dot + 1) == n && !strncmp(w, dot + 1, n))
				return pos;
		}
	}
	return 0;
}

static const struct layout *layout_for(int minor)
{
	for (size_t i = 0; i < NLAYOUTS; i++)
		if (LAYOUTS[i].minor == minor)
			return &LAYOUTS[i];
	return NULL;
}

/* every section with a size: size in range, every offset below the size */
static int check_sections(const struct reader *r)
{
	size_t pos = HEAD_BYTES;
	int minor = r->lay->minor;

	for (const struct section *s = r->lay->sections; s->name; s++) {
		const char *p = s->words, *w;
		size_t n, first = pos;
		uint64_t size = 0, lo = 1, hi = UINT64_MAX;
		bool sized = false;

		for (; (n = next_word(&p, &w)); pos += 8) {
			uint64_t v = rd_u64(r->buf + pos);

			if (pos == first && n == 4 && !strncmp(w, "size", 4)) {
				sized = true;
				size = v;
				for (size_t i = 0; i < sizeof(SIZE_RANGES) / sizeof(SIZE_RANGES[0]); i++)
					if (!strcmp(SIZE_RANGES[i].name, s->name)) {
						lo = SIZE_RANGES[i].min;
						hi = SIZE_RANGES[i].max;
					}
				if (size < lo || size > hi)
					return fail(r->err, r->errlen,
						    "%s.size = %" PRIu64 " outside %" PRIu64 "..%" PRIu64
						    ": not the 3.%d layout", s->name, size, lo, hi, minor);
				continue;
			}
			if (sized && *w != '=' && v >= size)
				return fail(r->err, r->errlen,
					    "%s word %zu = %" PRIu64 " not below its size %" PRIu64
					    ": not the 3.%d layout",
					    s->name, (pos - first) / 8, v, size, minor);
		}
	}
	return 0;
}

/* fields we use: present in the layout, fit the u16 table, aligned */
static int read_used(struct reader *r)
{
	for (unsigned u = 0; u < U_NR; u++) {
		size_t at = word_offset(r->lay, USED[u].name);
		uint64_t v;

		if (!at)  /* a mistake in LAYOUTS, not in the target */
			return fail(r->err, r->errlen, "internal: the 3.%d layout lacks %s",
				    r->lay->minor, USED[u].name);
		v = rd_u64(r->buf + at);
		if (v >= PYPERF_NO_OFFSET)
			return fail(r->err, r->errlen, "%s = %" PRIu64 " too large for the table",
				    USED[u].name, v);
		if (v % USED[u].align)
			return fail(r->err, r->errlen, "%s = %" PRIu64 " not %u-aligned",
				    USED[u].name, v, USED[u].align);
		r->val[u] = v;
	}
	return 0;
}

/* a field we can do without: its value when the layout has it, fits the u16
 * table and is 8-aligned, else PYPERF_NO_OFFSET */
static __u16 optional_offset(const struct reader *r, const char *name)
{
	size_t at = word_offset(r->lay, name);
	uint64_t v = at ? rd_u64(r->buf + at) : PYPERF_NO_OFFSET;

	return v < PYPERF_NO_OFFSET && v % 8 == 0 ? (__u16)v : PYPERF_NO_OFFSET;
}

/* values that different sections must agree on */
static int check_consistency(const struct reader *r)
{
	const uint64_t *u = r->val;
	uint64_t ob_head = u[U_OB_SIZE], ob_type = u[U_OB_TYPE];
	uint64_t ascii = u[U_STR_ASCII_SIZE], str_size = u[U_STR_SIZE];
	uint64_t state = u[U_STR_STATE], length = u[U_STR_LENGTH];
	uint64_t frame_max = 0;
	size_t compact_at = word_offset(r->lay, "unicode_object.compactunicodeobject_size");
	int minor = r->lay->minor;

	if (ob_head % 8 || ob_type + 8 != ob_head)
		return fail(r->err, r->errlen,
			    "PyObject of %" PRIu64 " bytes with ob_type at %" PRIu64
			    ": not the 3.%d layout", ob_head, ob_type, minor);
	/* ob_size follows the PyObject header in every variable-size object */
	if (u[U_TUPLE_SIZE] != ob_head || u[U_LIST_SIZE] != ob_head || u[U_BYTES_SIZE] != ob_head)
		return fail(r->err, r->errlen,
			    "ob_size of tuple/list/bytes (%" PRIu64 "/%" PRIu64 "/%" PRIu64
			    ") does not follow the %" PRIu64 "-byte object header: not the 3.%d layout",
			    u[U_TUPLE_SIZE], u[U_LIST_SIZE], u[U_BYTES_SIZE], ob_head, minor);
	if (u[U_BYTES_SVAL] <= u[U_BYTES_SIZE])
		return fail(r->err, r->errlen, "bytes ob_sval at %" PRIu64 " not after ob_size",
			    u[U_BYTES_SVAL]);
	/* str: length right after the header, then hash, state; the ASCII
	 * header ends after state */
	if (length != ob_head || state <= length || state + 4 > ascii)
		return fail(r->err, r->errlen,
			    "str length %" PRIu64 ", state %" PRIu64 ", header %" PRIu64
			    ": not the 3.%d layout", length, state, ascii, minor);
	/* sizeof(PyCompactUnicodeObject): 3.15 carries it; before, it is derived.
	 * PyUnicodeObject is PyCompactUnicodeObject plus one data pointer, and
	 * PyCompactUnicodeObject is PyASCIIObject plus utf8_length and utf8 (16
	 * bytes).  The sizes we do get must bear that out. */
	if (ascii + COMPACT_EXTRA + 8 != str_size ||
	    (compact_at && rd_u64(r->buf + compact_at) != ascii + COMPACT_EXTRA))
		return fail(r->err, r->errlen,
			    "sizeof(PyUnicodeObject) %" PRIu64 " is not PyASCIIObject %" PRIu64
			    " + %d: str layout changed", str_size, ascii, COMPACT_EXTRA + 8);
	/* the BPF program reads the first PYPERF_FRAME_READ_MAX bytes of a frame */
	for (unsigned f = U_FR_PREVIOUS; f <= U_FR_INSTR; f++)
		if (u[f] + 8 > frame_max)
			frame_max = u[f] + 8;
	if (u[U_FR_OWNER] + 1 > frame_max)
		frame_max = u[U_FR_OWNER] + 1;
	if (frame_max > PYPERF_FRAME_READ_MAX)
		return fail(r->err, r->errlen,
			    "frame fields reach byte %" PRIu64 ", the sampler reads only %d",
			    frame_max, PYPERF_FRAME_READ_MAX);
	if (u[U_FR_PREVIOUS] == u[U_FR_EXECUTABLE] || u[U_FR_PREVIOUS] == u[U_FR_INSTR] ||
	    u[U_FR_EXECUTABLE] == u[U_FR_INSTR] || u[U_FR_OWNER] / 8 == u[U_FR_PREVIOUS] / 8 ||
	    u[U_FR_OWNER] / 8 == u[U_FR_EXECUTABLE] / 8 || u[U_FR_OWNER] / 8 == u[U_FR_INSTR] / 8)
		return fail(r->err, r->errlen, "frame fields overlap: not the 3.%d layout", minor);
	return 0;
}

size_t py_debug_offsets_size(int minor)
{
	const struct layout *lay = layout_for(minor);

	return lay ? layout_bytes(lay) : 0;
}

int py_debug_offsets_parse(const void *buf, size_t len, struct py_offsets *out,
			   uint64_t *version_hex, char *err, size_t errlen)
{
	struct reader r = { .buf = buf, .err = err, .errlen = errlen };
	const struct py_offsets *t;
	struct py_offsets o;
	uint64_t ver, ft;
	int minor;
	size_t need;

	if (err && errlen)
		err[0] = 0;
	if (!buf || len < HEAD_BYTES)
		return fail(err, errlen, "buffer of %zu bytes is too short", buf ? len : 0);
	if (memcmp(buf, COOKIE, sizeof(COOKIE) - 1))
		return fail(err, errlen, "no \"%s\" cookie: not a CPython 3.13+ runtime", COOKIE);
	ver = rd_u64(r.buf + 8);
	ft = rd_u64(r.buf + 16);
	if (version_hex)
		*version_hex = ver;
	minor = (int)((ver >> 16) & 0xff);
	if ((ver >> 24) != 3 || minor < MIN_MINOR)
		return fail(err, errlen, "version 0x%08" PRIx64 " is not 3.13 or a later 3.x", ver);
	r.lay = layout_for(minor);
	if (!r.lay)
		return fail(err, errlen,
			    "CPython 3.%d is newer than this pyperf-bpf knows (its layout is "
			    "known for 3.13 to 3.%d)", minor, LAYOUTS[NLAYOUTS - 1].minor);
	if (ft == 1)
		return fail(err, errlen, "free-threaded (no-GIL) CPython 3.%d is not supported",
			    minor);
	if (ft != 0)
		return fail(err, errlen, "free_threaded = %" PRIu64 ": not the 3.%d layout", ft,
			    minor);
	need = layout_bytes(r.lay);
	if (len < need)
		return fail(err, errlen, "buffer of %zu bytes, the 3.%d layout needs %zu", len,
			    minor, need);

	if (check_sections(&r) || read_used(&r) || check_consistency(&r))
		return -1;

	memset(&o, 0, sizeof(o));
	o.runtime_interp_head = (__u16)r.val[U_INTERP_HEAD];
	o.interp_threads_head = (__u16)r.val[U_THREADS_HEAD];
	o.interp_next = (__u16)r.val[U_INTERP_NEXT];
	o.interp_id = (__u16)r.val[U_INTERP_ID];
	o.tstate_next = (__u16)r.val[U_TS_NEXT];
	o.tstate_thread_id = (__u16)r.val[U_TS_THREAD_ID];
	o.tstate_frame = (__u16)r.val[U_TS_FRAME];
	o.cframe_current_frame = PYPERF_NO_OFFSET;  /* no _PyCFrame since 3.13 */
	o.frame_back = (__u16)r.val[U_FR_PREVIOUS];
	o.frame_code = (__u16)r.val[U_FR_EXECUTABLE];
	o.frame_instr = (__u16)r.val[U_FR_INSTR];
	o.frame_owner = (__u16)r.val[U_FR_OWNER];
	o.frame_is_entry = PYPERF_NO_OFFSET; /* 3.12+ mark entries with shim frames */
	o.instr_kind = INSTR_POINTER;
	o.owner_shim = r.lay->owner_shim;
	o.code_firstlineno = (__u16)r.val[U_CO_FIRSTLINENO];
	o.code_adaptive = (__u16)r.val[U_CO_ADAPTIVE];
	o.code_filename = (__u16)r.val[U_CO_FILENAME];
	o.code_name = (__u16)r.val[U_CO_NAME];
	o.code_qualname = (__u16)r.val[U_CO_QUALNAME];
	o.code_linetable = (__u16)r.val[U_CO_LINETABLE];
	o.linetable_kind = LT_LOCATIONS;
	o.code_tag_bits = r.lay->code_tag_bits;
	o.unicode_state = (__u16)r.val[U_STR_STATE];
	o.unicode_length = (__u16)r.val[U_STR_LENGTH];
	o.unicode_ascii_size = (__u16)r.val[U_STR_ASCII_SIZE];
	/* checked in check_consistency: equals sizeof(PyCompactUnicodeObject) */
	o.unicode_compact_size = (__u16)(r.val[U_STR_ASCII_SIZE] + COMPACT_EXTRA);
	o.bytes_size = (__u16)r.val[U_BYTES_SIZE];
	o.bytes_sval = (__u16)r.val[U_BYTES_SVAL];
	/* ours are offsets into struct _gil_runtime_state, as the table's */
	if (r.val[U_GIL_LOCKED] >= r.val[U_GIL_STATE] && r.val[U_GIL_HOLDER] >= r.val[U_GIL_STATE] &&
	    r.val[U_GIL_LOCKED] - r.val[U_GIL_STATE] < 256 &&
	    r.val[U_GIL_HOLDER] - r.val[U_GIL_STATE] < 256) {
		o.gil_in = GIL_IN_INTERP;
		o.gil_state = (__u16)r.val[U_GIL_STATE];
		o.gil_locked = (__u16)(r.val[U_GIL_LOCKED] - r.val[U_GIL_STATE]);
		o.gil_holder = (__u16)(r.val[U_GIL_HOLDER] - r.val[U_GIL_STATE]);
	} /* else GIL_UNKNOWN: --gil says so for this process */
	/* the collector's flag, PyInterpreterState.gc.collecting (<GC> frames) */
	o.gc_in = GIL_UNKNOWN;
	o.gc_collecting = PYPERF_NO_OFFSET;
	if (r.val[U_GC] + r.val[U_GC_COLLECTING] < PYPERF_NO_OFFSET) {
		o.gc_in = GIL_IN_INTERP;
		o.gc_collecting = (__u16)(r.val[U_GC] + r.val[U_GC_COLLECTING]);
	}
	/* both are read in the thread's own interpreter, through
	 * PyThreadState.interp at the place py_state.h knows it */
	if (optional_offset(&r, "thread_state.interp") != PY_TSTATE_INTERP) {
		o.gil_in = o.gc_in = GIL_UNKNOWN;
		o.gc_collecting = PYPERF_NO_OFFSET;
	}
	/* the word whose bit PY_TSTATE_ACTIVE marks a thread's current state
	 * (3.13+ publish where it is; without it the sampler looks at the
	 * list of interpreters every sample) */
	o.tstate_status = optional_offset(&r, "thread_state.status");
	/* asyncio's two (--async): optional, a value we cannot use only turns
	 * async stacks off; 3.13 publishes no gen_object section, the value
	 * measured from its headers stands in */
	o.interp_modules = optional_offset(&r, "interpreter_state.imports_modules");
	o.gen_iframe = optional_offset(&r, "gen_object.gi_iframe");
	if (o.gen_iframe == PYPERF_NO_OFFSET && (t = py_offsets_for_version(3, minor)))
		o.gen_iframe = t->gen_iframe;
	/* where a suspended coroutine's awaited object is: 3.14+ publish the
	 * stack pointer; 3.13's int stacktop is not published */
	o.frame_localsplus = optional_offset(&r, "interpreter_frame.localsplus");
	o.frame_stack = optional_offset(&r, "interpreter_frame.stackpointer");
	o.stack_kind = o.frame_stack == PYPERF_NO_OFFSET ? PYSTACK_NONE : PYSTACK_POINTER;
	if (o.stack_kind == PYSTACK_NONE && (t = py_offsets_for_version(3, minor)) &&
	    t->frame_localsplus == o.frame_localsplus) {
		o.frame_stack = t->frame_stack;
		o.stack_kind = t->stack_kind;
	}
	/* what only the loader reads (locals, attributes), unpublished: the
	 * version table's, where its code object and frame agree with these */
	o.code_argcount = o.code_kwonlyargcount = o.code_flags = o.code_nlocals = PYPERF_NO_OFFSET;
	o.code_varnames = o.code_localskinds = o.code_cellvars = o.tuple_items = PYPERF_NO_OFFSET;
	o.frame_globals = PYPERF_NO_OFFSET;
	o.type_flags = o.type_dictoffset = o.type_cached_keys = PYPERF_NO_OFFSET;
	o.obj_layout = PYOBJ_UNKNOWN;
	if ((t = py_offsets_for_version(3, minor)) && t->code_filename == o.code_filename &&
	    t->code_name == o.code_name && t->code_adaptive == o.code_adaptive &&
	    (o.frame_localsplus == PYPERF_NO_OFFSET || t->frame_localsplus == o.frame_localsplus)) {
		o.frame_localsplus = t->frame_localsplus;
		if (t->frame_back == o.frame_back && t->frame_code == o.frame_code &&
		    t->frame_instr == o.frame_instr)
			o.frame_globals = t->frame_globals;
		o.code_argcount = t->code_argcount;
		o.code_kwonlyargcount = t->code_kwonlyargcount;
		o.code_flags = t->code_flags;
		o.code_nlocals = t->code_nlocals;
		o.code_varnames = t->code_varnames;
		o.code_localskinds = t->code_localskinds;
		o.code_cellvars = t->code_cellvars;
		o.tuple_items = t->tuple_items;
		o.type_flags = t->type_flags;
		o.type_dictoffset = t->type_dictoffset;
		o.type_cached_keys = t->type_cached_keys;
		o.obj_layout = t->obj_layout;
	}
	*out = o;
	return 0;
}
