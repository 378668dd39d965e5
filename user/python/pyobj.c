/* pyobj.c - see pyobj.h.
 *
 * Dicts: a dict points at a keys object, which holds an index table and then
 * its entries in insertion order: {hash, key, value} up to 3.10 and in 3.11+
 * dicts of any keys; {key, value} in 3.11+ dicts of str keys.  A split dict
 * (the instances of one class sharing their keys) keeps its values apart, in
 * ma_values, entry i's value at slot i.
 * Instances: up to 3.10 an instance's attributes are in the dict at
 * tp_dictoffset.  From 3.11 a class's instances share the keys its
 * ht_cached_keys holds, and each keeps only its values: 3.11 behind a
 * pointer at obj - 32 (a real dict, once made, at obj - 24), 3.12 in the
 * word at obj - 24 (the dict, or the values' address - 1), 3.13+ inline
 * right after the object (a 4-byte header, valid flag last, then the
 * values; the dict at obj - 24 once made).  Ints: 30-bit digits after a
 * signed digit count (up to 3.11) or after lv_tag (3.12+: count << 3 | sign).
 * Layouts that have not changed from 3.8 to 3.15 are constants here (the
 * object headers of Include/); the rest comes from struct py_offsets. */
#include "pyobj.h"
#include "pyread.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TP_NAME 24               /* PyTypeObject.tp_name */
#define TP_BASICSIZE 32          /* PyTypeObject.tp_basicsize */
#define VAR_SIZE 16              /* PyVarObject.ob_size: tuple, list, int (<= 3.11) */
#define DICT_USED 16             /* PyDictObject.ma_used */
#define DICT_KEYS 32             /* PyDictObject.ma_keys */
#define DICT_VALUES 40           /* PyDictObject.ma_values */
#define SET_USED 24              /* PySetObject.used */
#define FLOAT_VALUE 16           /* PyFloatObject.ob_fval */
#define LONG_DIGITS 24           /* the digits of an int, after ob_size / lv_tag */
#define CELL_REF 16              /* PyCellObject.ob_ref */
#define MANAGED_DICT (-24)       /* the managed dict (3.11+) */
#define MANAGED_VALUES (-32)     /* the values (3.11) */
#define INLINE_VALID 3           /* PyDictValues.valid (3.13+) */
#define INLINE_VALUES 8          /* PyDictValues.values (3.13+) */

/* tp_flags bits, the same 3.8 to 3.15 */
#define TPF_INLINE_VALUES (1ul << 2)  /* 3.13+ */
#define TPF_MANAGED_DICT (1ul << 4)   /* 3.11+ */
#define TPF_LONG (1ul << 24)
#define TPF_LIST (1ul << 25)
#define TPF_TUPLE (1ul << 26)
#define TPF_BYTES (1ul << 27)
#define TPF_UNICODE (1ul << 28)
#define TPF_DICT (1ul << 29)

/* co_flags and 3.11+ co_localspluskinds */
#define CO_VARARGS 0x4
#define CO_VARKEYWORDS 0x8
#define FAST_HIDDEN 0x10         /* 3.12+: an inlined comprehension's */
#define FAST_LOCAL 0x20
#define FAST_CELL 0x40
#define FAST_FREE 0x80

#define MAX_ENTRIES 4096         /* dict entries looked at */
#define MAX_FRAMES 100000        /* frames followed to a thread's bottom */
#define STR_SHOWN 100            /* characters of a str or bytes shown */

static uint64_t rd(int pid, uint64_t addr)
{
	uint64_t v = 0;

	return addr && mem_read(pid, addr, &v, sizeof(v)) == 0 ? v : 0;
}

static int32_t rd32(int pid, uint64_t addr)
{
	int32_t v = 0;

	return addr && mem_read(pid, addr, &v, sizeof(v)) == 0 ? v : 0;
}

static bool known(const struct py_offsets *o)
{
	return o->obj_layout != PYOBJ_UNKNOWN && o->code_varnames != PYPERF_NO_OFFSET &&
	       o->frame_localsplus != PYPERF_NO_OFFSET && o->tuple_items != PYPERF_NO_OFFSET;
}

/* the name of type object type ("" when unreadable) */
static void type_name(int pid, uint64_t type, char *out, size_t len)
{
	uint64_t name = rd(pid, type + TP_NAME);

	out[0] = 0;
	if (!name)
		return;
	/* a name near the end of a mapping: read what can be */
	for (size_t n = len - 1; n >= 8; n /= 2)
		if (mem_read(pid, name, out, n) == 0) {
			out[n] = 0;
			return;
		}
	out[0] = 0;
}

