/* pyread.c - read Python objects from a live process with process_vm_readv.
 *
 * Strings: a compact str keeps its characters right after the object header:
 * after PyASCIIObject when all are ASCII, after PyCompactUnicodeObject
 * otherwise, 1, 2 or 4 bytes each (the `kind` bits of `state`).  They are
 * converted to UTF-8.  A name or path longer than PYREAD_MAX_CHARS is cut
 * there and marked ("...[cut: N characters]"): shown, never dropped.
 * Code objects: one read of the header gives the pointers to name, file and
 * line table, and what py_code_check() needs to confirm the address still
 * holds the code object the sampler saw.
 * Freed objects: a code object is named after its sample, and may have been
 * freed since (code run once by exec, a module torn down at exit).  Its
 * memory keeps the old fields until reused, so it passes the check, and
 * its name and file, still alive, are most often right; but they may have
 * been freed with it and now hold anything.  What a free leaves behind
 * tells: pymalloc (objects up to 512 bytes) links the block into its pool's
 * free list through the first word, ob_refcnt, which then is 0 or a pointer
 * into the same arena (1 MiB at most); glibc writes its own links over the
 * first two words, ob_type among them.  A live object's count is neither
 * (an immortal one's is a small constant), and its type is the type object
 * the interpreter exports.  So a code object's name and file must look
 * alive, and so must the code object unless glibc had it (its type gone):
 * a code object freed with its strings intact, from pymalloc or glibc (a
 * module's body, run once at import), is still shown, its fields matching
 * the check the sampler took. */
#include "pyread.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#define MAX_OBJ_BYTES (1u << 20) /* sanity bound on a line table */
#define MAX_STR_LEN ((1ull << 62) / 4) /* a str's length cannot be more */
#define ARENA_SPAN (1ull << 20)        /* pymalloc's largest arena */

static uint64_t reads;

uint64_t mem_read_count(void)
{
	return __atomic_load_n(&reads, __ATOMIC_RELAXED);
}

int mem_read(int pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = { buf, len }, remote = { (void *)(uintptr_t)addr, len };
	ssize_t n = process_vm_readv(pid, &local, 1, &remote, 1, 0);

	__atomic_fetch_add(&reads, 1, __ATOMIC_RELAXED);
	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EFAULT;
}

static uint64_t field_ptr(const uint8_t *hdr, uint16_t off)
{
	uint64_t v;

	memcpy(&v, hdr + off, sizeof(v));
	return v;
}

/* append code point c to out as UTF-8 */
static size_t put_utf8(char *out, uint32_t c)
{
	if (c < 0x80) {
		out[0] = (char)c;
		return 1;
	}
	if (c < 0x800) {
		out[0] = (char)(0xc0 | (c >> 6));
		out[1] = (char)(0x80 | (c & 0x3f));
		return 2;
	}
	if (c < 0x10000) {
		out[0] = (char)(0xe0 | (c >> 12));
		out[1] = (char)(0x80 | ((c >> 6) & 0x3f));
		out[2] = (char)(0x80 | (c & 0x3f));
		return 3;
	}
	out[0] = (char)(0xf0 | (c >> 18));
	out[1] = (char)(0x80 | ((c >> 12) & 0x3f));
	out[2] = (char)(0x80 | ((c >> 6) & 0x3f));
	out[3] = (char)(0x80 | (c & 0x3f));
	return 4;
}

/* UTF-8 of a str's characters, or NULL when they cannot be a str's (an
 * object read mid-construction or after it was freed).  Lone surrogates, which
 * a str may hold (surrogateescape'd file names), become U+FFFD so the output
 * stays valid UTF-8; so do control characters (a file name may hold a
 * newline, a freed string anything), which would break a folded line. */
