/* test_linetable.c - cmocka tests for user/python/linetable.c on hand-built tables.
 *
 * How it works: each table is written out byte by byte from the format rules
 * (Objects/lnotab_notes.txt for 3.8-3.10, Objects/locations.md for 3.11+) and
 * copied into a heap buffer of exactly its size, so a build with
 * -fsanitize=address catches any read past the end.  Expected lines are
 * worked out by hand in the comments next to each table.  A last test feeds
 * pseudo-random bytes of every length up to 64 to all three decoders and only
 * checks that they return (and stay inside the buffer).  Agreement with real
 * interpreters is checked separately by linetable_check + linetable_dump.py.
 *
 * Build: gcc -std=c11 -Wall -Wextra -Iuser/python user/python/linetable.c \
 *        tests/unit/test_linetable.c -lcmocka -o /tmp/t */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "linetable.h"

/* Line for `off` in `bytes` (copied to an exact-size heap block). */
static int lookup(enum py_linetable_kind kind, const uint8_t *bytes, size_t len, int first, int off)
{
	uint8_t *copy = malloc(len ? len : 1);
	assert_non_null(copy);
	if (len)
		memcpy(copy, bytes, len);
	int line = linetable_addr2line(kind, copy, len, first, off);
	free(copy);
	return line;
}

#define LOOKUP(kind, arr, first, off) lookup(kind, arr, sizeof(arr), first, off)

/* Expect `want` for every offset in [lo, hi). */
static void expect_range(enum py_linetable_kind kind, const uint8_t *t, size_t len, int first,
			 int lo, int hi, int want)
{
	for (int off = lo; off < hi; off++)
		assert_int_equal(lookup(kind, t, len, first, off), want);
}

/* ---- every kind ---- */

static void test_negative_offset_is_firstlineno(void **state)
{
	(void)state;
	static const uint8_t t[] = {0x80, 0x00};
	for (int k = LT_LNOTAB; k <= LT_LOCATIONS; k++) {
		assert_int_equal(LOOKUP(k, t, 42, -1), 42);
		assert_int_equal(LOOKUP(k, t, 42, -2), 42);
		assert_int_equal(LOOKUP(k, t, 42, INT_MIN), 42);
		assert_int_equal(linetable_addr2line(k, NULL, 0, 7, -2), 7);
	}
}

static void test_empty_table(void **state)
{
	(void)state;
	/* lnotab: no pairs, so always co_firstlineno; the others have no range. */
	assert_int_equal(linetable_addr2line(LT_LNOTAB, NULL, 0, 9, 0), 9);
	assert_int_equal(linetable_addr2line(LT_LNOTAB, NULL, 0, 9, 100), 9);
	assert_int_equal(linetable_addr2line(LT_LINETABLE310, NULL, 0, 9, 0), -1);
	assert_int_equal(linetable_addr2line(LT_LOCATIONS, NULL, 0, 9, 0), -1);
	/* NULL table with a length is treated as empty, not dereferenced */
	assert_int_equal(linetable_addr2line(LT_LOCATIONS, NULL, 10, 9, 0), -1);
}

static void test_unknown_kind(void **state)
{
	(void)state;
	static const uint8_t t[] = {2, 1};
	assert_int_equal(lookup((enum py_linetable_kind)7, t, sizeof(t), 1, 0), -1);
}

/* ---- co_lnotab, 3.8/3.9 ---- */

static void test_lnotab_notes_example(void **state)
{
	(void)state;
	/* lnotab_notes.txt: offsets 0,6,50,350,361 -> lines 1,2,7,207,208; the
	 * 300-byte / 200-line step is split as 255,0 45,127 0,73. */
	static const uint8_t t[] = {6, 1, 44, 5, 255, 0, 45, 127, 0, 73, 11, 1};
	expect_range(LT_LNOTAB, t, sizeof(t), 1, 0, 6, 1);
	expect_range(LT_LNOTAB, t, sizeof(t), 1, 6, 50, 2);
	expect_range(LT_LNOTAB, t, sizeof(t), 1, 50, 350, 7);
	expect_range(LT_LNOTAB, t, sizeof(t), 1, 350, 361, 207);
	expect_range(LT_LNOTAB, t, sizeof(t), 1, 361, 370, 208);
}

static void test_lnotab_past_end_keeps_last_line(void **state)
{
	(void)state;
	static const uint8_t t[] = {4, 3};
	assert_int_equal(LOOKUP(LT_LNOTAB, t, 10, 3), 10);
	assert_int_equal(LOOKUP(LT_LNOTAB, t, 10, 4), 13);
	assert_int_equal(LOOKUP(LT_LNOTAB, t, 10, 100000), 13);
}