/* ---- dicts ---- */

struct keys {
	uint64_t entries;            /* the first entry */
	uint64_t n;                  /* entries in use (deleted ones among them) */
	unsigned esize;              /* 24: hash, key, value; 16: key, value */
};

static bool read_keys(int pid, const struct py_offsets *o, uint64_t keys, struct keys *k)
{
	uint8_t hdr[40];

	if (!keys || mem_read(pid, keys, hdr, sizeof(hdr)))
		return false;
	if (o->obj_layout == PYOBJ_310) {
		/* dk_refcnt, dk_size, dk_lookup, dk_usable, dk_nentries, dk_indices */
		uint64_t size, width;

		memcpy(&size, hdr + 8, 8);
		memcpy(&k->n, hdr + 32, 8);
		if (size > (1ull << 32))
			return false;
		width = size <= 0xff ? 1 : size <= 0xffff ? 2 : 4;
		k->entries = keys + 40 + size * width;
		k->esize = 24;
	} else {
		/* dk_refcnt, dk_log2_size, dk_log2_index_bytes, dk_kind, dk_version,
		 * dk_usable, dk_nentries, dk_indices */
		if (hdr[9] > 34)
			return false;
		memcpy(&k->n, hdr + 24, 8);
		k->entries = keys + 32 + (1ull << hdr[9]);
		k->esize = hdr[10] == 0 ? 24 : 16;
	}
	return true;
}

static bool str_is(int pid, const struct py_offsets *o, uint64_t s, const char *want)
{
	char *got = pyread_str(pid, s, o);
	bool eq = got && !strcmp(got, want);

	free(got);
	return eq;
}

/* The value of str key `name` in keys object `keys`, its values at
 * `values` (slot i for entry i) when not 0, else in the entries. */
static uint64_t keys_find(int pid, const struct py_offsets *o, uint64_t keys, uint64_t values,
			  const char *name)
{
	struct keys k;

	if (!read_keys(pid, o, keys, &k))
		return 0;
	for (uint64_t i = 0; i < k.n && i < MAX_ENTRIES; i++) {
		uint64_t e[3] = { 0 }, key;

		if (mem_read(pid, k.entries + i * k.esize, e, k.esize))
			return 0;
		key = k.esize == 24 ? e[1] : e[0];
		if (key && str_is(pid, o, key, name))
			return values ? rd(pid, values + 8 * i) : (k.esize == 24 ? e[2] : e[1]);
	}
	return 0;
}

static uint64_t dict_find(int pid, const struct py_offsets *o, uint64_t dict, const char *name)
{
	uint64_t values = rd(pid, dict + DICT_VALUES);

	if (values && o->obj_layout >= PYOBJ_313)
		values += INLINE_VALUES;
	return keys_find(pid, o, rd(pid, dict + DICT_KEYS), values, name);
}

uint64_t pyobj_attr(int pid, const struct py_offsets *o, uint64_t obj, const char *name)
{
	uint64_t type = rd(pid, obj + PY_OB_TYPE), flags, d, keys;

	if (!type || !known(o))
		return 0;
	flags = rd(pid, type + o->type_flags);
	keys = rd(pid, type + o->type_cached_keys);
	if (o->obj_layout == PYOBJ_310 || !(flags & TPF_MANAGED_DICT)) {
		int64_t off = (int64_t)rd(pid, type + o->type_dictoffset);

		d = off > 0 && off < 4096 ? rd(pid, obj + (uint64_t)off) : 0;
		return d ? dict_find(pid, o, d, name) : 0;
	}
	d = rd(pid, obj + MANAGED_DICT);
	switch (o->obj_layout) {
	case PYOBJ_311:
		if (d)
			return dict_find(pid, o, d, name);
		d = rd(pid, obj + MANAGED_VALUES);
		return d ? keys_find(pid, o, keys, d, name) : 0;
	case PYOBJ_312:
		if (d & 1)
			return keys_find(pid, o, keys, d + 1, name);
		return d ? dict_find(pid, o, d, name) : 0;
	default: {
		uint64_t values = obj + rd(pid, type + TP_BASICSIZE);
		uint8_t valid = 0;

		if (d)
			return dict_find(pid, o, d, name);
		if (!(flags & TPF_INLINE_VALUES) ||
		    mem_read(pid, values + INLINE_VALID, &valid, 1) || !valid)
			return 0;
		return keys_find(pid, o, keys, values + INLINE_VALUES, name);
	}
	}
}

