/* test_pyread.c - reading str and code objects out of a process, here our
 * own, with objects laid out by hand the way CPython 3.12 lays them out. */
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "py_offsets_table.h"
#include "pyread.h"

/* state bits: kind at 2..4, compact 5, ascii 6 */
#define STATE(kind, ascii) ((uint32_t)((kind) << 2 | 1 << 5 | (ascii) << 6))

static uint64_t make_str(uint8_t *buf, const struct py_offsets *o, uint32_t state,
			 uint64_t length, const void *chars, size_t nbytes)
{
	int ascii = (state >> 6) & 1;

	memset(buf, 0, 256);
	memcpy(buf + o->unicode_length, &length, sizeof(length));
	memcpy(buf + o->unicode_state, &state, sizeof(state));
	memcpy(buf + (ascii ? o->unicode_ascii_size : o->unicode_compact_size), chars, nbytes);
	return (uint64_t)(uintptr_t)buf;
}

static void decodes_ascii_latin1_ucs2_ucs4(void **state)
{
	const struct py_offsets *o = py_offsets_for_version(3, 12);
	uint8_t buf[256];
	uint16_t ucs2[] = { 0x3b1, 0x3b2 };          /* alpha beta */
	uint32_t ucs4[] = { 0x1f600, 'x' };          /* emoji, x */
	uint8_t latin1[] = { 'c', 0xe9 };             /* c, e-acute */
	char *s;

	assert_non_null(o);
	s = pyread_str(getpid(), make_str(buf, o, STATE(1, 1), 5, "hello", 5), o);
	assert_string_equal(s, "hello");
	free(s);
	s = pyread_str(getpid(), make_str(buf, o, STATE(1, 0), 2, latin1, 2), o);
	assert_string_equal(s, "c\xc3\xa9");
	free(s);
	s = pyread_str(getpid(), make_str(buf, o, STATE(2, 0), 2, ucs2, 4), o);
	assert_string_equal(s, "\xce\xb1\xce\xb2");
	free(s);
	s = pyread_str(getpid(), make_str(buf, o, STATE(4, 0), 2, ucs4, 8), o);
	assert_string_equal(s, "\xf0\x9f\x98\x80x");
	free(s);
}

static void garbage_is_refused_and_surrogates_replaced(void **state)
{
	const struct py_offsets *o = py_offsets_for_version(3, 12);
	uint8_t buf[256];
	uint32_t bad[] = { 0x28ffff };               /* beyond U+10FFFF */
	uint16_t lone[] = { 'a', 0xdc80 };            /* surrogateescape'd byte */
	uint8_t high[] = { 'a', 0x80 };
	uint16_t ucs2_del[] = { 0x7f, 'x' };
	char *s;

	assert_null(pyread_str(getpid(), make_str(buf, o, STATE(4, 0), 1, bad, 4), o));
	assert_null(pyread_str(getpid(), make_str(buf, o, STATE(1, 1), 2, high, 2), o));
	assert_null(pyread_str(getpid(), make_str(buf, o, STATE(3, 0), 1, "x", 1), o)); /* no kind 3 */
	assert_null(pyread_str(getpid(), make_str(buf, o, (uint32_t)(1 << 2 | 1 << 6), 1, "x", 1), o)); /* not compact */
	s = pyread_str(getpid(), make_str(buf, o, STATE(2, 0), 2, lone, 4), o);
	assert_string_equal(s, "a\xef\xbf\xbd");
	free(s);
	/* control characters (a newline in a file name) would break a line of
	 * folded output */
	s = pyread_str(getpid(), make_str(buf, o, STATE(1, 1), 5, "a\nb\tc", 5), o);
	assert_string_equal(s, "a\xef\xbf\xbd" "b\xef\xbf\xbd" "c");
	free(s);
	s = pyread_str(getpid(), make_str(buf, o, STATE(2, 0), 2, ucs2_del, 4), o);
	assert_string_equal(s, "\xef\xbf\xbd" "x");
	free(s);
	/* a length whose byte size wraps to 0 (2^62 * 4) must be refused */
	assert_null(pyread_str(getpid(), make_str(buf, o, STATE(4, 0), 1ULL << 62, "x", 1), o));
	assert_null(pyread_str(getpid(), 0, o));
	assert_null(pyread_str(getpid(), 8, o)); /* unmapped */
}

/* A code object, its name, file and line table, laid out in one buffer. */
struct fake_code {
	uint64_t code[64], name[32], file[32], lt[8];
};

static const char type_objects[3]; /* their addresses stand for the types */
static const struct py_types unknown;
static const struct py_types types = { (uint64_t)(uintptr_t)&type_objects[0],
				       (uint64_t)(uintptr_t)&type_objects[1],
				       (uint64_t)(uintptr_t)&type_objects[2] };