static void test_lnotab_negative_line_delta(void **state)
{
	(void)state;
	/* +2 at offset 4, -2 (0xfe) at 8, -128 (0x80) at 10 */
	static const uint8_t t[] = {4, 2, 4, 0xfe, 2, 0x80};
	expect_range(LT_LNOTAB, t, sizeof(t), 200, 0, 4, 200);
	expect_range(LT_LNOTAB, t, sizeof(t), 200, 4, 8, 202);
	expect_range(LT_LNOTAB, t, sizeof(t), 200, 8, 10, 200);
	expect_range(LT_LNOTAB, t, sizeof(t), 200, 10, 20, 72);
}

static void test_lnotab_zero_address_increment(void **state)
{
	(void)state;
	/* a pair with address increment 0 applies at the current address */
	static const uint8_t t[] = {0, 1, 2, 1, 0, 5};
	assert_int_equal(LOOKUP(LT_LNOTAB, t, 10, 0), 11);
	assert_int_equal(LOOKUP(LT_LNOTAB, t, 10, 1), 11);
	assert_int_equal(LOOKUP(LT_LNOTAB, t, 10, 2), 17);
}

static void test_lnotab_truncated(void **state)
{
	(void)state;
	/* odd length: the lone trailing byte is ignored, like CPython's len/2 */
	static const uint8_t t[] = {4, 1, 4};
	assert_int_equal(LOOKUP(LT_LNOTAB, t, 10, 0), 10);
	assert_int_equal(LOOKUP(LT_LNOTAB, t, 10, 4), 11);
	assert_int_equal(LOOKUP(LT_LNOTAB, t, 10, 100), 11);
	/* one byte only */
	assert_int_equal(lookup(LT_LNOTAB, t, 1, 10, 8), 10);
}

static void test_lnotab_line_overflow(void **state)
{
	(void)state;
	static const uint8_t t[] = {0, 127, 2, 127};
	assert_int_equal(LOOKUP(LT_LNOTAB, t, INT_MAX - 200, 0), INT_MAX - 73);
	assert_int_equal(LOOKUP(LT_LNOTAB, t, INT_MAX - 200, 2), -1);
}

/* ---- co_linetable, 3.10 ---- */

static void test_lt310_ranges(void **state)
{
	(void)state;
	/* [0,6) +0 -> 10; [6,10) +1 -> 11; [10,12) no line; [12,20) +2 -> 13 */
	static const uint8_t t[] = {6, 0, 4, 1, 2, 0x80, 8, 2};
	expect_range(LT_LINETABLE310, t, sizeof(t), 10, 0, 6, 10);
	expect_range(LT_LINETABLE310, t, sizeof(t), 10, 6, 10, 11);
	expect_range(LT_LINETABLE310, t, sizeof(t), 10, 10, 12, -1);
	expect_range(LT_LINETABLE310, t, sizeof(t), 10, 12, 20, 13);
}

static void test_lt310_past_end(void **state)
{
	(void)state;
	static const uint8_t t[] = {4, 1};
	assert_int_equal(LOOKUP(LT_LINETABLE310, t, 10, 3), 11);
	assert_int_equal(LOOKUP(LT_LINETABLE310, t, 10, 4), -1);
	assert_int_equal(LOOKUP(LT_LINETABLE310, t, 10, 1000), -1);
}

static void test_lt310_zero_width_ranges(void **state)
{
	(void)state;
	/* [0,2) 11; an empty range at 2 (+3, never reported); [2,4) 11+3+1 */
	static const uint8_t t[] = {2, 1, 0, 3, 2, 1};
	expect_range(LT_LINETABLE310, t, sizeof(t), 10, 0, 2, 11);
	expect_range(LT_LINETABLE310, t, sizeof(t), 10, 2, 4, 15);
	/* leading empty ranges: big line steps written as 0-length pairs */
	static const uint8_t u[] = {0, 127, 0, 127, 4, 6};
	expect_range(LT_LINETABLE310, u, sizeof(u), 1, 0, 4, 261);
	/* an empty no-line range leaves the line alone */
	static const uint8_t v[] = {0, 0x80, 4, 0};
	expect_range(LT_LINETABLE310, v, sizeof(v), 10, 0, 4, 10);
	/* trailing empty range: nothing covers offset 4 */
	static const uint8_t w[] = {4, 1, 0, 2};
	assert_int_equal(LOOKUP(LT_LINETABLE310, w, 10, 4), -1);
}

