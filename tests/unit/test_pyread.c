/* test_pyread.c - reading str objects out of a process, here our own, with
 * objects laid out by hand the way CPython 3.12 lays them out. */
#include <setjmp.h>
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(decodes_ascii_latin1_ucs2_ucs4),
		cmocka_unit_test(garbage_is_refused_and_surrogates_replaced),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