/* ---- repr ---- */

/* s (n bytes of UTF-8, or of bytes) as a Python literal into out (len > 16):
 * quoted, escaped; bytes: b'...' with \xNN for anything not printable
 * ASCII.  At most STR_SHOWN characters, and what fits in len - 1 bytes with
 * the closing quote: when the text goes on (`more`, or it did not all fit),
 * "..." comes before the closing quote.  Returns whether it is all there. */
static bool quote(const char *s, size_t n, bool bytes, bool more, char *out, size_t len)
{
	char q = memchr(s, '\'', n) && !memchr(s, '"', n) ? '"' : '\'';
	size_t k = 0, shown = 0;

#define PUT(...) (k += (size_t)snprintf(out + k, k < len ? len - k : 0, __VA_ARGS__))
	PUT("%s%c", bytes ? "b" : "", q);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (bytes || (c & 0xc0) != 0x80) {
			/* a character starts here: room for it (at most 4 bytes,
			 * its UTF-8 tail or an escape) and "...'" after it? */
			if (shown == STR_SHOWN || k + 9 >= len) {
				more = true;
				break;
			}
			shown++;
		}
		if (c == '\\' || c == (unsigned char)q)
			PUT("\\%c", c);
		else if (c == '\n')
			PUT("\\n");
		else if (c == '\r')
			PUT("\\r");
		else if (c == '\t')
			PUT("\\t");
		else if (c < 0x20 || c == 0x7f || (bytes && c >= 0x80))
			PUT("\\x%02x", c);
		else
			PUT("%c", c);
	}
	PUT("%s%c", more ? "..." : "", q);
#undef PUT
	return !more;
}

/* the int at obj: its value in *v when it has at most 4 digits (120 bits) */
static bool read_int(int pid, const struct py_offsets *o, uint64_t obj, __int128 *v)
{
	int64_t size = (int64_t)rd(pid, obj + VAR_SIZE);
	uint32_t digits[4];
	uint64_t n;
	bool neg;
	unsigned __int128 m = 0;

	if (o->obj_layout >= PYOBJ_312) {
		n = (uint64_t)size >> 3;
		neg = (size & 3) == 2;
	} else {
		neg = size < 0;
		n = neg ? (uint64_t)-size : (uint64_t)size;
	}
	if (n > 4 || (n && mem_read(pid, obj + LONG_DIGITS, digits, 4 * n)))
		return false;
	while (n--)
		m = (m << 30) | (digits[n] & 0x3fffffffu);
	*v = neg ? -(__int128)m : (__int128)m;
	return true;
}

static void put_int(__int128 v, char *out, size_t len)
{
	char buf[48], *p = buf + sizeof(buf) - 1;
	unsigned __int128 m = v < 0 ? -(unsigned __int128)v : (unsigned __int128)v;

	*p = 0;
	do {
		*--p = (char)('0' + (int)(m % 10));
		m /= 10;
	} while (m);
	if (v < 0)
		*--p = '-';
	snprintf(out, len, "%s", p);
}

/* Python's repr of a float: the shortest text that reads back the same */
static void put_float(double d, char *out, size_t len)
{
	char buf[40];

	if (isnan(d)) {
		snprintf(out, len, "nan");
		return;
	}
	if (isinf(d)) {
		snprintf(out, len, d < 0 ? "-inf" : "inf");
		return;
	}
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(buf, sizeof(buf), "%.*g", prec, d);
		if (strtod(buf, NULL) == d)
			break;
	}
	if (!strpbrk(buf, ".e"))
		strcat(buf, ".0");
	snprintf(out, len, "%s", buf);
}

/* a numpy scalar of type numpy.<name> (bool, the ints and uints, float32,
 * float64: what py-spy shows; their value is right after the object
 * header), as str() shows it, into out; false for other numpy types */