static void test_lt310_no_line_keeps_running_line(void **state)
{
	(void)state;
	/* -128 does not move the line: after it, +0 means the line before it */
	static const uint8_t t[] = {2, 5, 2, 0x80, 2, 0, 2, 0xff};
	assert_int_equal(LOOKUP(LT_LINETABLE310, t, 10, 0), 15);
	assert_int_equal(LOOKUP(LT_LINETABLE310, t, 10, 2), -1);
	assert_int_equal(LOOKUP(LT_LINETABLE310, t, 10, 4), 15);
	assert_int_equal(LOOKUP(LT_LINETABLE310, t, 10, 6), 14);
}

static void test_lt310_truncated(void **state)
{
	(void)state;
	static const uint8_t t[] = {4, 1, 4};
	assert_int_equal(LOOKUP(LT_LINETABLE310, t, 10, 0), 11);
	assert_int_equal(LOOKUP(LT_LINETABLE310, t, 10, 4), -1);
	assert_int_equal(lookup(LT_LINETABLE310, t, 1, 10, 0), -1);
}

/* ---- location table, 3.11+ ---- */

#define ENTRY(code, units) ((uint8_t)(0x80 | ((code) << 3) | ((units) - 1)))

static void test_loc_all_forms(void **state)
{
	(void)state;
	static const uint8_t t[] = {
		ENTRY(0, 2), 0x05,		/* [0,4)   short, +0     -> 100 */
		ENTRY(11, 1), 4, 10,		/* [4,6)   one-line, +1  -> 101 */
		ENTRY(13, 3), 0x07,		/* [6,12)  no column, -3 -> 98 */
		ENTRY(15, 1),			/* [12,14) no location   -> -1 */
		ENTRY(14, 1), 0x50, 0x06,	/* [14,16) long, +200    -> 298 */
		0x00, 0x05, 0x09,		/*         endline+0, col 4, endcol 8 */
		ENTRY(10, 1), 1, 2,		/* [16,18) one-line, +0  -> 298 */
		ENTRY(12, 1), 1, 2,		/* [18,20) one-line, +2  -> 300 */
		ENTRY(9, 8), 0x12,		/* [20,36) short, +0     -> 300 */
	};
	expect_range(LT_LOCATIONS, t, sizeof(t), 100, 0, 4, 100);
	expect_range(LT_LOCATIONS, t, sizeof(t), 100, 4, 6, 101);
	expect_range(LT_LOCATIONS, t, sizeof(t), 100, 6, 12, 98);
	expect_range(LT_LOCATIONS, t, sizeof(t), 100, 12, 14, -1);
	expect_range(LT_LOCATIONS, t, sizeof(t), 100, 14, 18, 298);
	expect_range(LT_LOCATIONS, t, sizeof(t), 100, 18, 36, 300);
	expect_range(LT_LOCATIONS, t, sizeof(t), 100, 36, 40, -1);
}

static void test_loc_no_location(void **state)
{
	(void)state;
	/* code 15 first: no line; it has no delta, so +1 after it is first+1 */
	static const uint8_t t[] = {ENTRY(15, 2), ENTRY(11, 1), 0, 1, ENTRY(15, 1)};
	expect_range(LT_LOCATIONS, t, sizeof(t), 50, 0, 4, -1);
	expect_range(LT_LOCATIONS, t, sizeof(t), 50, 4, 6, 51);
	expect_range(LT_LOCATIONS, t, sizeof(t), 50, 6, 8, -1);
	assert_int_equal(LOOKUP(LT_LOCATIONS, t, 50, 8), -1);
}

static void test_loc_long_negative_delta(void **state)
{
	(void)state;
	/* -130: zigzag (130 << 1) | 1 = 261 = 5 + 4*64 -> 0x45, 0x04 */
	static const uint8_t t[] = {
		ENTRY(13, 1), 0x40 | 0x10, 0x06,	/* +200 -> 1200 */
		ENTRY(14, 1), 0x45, 0x04, 0, 1, 1,	/* -130 -> 1070 */
		ENTRY(14, 1), 0x03, 0x02, 0, 0,		/* -1, end+2, no columns -> 1069 */
	};
	assert_int_equal(LOOKUP(LT_LOCATIONS, t, 1000, 0), 1200);
	assert_int_equal(LOOKUP(LT_LOCATIONS, t, 1000, 2), 1070);
	assert_int_equal(LOOKUP(LT_LOCATIONS, t, 1000, 4), 1069);
	/* negative result lines are returned as they are */
	static const uint8_t u[] = {ENTRY(13, 1), 0x0b};	/* -5 */
	assert_int_equal(LOOKUP(LT_LOCATIONS, u, 2, 0), -3);
}