static uint32_t make_code(struct fake_code *c, const struct py_offsets *o)
{
	uint8_t *code = (uint8_t *)c->code;
	uint64_t name = (uint64_t)(uintptr_t)c->name, file = (uint64_t)(uintptr_t)c->file;
	uint64_t lt = (uint64_t)(uintptr_t)c->lt;
	int32_t first = 7;

	memset(c, 0, sizeof(*c));
	make_str((uint8_t *)c->name, o, STATE(1, 1), 1, "f", 1);
	make_str((uint8_t *)c->file, o, STATE(1, 1), 4, "x.py", 4);
	c->code[0] = c->name[0] = c->file[0] = c->lt[0] = 1; /* refcnt */
	c->code[1] = types.code;
	c->name[1] = c->file[1] = types.str;
	c->lt[1] = types.bytes;
	memcpy(code + o->code_firstlineno, &first, sizeof(first));
	memcpy(code + o->code_filename, &file, 8);
	memcpy(code + o->code_name, &name, 8);
	memcpy(code + o->code_qualname, &name, 8);
	memcpy(code + o->code_linetable, &lt, 8);
	return py_code_check((uint32_t)first, file, name);
}

static void check_named(struct fake_code *c, const struct py_offsets *o, uint32_t check,
			const struct py_types *t, bool named)
{
	struct func *f = pyread_code(getpid(), (uint64_t)(uintptr_t)c->code, check, o, t, NULL);

	if (!named) {
		assert_null(f);
		return;
	}
	assert_non_null(f);
	assert_string_equal(f->name, "f");
	assert_string_equal(f->file, "x.py");
	func_free(f);
}

/* A code object freed since its sample keeps its fields, so it passes its
 * check; what a free wrote over the first words of it or of its strings must
 * refuse it. */
static void freed_code_objects_are_not_named_from_freed_strings(void **state)
{
	const struct py_offsets *o = py_offsets_for_version(3, 12);
	struct fake_code *c = calloc(1, sizeof(*c));
	uint64_t name = (uint64_t)(uintptr_t)c->name;
	uint32_t check;

	assert_non_null(c);
	check = make_code(c, o);
	check_named(c, o, check, &types, true);
	check_named(c, o, check ^ 1, &types, false); /* another code object */
	/* immortal counts: 3.12/3.13, and 3.14's with flags above it */
	c->code[0] = c->name[0] = 0xffffffffu;
	check_named(c, o, check, &types, true);
	c->code[0] = c->name[0] = 3ull << 30 | 1ull << 48;
	check_named(c, o, check, &types, true);
	/* pymalloc: the count becomes the pool's free-list link, 0 or a block
	 * of the same arena.  A code object freed so, its strings alive (code
	 * run once by exec), is still named */
	make_code(c, o);
	c->code[0] = 0;
	check_named(c, o, check, &types, true);
	c->name[0] = 0; /* its name freed with it */
	check_named(c, o, check, &types, false);
	check_named(c, o, check, &unknown, true); /* types unknown: not checked */
	c->name[0] = name + 512;
	check_named(c, o, check, &types, false);
	c->name[0] = name - 4096;
	check_named(c, o, check, &types, false);
	/* glibc: its links over ob_type too (a module's body, larger than
	 * pymalloc's blocks, freed once run): named while its strings live */
	make_code(c, o);
	c->code[1] = 0x5a5a5a5a5a5a5a5aull;
	check_named(c, o, check, &types, true);
	check_named(c, o, check ^ 1, &types, false); /* reused: the check fails */
	c->file[0] = 0;
	c->file[1] = 0x5a5a5a5a5a5a5a5aull;
	check_named(c, o, check, &types, false);
	make_code(c, o);
	c->file[0] = 0;
	c->file[1] = 0x5a5a5a5a5a5a5a5aull;
	check_named(c, o, check, &types, false);
	/* a str's memory now another type's object */
	make_code(c, o);
	c->file[1] = types.bytes;
	check_named(c, o, check, &types, false);
	/* a freed line table only loses the line numbers */
	make_code(c, o);
	c->lt[0] = 0;
	check_named(c, o, check, &types, true);
	free(c);
}

/* what the walk keeps of c's code object (check_step, python_walk.bpf.h) */
/* what the walk's str_seen (bpf/python_walk.bpf.h) takes of a str */
static void str_saw(struct str_seen *seen, const uint8_t *str, const struct py_offsets *o)
{
	uint32_t state, kind;
	uint64_t bytes, n;

	memset(seen, 0, sizeof(*seen));
	memcpy(seen, str + o->unicode_length, 16); /* length, hash */
	memcpy(&state, str + o->unicode_state, sizeof(state));
	kind = (state >> 2) & 7;
	if (!((state >> 5) & 1) || (kind != 1 && kind != 2 && kind != 4) || seen->length <= 0)
		return;
	bytes = (uint64_t)seen->length * kind;
	n = bytes >= STR_TAIL ? STR_TAIL : bytes;
	seen->kind = kind;
	memcpy(seen->tail, str + ((state >> 6) & 1 ? o->unicode_ascii_size : o->unicode_compact_size) +
			   bytes - n, n);
	seen->tail_len = (uint32_t)n;
}