static bool numpy_scalar(int pid, uint64_t obj, const char *name, char *out, size_t len)
{
	static const struct {
		const char *name;
		uint8_t size;
		char how;                /* 'b' bool, 'i' signed, 'u' unsigned, 'f' float */
	} types[] = {
		{ "bool", 1, 'b' }, { "bool_", 1, 'b' },
		{ "int8", 1, 'i' }, { "byte", 1, 'i' }, { "int16", 2, 'i' }, { "short", 2, 'i' },
		{ "int32", 4, 'i' }, { "intc", 4, 'i' }, { "int64", 8, 'i' }, { "long", 8, 'i' },
		{ "longlong", 8, 'i' }, { "intp", 8, 'i' },
		{ "uint8", 1, 'u' }, { "ubyte", 1, 'u' }, { "uint16", 2, 'u' }, { "ushort", 2, 'u' },
		{ "uint32", 4, 'u' }, { "uintc", 4, 'u' }, { "uint64", 8, 'u' }, { "ulong", 8, 'u' },
		{ "ulonglong", 8, 'u' }, { "uintp", 8, 'u' },
		{ "float32", 4, 'f' }, { "single", 4, 'f' }, { "float64", 8, 'f' },
		{ "double", 8, 'f' },
	};
	union {
		uint8_t b[8];
		int8_t i8;
		int16_t i16;
		int32_t i32;
		int64_t i64;
		uint16_t u16;
		uint32_t u32;
		uint64_t u64;
		float f;
		double d;
	} v = { 0 };

	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		if (strcmp(name, types[i].name))
			continue;
		if (mem_read(pid, obj + FLOAT_VALUE, v.b, types[i].size))
			return false;
		switch (types[i].how) {
		case 'b':
			snprintf(out, len, v.b[0] ? "True" : "False");
			break;
		case 'i':
			snprintf(out, len, "%" PRId64, types[i].size == 1 ? v.i8 : types[i].size == 2 ?
				 v.i16 : types[i].size == 4 ? v.i32 : v.i64);
			break;
		case 'u':
			snprintf(out, len, "%" PRIu64, types[i].size == 1 ? v.b[0] : types[i].size == 2 ?
				 v.u16 : types[i].size == 4 ? v.u32 : v.u64);
			break;
		default:
			if (types[i].size == 8) {
				put_float(v.d, out, len);
			} else { /* the shortest text that reads back as this float32 */
				char buf[40];

				if (isnan(v.f) || isinf(v.f)) {
					put_float(v.f, out, len);
					break;
				}
				for (int prec = 1; prec <= 9; prec++) {
					snprintf(buf, sizeof(buf), "%.*g", prec, (double)v.f);
					if (strtof(buf, NULL) == v.f)
						break;
				}
				if (!strpbrk(buf, ".e"))
					strcat(buf, ".0");
				snprintf(out, len, "%s", buf);
			}
		}
		return true;
	}
	return false;
}

/* A container's repr is built item by item, each item's repr in the room
 * left, as py-spy does: what does not fit becomes "...".  The length bounds
 * the depth too (each level takes its two brackets); a container that
 * holds itself shows as Python shows it ("[...]", "{...}"). */
#define REPR_DEPTH (PYOBJ_REPR_MAX / 2)
#define REPR_SCAN 4096           /* slots of a set's or dict's table looked at */
#define LIST_ITEMS 24            /* PyListObject.ob_item */
#define SET_MASK 32              /* PySetObject.mask */
#define SET_TABLE 40             /* PySetObject.table: {key, hash} entries */
#define SCALAR_MIN 4             /* room below which an item is just "..." */

struct repr_walk {
	int pid;
	const struct py_offsets *o;
	uint64_t path[REPR_DEPTH];   /* the containers being written, outermost first */
	int depth;
	bool cut;                    /* something was left out */
};

enum repr_kind { R_LIST, R_TUPLE, R_DICT, R_SET, R_FROZENSET };

static int repr_into(struct repr_walk *w, uint64_t obj, char *out, size_t len);
/* a container's items, read one at a time */
struct items {
	enum repr_kind kind;
	uint64_t n, base;            /* list, tuple: count, first item's slot;
				      * set: table slots, the table */
	struct keys keys;            /* dict */
	uint64_t values;             /* a split dict's values (0: combined) */
	uint64_t pos;
	bool bad;                    /* a read failed: the rest is not shown */
};