static void test_loc_big_varint(void **state)
{
	(void)state;
	/* six chunks: 2^31 + 2 = zigzag +2^30 + 1 */
	static const uint8_t t[] = {ENTRY(13, 1), 0x42, 0x40, 0x40, 0x40, 0x40, 0x02};
	assert_int_equal(LOOKUP(LT_LOCATIONS, t, 0, 0), (1 << 30) + 1);
	/* seven chunks cannot be a 32-bit value: corrupt */
	static const uint8_t u[] = {ENTRY(13, 1), 0x42, 0x40, 0x40, 0x40, 0x40, 0x40, 0x00};
	assert_int_equal(LOOKUP(LT_LOCATIONS, u, 0, 0), -1);
	/* a line past INT_MAX */
	static const uint8_t v[] = {ENTRY(13, 1), 0x42, 0x40, 0x40, 0x40, 0x40, 0x02};
	assert_int_equal(LOOKUP(LT_LOCATIONS, v, INT_MAX - 5, 0), -1);
}

static void test_loc_truncated(void **state)
{
	(void)state;
	/* table ends where a varint is due */
	static const uint8_t a[] = {ENTRY(0, 1), 0x00, ENTRY(13, 1)};
	assert_int_equal(LOOKUP(LT_LOCATIONS, a, 5, 0), 5);
	assert_int_equal(LOOKUP(LT_LOCATIONS, a, 5, 2), -1);
	/* table ends inside a varint (continuation bit set on the last byte) */
	static const uint8_t b[] = {ENTRY(14, 1), 0x50};
	assert_int_equal(LOOKUP(LT_LOCATIONS, b, 5, 0), -1);
	/* long form cut after the line delta: the line is still known */
	static const uint8_t c[] = {ENTRY(14, 1), 0x04};
	assert_int_equal(LOOKUP(LT_LOCATIONS, c, 5, 0), 7);
	assert_int_equal(LOOKUP(LT_LOCATIONS, c, 5, 2), -1);
	/* short form without its column byte */
	static const uint8_t d[] = {ENTRY(3, 2)};
	assert_int_equal(LOOKUP(LT_LOCATIONS, d, 5, 3), 5);
	assert_int_equal(LOOKUP(LT_LOCATIONS, d, 5, 4), -1);
}

static void test_loc_corrupt_start(void **state)
{
	(void)state;
	/* first byte is not an entry start */
	static const uint8_t t[] = {0x05, ENTRY(0, 1), 0x00};
	assert_int_equal(LOOKUP(LT_LOCATIONS, t, 5, 0), -1);
	assert_int_equal(LOOKUP(LT_LOCATIONS, t, 5, 2), -1);
}

/* ---- robustness ---- */

static uint32_t rng_next(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

static void test_random_bytes_never_overread(void **state)
{
	(void)state;
	uint32_t seed = 0x9e3779b9u;
	uint8_t buf[64];

	for (int round = 0; round < 3000; round++) {
		size_t len = rng_next(&seed) % (sizeof(buf) + 1);
		for (size_t i = 0; i < len; i++)
			buf[i] = (uint8_t)rng_next(&seed);
		uint8_t *exact;

		if (len && (round & 1))
			buf[0] |= 0x80;	/* give the 3.11 decoder a valid start */
		/* exactly len bytes on the heap: AddressSanitizer (make unit)
		 * fails the test on a read past them */
		exact = malloc(len ? len : 1);
		assert_non_null(exact);
		memcpy(exact, buf, len);
		for (int k = LT_LNOTAB; k <= LT_LOCATIONS; k++)
			for (int off = -2; off < 600; off += 7)
				(void)lookup(k, exact, len, (int)(rng_next(&seed) % 5000), off);
		free(exact);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_negative_offset_is_firstlineno),
		cmocka_unit_test(test_empty_table),
		cmocka_unit_test(test_unknown_kind),
		cmocka_unit_test(test_lnotab_notes_example),
		cmocka_unit_test(test_lnotab_past_end_keeps_last_line),
		cmocka_unit_test(test_lnotab_negative_line_delta),
		cmocka_unit_test(test_lnotab_zero_address_increment),
		cmocka_unit_test(test_lnotab_truncated),
		cmocka_unit_test(test_lnotab_line_overflow),
		cmocka_unit_test(test_lt310_ranges),
		cmocka_unit_test(test_lt310_past_end),
		cmocka_unit_test(test_lt310_zero_width_ranges),
		cmocka_unit_test(test_lt310_no_line_keeps_running_line),
		cmocka_unit_test(test_lt310_truncated),
		cmocka_unit_test(test_loc_all_forms),
		cmocka_unit_test(test_loc_no_location),
		cmocka_unit_test(test_loc_long_negative_delta),
		cmocka_unit_test(test_loc_big_varint),
		cmocka_unit_test(test_loc_truncated),
		cmocka_unit_test(test_loc_corrupt_start),
		cmocka_unit_test(test_random_bytes_never_overread),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