static void walk_saw(struct code_id *id, struct fake_code *c, const struct py_offsets *o)
{
	memset(id, 0, sizeof(*id));
	id->filename = (uint64_t)(uintptr_t)c->file;
	id->name = (uint64_t)(uintptr_t)c->name;
	id->firstlineno = 7;
	id->check = py_code_check(7, id->filename, id->name);
	str_saw(&id->file_seen, (uint8_t *)c->file, o);
	str_saw(&id->name_seen, (uint8_t *)c->name, o);
}

static void named_as(struct func *f, const char *name, const char *file)
{
	assert_non_null(f);
	assert_string_equal(f->name, name);
	assert_string_equal(f->file, file);
	func_free(f);
}

/* A code object freed with its strings, whose memory other strings took
 * (a module's body named "c_work", the name of a function compiled after
 * it): the length and hash the walk saw of each str refuse them. */
static void strings_reused_since_the_walk_are_refused(void **state)
{
	const struct py_offsets *o = py_offsets_for_version(3, 12);
	struct fake_code *c = calloc(1, sizeof(*c));
	uint64_t code, hash = 0x1234, file;
	struct code_id id;

	(void)state;
	assert_non_null(c);
	code = (uint64_t)(uintptr_t)c->code;
	file = (uint64_t)(uintptr_t)c->file;
	make_code(c, o);
	memcpy((uint8_t *)c->name + o->unicode_length + 8, &hash, 8);
	walk_saw(&id, c, o);
	named_as(pyread_code(getpid(), code, id.check, o, &types, &id), "f", "x.py");
	/* a live code object is named by its qualified name; a freed one by
	 * the name the walk saw */
	memcpy((uint8_t *)c->code + o->code_qualname, &file, 8);
	named_as(pyread_code(getpid(), code, id.check, o, &types, &id), "x.py", "x.py");
	c->code[0] = 0;
	named_as(pyread_code(getpid(), code, id.check, o, &types, &id), "f", "x.py");
	/* the name's memory another str of another length */
	make_str((uint8_t *)c->name, o, STATE(1, 1), 6, "c_work", 6);
	c->name[0] = 1;
	c->name[1] = types.str;
	assert_null(pyread_code(getpid(), code, id.check, o, &types, &id));
	named_as(pyread_code(getpid(), code, id.check, o, &types, NULL), "c_work", "x.py");
	named_as(pyread_code_id(getpid(), &id, o, &types), PYREAD_FREED_NAME, "x.py");
	/* of the same length, another hash */
	make_str((uint8_t *)c->name, o, STATE(1, 1), 1, "g", 1);
	c->name[0] = 1;
	c->name[1] = types.str;
	hash = 0x4321;
	memcpy((uint8_t *)c->name + o->unicode_length + 8, &hash, 8);
	assert_null(pyread_code(getpid(), code, id.check, o, &types, &id));
	named_as(pyread_code_id(getpid(), &id, o, &types), PYREAD_FREED_NAME, "x.py");
	/* a hash not computed when the walk saw it: the last characters tell
	 * "f" from "g" (in CI the file names "<gen 109>" and "<gen 215>", of
	 * one length and no hash, were taken one for the other) */
	id.name_seen.hash = -1;
	named_as(pyread_code_id(getpid(), &id, o, &types), PYREAD_FREED_NAME, "x.py");
	/* ... and the same characters are taken on length and tail alone */
	walk_saw(&id, c, o);
	id.name_seen.hash = -1;
	named_as(pyread_code_id(getpid(), &id, o, &types), "g", "x.py");
	/* nor does a str the walk could not read */
	walk_saw(&id, c, o);
	id.name_seen.length = -1;
	id.name_seen.hash = 77;
	named_as(pyread_code_id(getpid(), &id, o, &types), "g", "x.py");
	/* the file's memory another str: nothing to name it by */
	walk_saw(&id, c, o);
	make_str((uint8_t *)c->file, o, STATE(1, 1), 5, "y.pyc", 5);
	c->file[0] = 1;
	c->file[1] = types.str;
	assert_null(pyread_code(getpid(), code, id.check, o, &types, &id));
	assert_null(pyread_code_id(getpid(), &id, o, &types));
	free(c);
}

/* A code object freed before its stack was named: named from what the walk
 * saw of it (struct code_id) while its file's str lives. */