static bool items_open(struct repr_walk *w, uint64_t obj, struct items *it)
{
	const struct py_offsets *o = w->o;

	it->pos = 0;
	switch (it->kind) {
	case R_LIST:
		it->n = rd(w->pid, obj + VAR_SIZE);
		it->base = rd(w->pid, obj + LIST_ITEMS);
		return !it->n || it->base;
	case R_TUPLE:
		it->n = rd(w->pid, obj + VAR_SIZE);
		it->base = obj + o->tuple_items;
		return true;
	case R_DICT:
		it->values = rd(w->pid, obj + DICT_VALUES);
		if (it->values && o->obj_layout >= PYOBJ_313)
			it->values += INLINE_VALUES;
		it->keys.n = 0;
		return !rd(w->pid, obj + DICT_USED) ||
		       read_keys(w->pid, o, rd(w->pid, obj + DICT_KEYS), &it->keys);
	default:
		it->n = rd(w->pid, obj + SET_USED) ? rd(w->pid, obj + SET_MASK) + 1 : 0;
		it->base = rd(w->pid, obj + SET_TABLE);
		return !it->n || it->base;
	}
}

/* the next item (a dict's key and value), in the order Python's repr has
 * them; false at the end or when a read fails (it->bad) */
static bool items_next(struct repr_walk *w, struct items *it, uint64_t *key, uint64_t *value)
{
	uint64_t e[3];

	if (it->kind == R_LIST || it->kind == R_TUPLE) {
		if (it->pos >= it->n)
			return false;
		it->bad = mem_read(w->pid, it->base + 8 * it->pos++, value, 8) || !*value;
		return !it->bad;
	}
	for (;;) {
		uint64_t i = it->pos++, n = it->kind == R_DICT ? it->keys.n : it->n;

		if (i >= n)
			return false;
		if (i >= REPR_SCAN) {
			it->bad = true;
			return false;
		}
		if (it->kind != R_DICT) {
			/* {key, hash}: an empty slot has no key, a deleted one hash -1 */
			if ((it->bad = mem_read(w->pid, it->base + 16 * i, e, 16)))
				return false;
			*value = e[0];
			if (e[0] && e[1] != ~0ull)
				return true;
			continue;
		}
		if ((it->bad = mem_read(w->pid, it->keys.entries + i * it->keys.esize, e,
					it->keys.esize)))
			return false;
		*key = it->keys.esize == 24 ? e[1] : e[0];
		*value = it->values ? rd(w->pid, it->values + 8 * i) :
				      it->keys.esize == 24 ? e[2] : e[1];
		if (*key && *value)
			return true; /* else deleted */
	}
}

/* container obj (of exact type list, tuple, dict, set or frozenset), as
 * repr_into says */
static int repr_container(struct repr_walk *w, uint64_t obj, enum repr_kind kind,
			  char *out, size_t len)
{
	static const char *const open[] = { "[", "(", "{", "{", "frozenset({" };
	static const char *const close[] = { "]", ")", "}", "}", "})" };
	static const char *const empty[] = { "[]", "()", "{}", "set()", "frozenset()" };
	struct items it = { .kind = kind };
	uint64_t key = 0, value = 0;
	size_t k, shut = strlen(close[kind]);
	int count = 0, got = 1;
	bool more, dots = false;

	for (int d = 0; d < w->depth; d++)
		if (w->path[d] == obj) /* it holds itself: as Python shows it */
			return snprintf(out, len, "%s...%s", open[kind], close[kind]) < (int)len ? 1 : -1;
	if (w->depth == REPR_DEPTH || !items_open(w, obj, &it)) {
		w->cut = true;
		return snprintf(out, len, "%s...%s", open[kind], close[kind]) < (int)len ? 0 : -1;
	}
	more = items_next(w, &it, &key, &value);
	if (!more && !it.bad)
		return snprintf(out, len, "%s", empty[kind]) < (int)len ? 1 : -1;
	k = (size_t)snprintf(out, len, "%s", open[kind]);
	if (k + 3 + shut >= len) {
		w->cut = true;
		return -1;
	}
	w->path[w->depth++] = obj;
	while (more) {
		/* this item gets all the room left but its separator, the ", ..."
		 * that may follow it and the closing bracket */
		size_t sep = count ? 2 : 0, room = len - 1 - k - shut, kl;
		char *at = out + k + sep;

		if (room < sep + 5 + SCALAR_MIN) {
			got = -1;
			break;
		}
		room -= sep + 5;
		got = repr_into(w, kind == R_DICT ? key : value, at, room + 1);
		if (got == 0 && kind == R_DICT)
			got = -1; /* a key is shown whole or not at all */
		if (got > 0 && kind == R_DICT) {
			kl = strlen(at);
			if (kl + 2 + SCALAR_MIN > room) {
				got = -1;
			} else {
				memcpy(at + kl, ": ", 2);
				got = repr_into(w, value, at + kl + 2, room + 1 - kl - 2);
			}
		}
		if (got < 0)
			break;
		if (sep)
			memcpy(out + k, ", ", 2);
		k += sep + strlen(at);
		count++;
		more = items_next(w, &it, &key, &value);
		if (!got)
			break; /* this item was cut: the rest is left out */
	}
	w->depth--;
	dots = got < 0 || it.bad || (got == 0 && more);
	if (dots)
		k += (size_t)snprintf(out + k, len - k, count ? ", ..." : "...");
	else if (kind == R_TUPLE && count == 1)
		k += (size_t)snprintf(out + k, len - k, ",");
	snprintf(out + k, len - k, "%s", close[kind]);
	w->cut |= dots;
	return got > 0 && !dots ? 1 : 0;
}