static char *to_utf8(const uint8_t *data, uint64_t length, unsigned kind, uint64_t whole,
		     bool raw, size_t *bytes)
{
	char *out = malloc(length * 4 + 48), *p = out;

	if (!out)
		return NULL;
	for (uint64_t i = 0; i < length; i++) {
		uint32_t c;

		if (kind == 1)
			c = data[i];
		else if (kind == 2)
			c = (uint32_t)data[2 * i] | (uint32_t)data[2 * i + 1] << 8;
		else
			c = (uint32_t)data[4 * i] | (uint32_t)data[4 * i + 1] << 8 |
			    (uint32_t)data[4 * i + 2] << 16 | (uint32_t)data[4 * i + 3] << 24;
		if (c > 0x10ffff) {
			free(out);
			return NULL;
		}
		/* a lone surrogate is no UTF-8; a NUL would end the name early,
		 * a newline the output's line */
		if ((c >= 0xd800 && c <= 0xdfff) || (!raw && (c < 0x20 || c == 0x7f)))
			c = 0xfffd;
		p += put_utf8(p, c);
	}
	if (bytes)
		*bytes = (size_t)(p - out);
	if (raw)
		*p = 0;
	else if (whole > length)
		sprintf(p, "...[cut: %llu characters]", (unsigned long long)whole);
	else
		*p = 0;
	return out;
}

/* does an "ASCII" string hold a byte that is not? (then it is not a str) */
static bool memchr_high(const uint8_t *data, uint64_t len)
{
	for (uint64_t i = 0; i < len; i++)
		if (data[i] & 0x80)
			return true;
	return false;
}

/* Is the object at addr, whose header is hdr, of type `type` and, when
 * `alive`, not freed (see the top of this file)?  type 0: not checked. */
static bool of_type(const uint8_t *hdr, uint64_t addr, uint64_t type, bool alive)
{
	uint64_t refcnt, ob_type;

	if (!type)
		return true;
	memcpy(&refcnt, hdr, sizeof(refcnt));
	memcpy(&ob_type, hdr + PY_OB_TYPE, sizeof(ob_type));
	if (ob_type != type)
		return false;
	return !alive || (refcnt && refcnt - addr + ARENA_SPAN >= 2 * ARENA_SPAN);
}

/* the first max characters of str obj (of type `type`, 0: not checked) as
 * UTF-8; raw: control characters and NULs kept (*bytes long, *whole
 * characters in all), else made U+FFFD and a cut marked */
static char *read_str(int pid, uint64_t obj, const struct py_offsets *o, uint64_t type,
		      uint64_t max, bool raw, size_t *bytes, uint64_t *whole_out)
{
	uint8_t hdr[128];
	uint64_t length, whole;
	uint32_t state;
	unsigned kind, compact, ascii;
	uint8_t *data;
	char *s;

	if (!obj || o->unicode_ascii_size > sizeof(hdr) || o->unicode_ascii_size < PY_OB_TYPE + 8 ||
	    mem_read(pid, obj, hdr, o->unicode_ascii_size) || !of_type(hdr, obj, type, true))
		return NULL;
	memcpy(&length, hdr + o->unicode_length, sizeof(length));
	memcpy(&state, hdr + o->unicode_state, sizeof(state));
	kind = (state >> 2) & 7;
	compact = (state >> 5) & 1;
	ascii = (state >> 6) & 1;
	if (!compact || (kind != 1 && kind != 2 && kind != 4) || length > MAX_STR_LEN)
		return NULL;
	whole = length;
	if (whole_out)
		*whole_out = whole;
	if (length > max)
		length = max;
	data = malloc(length * kind + 1);
	if (!data)
		return NULL;
	if (mem_read(pid, obj + (ascii ? o->unicode_ascii_size : o->unicode_compact_size), data,
		     length * kind)) {
		free(data);
		return NULL;
	}
	s = NULL;
	if (!ascii || kind != 1 || !memchr_high(data, length))
		s = to_utf8(data, length, kind, whole, raw, bytes);
	free(data);
	return s;
}

char *pyread_str(int pid, uint64_t obj, const struct py_offsets *o)
{
	return read_str(pid, obj, o, 0, PYREAD_MAX_CHARS, false, NULL, NULL);
}