static void freed_code_objects_are_named_from_what_the_walk_saw(void **state)
{
	const struct py_offsets *o = py_offsets_for_version(3, 12);
	struct fake_code *c = calloc(1, sizeof(*c));
	struct code_id id;
	struct func *f;

	(void)state;
	assert_non_null(c);
	make_code(c, o);
	walk_saw(&id, c, o);
	f = pyread_code_id(getpid(), &id, o, &types);
	assert_non_null(f);
	assert_string_equal(f->name, "f");
	assert_string_equal(f->file, "x.py");
	assert_int_equal(func_line(f, 10), 7); /* no line table: its first line */
	func_free(f);
	id.check ^= 1; /* not what the walk computed */
	assert_null(pyread_code_id(getpid(), &id, o, &types));
	id.check ^= 1;
	assert_null(pyread_code_id(getpid(), &id, o, &unknown)); /* nothing tells a freed str */
	c->name[1] = 0x5a5a5a5a5a5a5a5aull; /* its name freed */
	f = pyread_code_id(getpid(), &id, o, &types);
	assert_non_null(f);
	assert_string_equal(f->name, PYREAD_FREED_NAME);
	assert_string_equal(f->file, "x.py");
	func_free(f);
	c->file[1] = 0x5a5a5a5a5a5a5a5aull; /* and its file */
	assert_null(pyread_code_id(getpid(), &id, o, &types));
	free(c);
}

/* What the walk saw of a str names it when it saw all of it, in each of the
 * three widths; a str longer than STR_TAIL bytes, or one it saw no
 * characters of, is not guessed at. */
static void a_str_seen_whole_is_its_text(void **state)
{
	const struct py_offsets *o = py_offsets_for_version(3, 12);
	uint8_t buf[512];
	uint16_t ucs2[] = { 'f', 0x3b1 };             /* f, alpha */
	uint32_t ucs4[] = { 0x1f600, 'x' };           /* emoji, x */
	uint8_t latin1[] = { 'c', 0xe9 };              /* c, e-acute */
	char path[STR_TAIL + 2];
	struct str_seen seen;
	char *s;

	(void)state;
	str_saw(&seen, (uint8_t *)(uintptr_t)make_str(buf, o, STATE(1, 1), 7, "toucher", 7), o);
	assert_string_equal(s = pyread_seen_text(&seen), "toucher");
	free(s);
	str_saw(&seen, (uint8_t *)(uintptr_t)make_str(buf, o, STATE(1, 0), 2, latin1, 2), o);
	assert_string_equal(s = pyread_seen_text(&seen), "c\xc3\xa9");
	free(s);
	str_saw(&seen, (uint8_t *)(uintptr_t)make_str(buf, o, STATE(2, 0), 2, ucs2, 4), o);
	assert_string_equal(s = pyread_seen_text(&seen), "f\xce\xb1");
	free(s);
	str_saw(&seen, (uint8_t *)(uintptr_t)make_str(buf, o, STATE(4, 0), 2, ucs4, 8), o);
	assert_string_equal(s = pyread_seen_text(&seen), "\xf0\x9f\x98\x80x");
	free(s);
	/* STR_TAIL characters are all of it; one more is not */
	memset(path, '/', sizeof(path));
	str_saw(&seen, (uint8_t *)(uintptr_t)make_str(buf, o, STATE(1, 1), STR_TAIL, path, STR_TAIL), o);
	assert_non_null(s = pyread_seen_text(&seen));
	assert_int_equal(strlen(s), STR_TAIL);
	free(s);
	str_saw(&seen, (uint8_t *)(uintptr_t)make_str(buf, o, STATE(1, 1), STR_TAIL + 1, path,
						     STR_TAIL + 1), o);
	assert_null(pyread_seen_text(&seen));
	/* 64 UCS-2 characters fill the tail, yet are not 128 Latin-1 ones */
	str_saw(&seen, (uint8_t *)(uintptr_t)make_str(buf, o, STATE(2, 0), STR_TAIL / 2, path,
						     STR_TAIL), o);
	assert_int_equal(seen.tail_len, STR_TAIL);
	assert_non_null(s = pyread_seen_text(&seen));
	assert_int_equal(strlen(s), 3 * STR_TAIL / 2); /* U+2F2F, three bytes each */
	free(s);
	seen.kind = 1;
	assert_null(pyread_seen_text(&seen));
	seen.length = -1; /* not read */
	assert_null(pyread_seen_text(&seen));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(decodes_ascii_latin1_ucs2_ucs4),
		cmocka_unit_test(garbage_is_refused_and_surrogates_replaced),
		cmocka_unit_test(freed_code_objects_are_not_named_from_freed_strings),
		cmocka_unit_test(freed_code_objects_are_named_from_what_the_walk_saw),
		cmocka_unit_test(strings_reused_since_the_walk_are_refused),
		cmocka_unit_test(a_str_seen_whole_is_its_text),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