/* obj's repr into out (len bytes with the NUL): 1 all of it, 0 a part of it
 * with "..." where it is cut, -1 it does not fit at all (out is "..." if
 * that fits) */
static int repr_into(struct repr_walk *w, uint64_t obj, char *out, size_t len)
{
	int pid = w->pid;
	const struct py_offsets *o = w->o;
	uint64_t type = rd(pid, obj + PY_OB_TYPE), flags;
	char tn[64], buf[PYOBJ_REPR_MAX];
	bool whole = true;

	if (len < SCALAR_MIN) {
		if (len)
			out[0] = 0;
		w->cut = true;
		return -1;
	}
	if (!type) {
		snprintf(buf, sizeof(buf), "<unreadable>");
		goto scalar;
	}
	type_name(pid, type, tn, sizeof(tn));
	flags = rd(pid, type + o->type_flags);
	if (!strcmp(tn, "list"))
		return repr_container(w, obj, R_LIST, out, len);
	if (!strcmp(tn, "tuple"))
		return repr_container(w, obj, R_TUPLE, out, len);
	if (!strcmp(tn, "dict"))
		return repr_container(w, obj, R_DICT, out, len);
	if (!strcmp(tn, "set"))
		return repr_container(w, obj, R_SET, out, len);
	if (!strcmp(tn, "frozenset"))
		return repr_container(w, obj, R_FROZENSET, out, len);
	if (!strcmp(tn, "NoneType")) {
		snprintf(buf, sizeof(buf), "None");
	} else if (!strcmp(tn, "bool")) {
		__int128 v = 0;

		snprintf(buf, sizeof(buf), read_int(pid, o, obj, &v) && v ? "True" : "False");
	} else if (!strcmp(tn, "int") || (flags & TPF_LONG)) {
		__int128 v;

		if (read_int(pid, o, obj, &v))
			put_int(v, buf, sizeof(buf));
		else
			snprintf(buf, sizeof(buf), "<int object at 0x%" PRIx64 ", over 120 bits>", obj);
	} else if (!strcmp(tn, "float")) {
		double d;

		if (mem_read(pid, obj + FLOAT_VALUE, &d, sizeof(d)) == 0)
			put_float(d, buf, sizeof(buf));
		else
			snprintf(buf, sizeof(buf), "<unreadable>");
	} else if (!strncmp(tn, "numpy.", 6) && numpy_scalar(pid, obj, tn + 6, buf, sizeof(buf))) {
		/* its value, in buf */
	} else if (flags & (TPF_UNICODE | TPF_BYTES)) {
		size_t bytes = 0;
		uint64_t chars = 0;
		char *s = flags & TPF_UNICODE ?
			pyread_str_value(pid, obj, o, STR_SHOWN, &bytes, &chars) :
			(char *)pyread_bytes(pid, obj, o, &bytes);

		if (!s) {
			snprintf(buf, sizeof(buf), "<unreadable>");
			goto scalar;
		}
		if (flags & TPF_BYTES)
			chars = bytes;
		if (len < 12) {
			free(s);
			snprintf(out, len, "...");
			w->cut = true;
			return -1;
		}
		whole = quote(s, bytes > STR_SHOWN && (flags & TPF_BYTES) ? STR_SHOWN : bytes,
			      flags & TPF_BYTES, chars > STR_SHOWN, out, len);
		free(s);
		w->cut |= !whole;
		return whole;
	} else if (flags & (TPF_LIST | TPF_TUPLE | TPF_DICT)) {
		/* a subclass: its repr is its own (namedtuple, OrderedDict, ...) */
		uint64_t n = rd(pid, obj + (flags & TPF_DICT ? DICT_USED : VAR_SIZE));

		snprintf(buf, sizeof(buf), "<%s of %" PRIu64 " item%s>", tn, n, n == 1 ? "" : "s");
	} else {
		snprintf(buf, sizeof(buf), "<%s object at 0x%" PRIx64 ">", tn[0] ? tn : "?", obj);
	}
scalar:
	if (strlen(buf) < len) {
		memcpy(out, buf, strlen(buf) + 1);
		return 1;
	}
	snprintf(out, len, "...");
	w->cut = true;
	return -1;
}

