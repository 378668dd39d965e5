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

/* s (n bytes of UTF-8, or of bytes) as a Python literal: quoted, escaped;
 * `more`: it goes on, "..." before the closing quote; bytes: b'...' with
 * \xNN for anything not printable ASCII. */
static void quote(const char *s, size_t n, bool bytes, bool more, char *out, size_t len)
{
	char q = memchr(s, '\'', n) && !memchr(s, '"', n) ? '"' : '\'';
	size_t k = 0, shown = 0;

#define PUT(...) (k += (size_t)snprintf(out + k, k < len ? len - k : 0, __VA_ARGS__))
	PUT("%s%c", bytes ? "b" : "", q);
	for (size_t i = 0; i < n && k + 12 < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (shown == STR_SHOWN) {
			more = true;
			break;
		}
		if (bytes || (c & 0xc0) != 0x80)
			shown++; /* a character starts here */
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
	if (k >= len && len) { /* cut: keep the text whole UTF-8 */
		size_t e = len - 1;

		while (e > 0 && ((unsigned char)out[e] & 0xc0) == 0x80)
			e--;
		out[e] = 0;
	}
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

void pyobj_repr(int pid, const struct py_offsets *o, uint64_t obj, char *out, size_t len)
{
	uint64_t type = rd(pid, obj + PY_OB_TYPE), flags, n;
	char tn[64];

	if (!len)
		return;
	if (!type) {
		snprintf(out, len, "<unreadable>");
		return;
	}
	type_name(pid, type, tn, sizeof(tn));
	flags = rd(pid, type + o->type_flags);
	if (!strcmp(tn, "NoneType")) {
		snprintf(out, len, "None");
	} else if (!strcmp(tn, "bool")) {
		__int128 v = 0;

		snprintf(out, len, read_int(pid, o, obj, &v) && v ? "True" : "False");
	} else if (!strcmp(tn, "int") || (flags & TPF_LONG)) {
		__int128 v;

		if (read_int(pid, o, obj, &v))
			put_int(v, out, len);
		else
			snprintf(out, len, "<int object at 0x%" PRIx64 ", over 120 bits>", obj);
	} else if (!strcmp(tn, "float")) {
		double d;

		if (mem_read(pid, obj + FLOAT_VALUE, &d, sizeof(d)) == 0)
			put_float(d, out, len);
		else
			snprintf(out, len, "<unreadable>");
	} else if (flags & TPF_UNICODE) {
		size_t bytes = 0;
		uint64_t chars = 0;
		char *s = pyread_str_value(pid, obj, o, STR_SHOWN, &bytes, &chars);

		if (s)
			quote(s, bytes, false, chars > STR_SHOWN, out, len);
		else
			snprintf(out, len, "<unreadable>");
		free(s);
	} else if (flags & TPF_BYTES) {
		size_t bl = 0;
		uint8_t *b = pyread_bytes(pid, obj, o, &bl);

		if (b)
			quote((const char *)b, bl > STR_SHOWN ? STR_SHOWN : bl, true, bl > STR_SHOWN,
			      out, len);
		else
			snprintf(out, len, "<unreadable>");
		free(b);
	} else if (flags & (TPF_LIST | TPF_TUPLE | TPF_DICT) || !strcmp(tn, "set") ||
		   !strcmp(tn, "frozenset")) {
		n = rd(pid, obj + (flags & TPF_DICT ? DICT_USED : flags & (TPF_LIST | TPF_TUPLE) ?
						 VAR_SIZE : SET_USED));
		snprintf(out, len, "<%s of %" PRIu64 " item%s>", tn, n, n == 1 ? "" : "s");
	} else {
		snprintf(out, len, "<%s object at 0x%" PRIx64 ">", tn[0] ? tn : "?", obj);
	}
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
		pyobj_repr(pid, o, v[i].value, out[shown].repr, sizeof(out[shown].repr));
		shown++;
	}
	return shown;
}

/* ---- thread names ---- */

uint64_t pyobj_thread_object(int pid, const struct py_offsets *o, uint64_t tstate)
{
	uint64_t frame = rd(pid, tstate + o->tstate_frame), bottom = 0, code = 0;
	char *s;

	if (!known(o))
		return 0;
	if (frame && o->cframe_current_frame != PYPERF_NO_OFFSET)
		frame = rd(pid, frame + o->cframe_current_frame);
	/* the outermost frame that runs code (3.12+ shims own none worth having) */
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
	}
	if (!bottom || !str_is(pid, o, rd(pid, code + o->code_name), "_bootstrap"))
		return 0;
	s = pyread_str(pid, rd(pid, code + o->code_filename), o);
	if (!s || strlen(s) < 12 || strcmp(s + strlen(s) - 12, "threading.py")) {
		free(s);
		return 0;
	}
	free(s);
	return rd(pid, bottom + o->frame_localsplus) & ~(uint64_t)o->code_tag_bits;
}

char *pyobj_thread_object_name(int pid, const struct py_offsets *o, uint64_t thread)
{
	uint64_t name = thread ? pyobj_attr(pid, o, thread, "_name") : 0;

	return name ? pyread_str(pid, name, o) : NULL;
}

char *pyobj_thread_name(int pid, const struct py_offsets *o, uint64_t tstate)
{
	return pyobj_thread_object_name(pid, o, pyobj_thread_object(pid, o, tstate));
}