char *pyread_str_value(int pid, uint64_t obj, const struct py_offsets *o, size_t max,
		       size_t *bytes, uint64_t *chars)
{
	return read_str(pid, obj, o, 0, max, true, bytes, chars);
}

static uint8_t *read_bytes(int pid, uint64_t obj, const struct py_offsets *o, uint64_t type,
			   size_t *len)
{
	uint8_t hdr[64];
	int64_t size;
	uint8_t *data;

	if (!obj || o->bytes_size + 8u > sizeof(hdr) || o->bytes_size < PY_OB_TYPE + 8 ||
	    mem_read(pid, obj, hdr, o->bytes_size + 8u) || !of_type(hdr, obj, type, true))
		return NULL;
	memcpy(&size, hdr + o->bytes_size, sizeof(size));
	if (size < 0 || size > MAX_OBJ_BYTES)
		return NULL;
	data = malloc(size ? size : 1);
	if (!data)
		return NULL;
	if (mem_read(pid, obj + o->bytes_sval, data, size)) {
		free(data);
		return NULL;
	}
	*len = size;
	return data;
}

uint8_t *pyread_bytes(int pid, uint64_t obj, const struct py_offsets *o, size_t *len)
{
	return read_bytes(pid, obj, o, 0, len);
}

static size_t code_header_len(const struct py_offsets *o)
{
	uint16_t offs[] = { o->code_firstlineno, o->code_filename, o->code_name,
			    o->code_qualname, o->code_linetable };
	size_t m = PY_OB_TYPE + 8;

	for (size_t i = 0; i < sizeof(offs) / sizeof(offs[0]); i++)
		if (offs[i] != PYPERF_NO_OFFSET && offs[i] + 8u > m)
			m = offs[i] + 8u;
	return m;
}

/* Is the str at obj still the one the walk saw (its length, hash and last
 * bytes then)?  Memory of a freed str reused by another str fails this but
 * for a clash of all three (where the hash was not computed then, of length
 * and last bytes: "<gen 109>" and "<gen 215>" differ only there). */
static bool str_as_seen(int pid, uint64_t obj, const struct py_offsets *o,
			const struct str_seen *seen)
{
	int64_t now[2]; /* PyASCIIObject: the length, then the hash */
	uint8_t hdr[128], tail[STR_TAIL];
	uint32_t state;
	unsigned kind;
	uint64_t bytes;

	if (seen->length < 0)
		return true; /* the walk could not read it: nothing to compare */
	if (o->unicode_ascii_size > sizeof(hdr) || o->unicode_length + sizeof(now) > sizeof(hdr) ||
	    o->unicode_state + sizeof(state) > sizeof(hdr) ||
	    mem_read(pid, obj, hdr, o->unicode_ascii_size))
		return false;
	memcpy(now, hdr + o->unicode_length, sizeof(now));
	if (now[0] != seen->length || (seen->hash != -1 && now[1] != seen->hash))
		return false;
	if (!seen->tail_len)
		return true; /* not a compact str then: the length and hash say it */
	memcpy(&state, hdr + o->unicode_state, sizeof(state));
	kind = (state >> 2) & 7;
	if (!((state >> 5) & 1) || (kind != 1 && kind != 2 && kind != 4))
		return false;
	bytes = (uint64_t)now[0] * kind;
	if ((bytes >= STR_TAIL ? STR_TAIL : bytes) != seen->tail_len)
		return false;
	if (mem_read(pid, obj + ((state >> 6) & 1 ? o->unicode_ascii_size : o->unicode_compact_size) +
			      bytes - seen->tail_len, tail, seen->tail_len))
		return false;
	return !memcmp(tail, seen->tail, seen->tail_len);
}