bool pyobj_repr(int pid, const struct py_offsets *o, uint64_t obj, char *out, size_t len)
{
	struct repr_walk w = { .pid = pid, .o = o };

	if (!len)
		return false;
	if (repr_into(&w, obj, out, len) < 0)
		snprintf(out, len, "...");
	return !w.cut;
}

/* ---- locals ---- */

/* a variable as read: its name (a str object) and value (0: unbound) */
struct slot {
	uint64_t name, value;
	bool arg;
};

static uint64_t tuple_item(int pid, const struct py_offsets *o, uint64_t t, int64_t i)
{
	return rd(pid, t + o->tuple_items + 8 * (uint64_t)i);
}

/* Up to 3.10 a variable an inner function uses lives in a cell after the
 * locals (co_cellvars names them), and an argument's own slot is cleared
 * once its cell is made: put each cell's content in its variable's slot, or
 * after the locals. */
static int add_cells(int pid, const struct py_offsets *o, uint64_t frame, uint64_t code,
		     int32_t nlocals, struct slot *v, int n)
{
	uint64_t cells = rd(pid, code + o->code_cellvars), vals[PYOBJ_MAX_LOCALS];
	int64_t nc = cells ? (int64_t)rd(pid, cells + VAR_SIZE) : 0;

	if (nc <= 0 || nc > PYOBJ_MAX_LOCALS - n ||
	    mem_read(pid, frame + o->frame_localsplus + 8 * (uint64_t)nlocals, vals, 8 * (size_t)nc))
		return n;
	for (int64_t j = 0; j < nc; j++) {
		uint64_t name = tuple_item(pid, o, cells, j);
		uint64_t value = vals[j] ? rd(pid, vals[j] + CELL_REF) : 0;
		int k = 0;

		while (k < n && v[k].name != name)
			k++;
		if (k < n && !v[k].value) {
			v[k].value = value;
		} else if (k == n) {
			v[n].name = name;
			v[n].value = value;
			v[n++].arg = false;
		}
	}
	return n;
}

int pyobj_locals(int pid, const struct py_offsets *o, uint64_t frame, uint64_t code,
		 struct pylocal *out, int cap)
{
	static struct slot v[PYOBJ_MAX_LOCALS];
	int32_t argc, kwonly, flags, nlocals, nargs;
	uint64_t names, vals[PYOBJ_MAX_LOCALS];
	uint8_t *kinds = NULL;
	size_t nkinds = 0;
	int n = 0, count, shown = 0;

	if (!known(o) || !code || !frame)
		return -1;
	argc = rd32(pid, code + o->code_argcount);
	kwonly = rd32(pid, code + o->code_kwonlyargcount);
	flags = rd32(pid, code + o->code_flags);
	nlocals = rd32(pid, code + o->code_nlocals);
	names = rd(pid, code + o->code_varnames);
	if (!names || nlocals < 0 || argc < 0 || kwonly < 0)
		return -1;
	nargs = argc + kwonly + !!(flags & CO_VARARGS) + !!(flags & CO_VARKEYWORDS);
	count = nlocals;
	if ((int64_t)rd(pid, names + VAR_SIZE) < count)
		count = (int)rd(pid, names + VAR_SIZE);
	if (count > PYOBJ_MAX_LOCALS)
		count = PYOBJ_MAX_LOCALS;
	if (o->code_localskinds != PYPERF_NO_OFFSET) {
		kinds = pyread_bytes(pid, rd(pid, code + o->code_localskinds), o, &nkinds);
		if (!kinds)
			return -1;
	}
	if (count > 0 && mem_read(pid, frame + o->frame_localsplus, vals, 8 * (size_t)count)) {
		free(kinds);
		return -1;
	}
	for (int i = 0; i < count; i++) {
		uint64_t x = vals[i] & ~(uint64_t)o->code_tag_bits;
		uint8_t k = kinds && (size_t)i < nkinds ? kinds[i] : FAST_LOCAL;
		char tn[16];

		if ((k & (FAST_FREE | FAST_HIDDEN)) || !(k & (FAST_LOCAL | FAST_CELL)))
			continue;
		if (x && (k & FAST_CELL)) {
			/* a cell once MAKE_CELL has run: the variable is its content */
			type_name(pid, rd(pid, x + PY_OB_TYPE), tn, sizeof(tn));
			if (!strcmp(tn, "cell"))
				x = rd(pid, x + CELL_REF);
		}
		v[n].name = tuple_item(pid, o, names, i);
		v[n].value = x;
		v[n++].arg = i < nargs;
	}
	free(kinds);
	if (o->code_cellvars != PYPERF_NO_OFFSET && nlocals == count)
		n = add_cells(pid, o, frame, code, nlocals, v, n);
	for (int i = 0; i < n && shown < cap; i++) {
		char *name;

		if (!v[i].value)
			continue; /* unbound */
		name = pyread_str(pid, v[i].name, o);
		snprintf(out[shown].name, sizeof(out[shown].name), "%s", name ? name : "?");
		free(name);
		out[shown].addr = v[i].value;
		out[shown].arg = v[i].arg;
		out[shown].cut = !pyobj_repr(pid, o, v[i].value, out[shown].repr,
					     sizeof(out[shown].repr));
		shown++;
	}
	return shown;
}

/* ---- thread names ---- */

uint64_t pyobj_thread_object(int pid, const struct py_offsets *o, uint64_t tstate, bool *never)
{
	uint64_t frame = rd(pid, tstate + o->tstate_frame), bottom = 0, code = 0, mark;
	unsigned since_mark = 0, mark_every = 1;
	char *s;
	bool boot;

	if (never)
		*never = false;
	if (!known(o))
		return 0;
	if (frame && o->cframe_current_frame != PYPERF_NO_OFFSET)
		frame = rd(pid, frame + o->cframe_current_frame);
	/* the outermost frame that runs code (3.12+ shims own none worth
	 * having).  The thread runs while its frames are read: a frame freed
	 * meanwhile may link to a newer one, and the chain comes back on
	 * itself.  Brent's check ends such a walk within twice the loop's
	 * length (a mark moved to the frame reached at steps 1, 2, 4, 8, ...;
	 * reaching the mark again is a loop), not after MAX_FRAMES steps of
	 * three reads each, which blocked the loader for half a second. */
	mark = frame;
	for (unsigned i = 0; frame && i < MAX_FRAMES; i++) {
		uint64_t c = py_frame_code(o, rd(pid, frame + o->frame_code));
		uint8_t owner = 0;

		if (o->frame_owner != PYPERF_NO_OFFSET)
			mem_read(pid, frame + o->frame_owner, &owner, 1);
		if (c && !(o->frame_owner != PYPERF_NO_OFFSET && py_frame_is_shim(o, owner))) {
			bottom = frame;
			code = c;
		}
		frame = rd(pid, frame + o->frame_back);
		if (frame == mark)
			return 0;
		if (++since_mark == mark_every) {
			mark = frame;
			since_mark = 0;
			mark_every *= 2;
		}
	}
	/* a chain that did not end (a loop the check missed as the frames
	 * changed, or deeper than MAX_FRAMES) has no bottom known */
	if (frame || !bottom)
		return 0;
	/* the name, then the file: one read that is not threading's
	 * _bootstrap says never; one that cannot be read (a code object freed
	 * meanwhile) says nothing, and it is looked for again */
	s = pyread_str(pid, rd(pid, code + o->code_name), o);
	boot = s && !strcmp(s, "_bootstrap");
	if (boot) {
		free(s);
		s = pyread_str(pid, rd(pid, code + o->code_filename), o);
		boot = s && strlen(s) >= 12 && !strcmp(s + strlen(s) - 12, "threading.py");
	}
	if (s && !boot && never)
		*never = true;
	free(s);
	if (!boot)
		return 0;
	return rd(pid, bottom + o->frame_localsplus) & ~(uint64_t)o->code_tag_bits;
}

char *pyobj_thread_object_name(int pid, const struct py_offsets *o, uint64_t thread)
{
	uint64_t name = thread ? pyobj_attr(pid, o, thread, "_name") : 0;

	return name ? pyread_str(pid, name, o) : NULL;
}

char *pyobj_thread_name(int pid, const struct py_offsets *o, uint64_t tstate)
{
	return pyobj_thread_object_name(pid, o, pyobj_thread_object(pid, o, tstate, NULL));
}