struct func *pyread_code(int pid, uint64_t code, uint32_t check, const struct py_offsets *o,
			 const struct py_types *t, const struct code_id *seen)
{
	uint8_t hdr[512];
	size_t hlen = code_header_len(o);
	int32_t first;
	struct func *f;
	uint64_t file, name;
	uint16_t name_off = o->code_qualname != PYPERF_NO_OFFSET ? o->code_qualname : o->code_name;

	/* A code object run once (a module's body, exec'd code) is often freed
	 * before its sample is named; one larger than pymalloc's 512 bytes goes
	 * back to glibc, whose links overwrite its type.  Its other fields stay
	 * until the memory is reused: it is still named when they pass the
	 * check the sampler took and its name and file are live str objects
	 * (memory reused by another object fails the check, but for 2^-32). */
	if (hlen > sizeof(hdr) || mem_read(pid, code, hdr, hlen) ||
	    (!of_type(hdr, code, t->code, false) && !t->str))
		return NULL;
	memcpy(&first, hdr + o->code_firstlineno, sizeof(first));
	file = field_ptr(hdr, o->code_filename);
	name = field_ptr(hdr, o->code_name);
	if (py_code_check((uint32_t)first, file, name) != check)
		return NULL; /* freed, and the address now holds another code object */
	/* its strings may have been freed with it and their memory reused by
	 * other strings: they must be the ones the walk saw */
	if (seen && seen->check == check && seen->filename == file && seen->name == name &&
	    (!str_as_seen(pid, file, o, &seen->file_seen) ||
	     !str_as_seen(pid, name, o, &seen->name_seen)))
		return NULL;
	/* a freed code object is named by co_name, whose str the walk saw, not
	 * by a qualified name nothing vouches for */
	if (t->code && !of_type(hdr, code, t->code, true))
		name_off = o->code_name;
	f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	f->firstlineno = first;
	f->lt_kind = o->linetable_kind;
	f->name = read_str(pid, field_ptr(hdr, name_off), o, t->str, PYREAD_MAX_CHARS, false, NULL, NULL);
	f->file = read_str(pid, file, o, t->str, PYREAD_MAX_CHARS, false, NULL, NULL);
	f->lt = read_bytes(pid, field_ptr(hdr, o->code_linetable), o, t->bytes, &f->lt_len);
	/* with no types to check, an empty name or file is the sign of a
	 * freed code object's strings */
	if (!f->name || !f->file || !f->name[0] || !f->file[0]) {
		func_free(f);
		return NULL;
	}
	return f;
}

char *pyread_seen_text(const struct str_seen *seen)
{
	unsigned kind = seen->kind;

	if (seen->length <= 0 || (kind != 1 && kind != 2 && kind != 4) ||
	    seen->tail_len > STR_TAIL || seen->tail_len != (uint64_t)seen->length * kind)
		return NULL;
	return to_utf8(seen->tail, (uint64_t)seen->length, kind, 0, false, NULL);
}

struct func *pyread_code_id(int pid, const struct code_id *id, const struct py_offsets *o,
			    const struct py_types *t)
{
	struct func *f;

	if (!t->str || py_code_check(id->firstlineno, id->filename, id->name) != id->check)
		return NULL; /* without str's type nothing tells a freed string */
	f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	f->firstlineno = (int32_t)id->firstlineno;
	f->lt_kind = o->linetable_kind;
	if (str_as_seen(pid, id->name, o, &id->name_seen))
		f->name = read_str(pid, id->name, o, t->str, PYREAD_MAX_CHARS, false, NULL, NULL);
	if (str_as_seen(pid, id->filename, o, &id->file_seen))
		f->file = read_str(pid, id->filename, o, t->str, PYREAD_MAX_CHARS, false, NULL, NULL);
	if (!f->file || !f->file[0]) {
		func_free(f);
		return NULL;
	}
	if (!f->name || !f->name[0]) {
		/* its name died with it (a module's "<module>", once no code
		 * object holds it on 3.11 and before), or its memory is another
		 * str's now: the file and first line still say where it was */
		free(f->name);
		f->name = strdup(PYREAD_FREED_NAME);
		if (!f->name) {
			func_free(f);
			return NULL;
		}
	}
	return f;
}
