/* linetable.c - map a bytecode byte offset to a source line, for the three
 * line-table encodings CPython has used since 3.8.
 *
 * How: each table is walked forward from its first byte while a running line
 * number is kept, starting at co_firstlineno, until the entry whose byte range
 * holds the offset is reached; the answer is what PyCode_Addr2Line of that
 * CPython version (Objects/codeobject.c) returns for the same offset:
 *
 *   co_lnotab (3.8, 3.9)     (uint8 offset increment, int8 line increment)
 *                            pairs; the line is the sum of the line
 *                            increments of every pair whose cumulative offset
 *                            is <= the query, so an offset past the end gets
 *                            the last line (Objects/lnotab_notes.txt).
 *   co_linetable (3.10)      (uint8 range length, int8 line delta) pairs; each
 *                            pair is the next range [end, end + length); a
 *                            delta of -128 means "no line" for that range and
 *                            leaves the running line alone; zero-length ranges
 *                            are skipped but their deltas still count.  An
 *                            offset past the last range has no line (-1).
 *   location table (3.11+)   PEP 626/657 entries, each a first byte with bit 7
 *                            set (code = bits 3-6, length = bits 0-2 plus one
 *                            code unit of 2 bytes) and continuation bytes with
 *                            bit 7 clear.  Only the start-line delta matters
 *                            here: codes 13 and 14 carry it as a zigzag varint
 *                            (6-bit chunks, least significant first, 0x40 =
 *                            more), codes 10-12 mean delta code-10, codes 0-9
 *                            delta 0, and code 15 means "no location" (-1,
 *                            delta 0).  Past the last entry: -1
 *                            (Objects/locations.md).
 *
 * A negative offset gives co_firstlineno in every version.  Every read is
 * bounds-checked against `len`: a truncated or corrupt table gives -1 for the
 * offsets it can no longer describe (co_lnotab: the line reached so far, as
 * CPython ignores a trailing odd byte), never a read past the end.  Lines are
 * summed in 64 bits; a sum outside the range of int is reported as -1. */
#include "linetable.h"

#include <limits.h>

#define CODE_UNIT 2		/* sizeof(_Py_CODEUNIT) */
#define LT310_NO_LINE (-128)	/* 3.10 line delta meaning "no line" */
#define LOC_NONE 15		/* PY_CODE_LOCATION_INFO_NONE */
#define LOC_LONG 14		/* PY_CODE_LOCATION_INFO_LONG */
#define LOC_NO_COLUMNS 13	/* PY_CODE_LOCATION_INFO_NO_COLUMNS */
#define LOC_ONE_LINE0 10	/* PY_CODE_LOCATION_INFO_ONE_LINE0..2 = 10..12 */
#define VARINT_MAX_CHUNKS 6	/* 36 bits: enough for any 32-bit value */

static int to_line(int64_t line)
{
	return line < INT_MIN || line > INT_MAX ? -1 : (int)line;
}

/* 3.8/3.9 co_lnotab. */
static int lnotab_addr2line(const uint8_t *t, size_t len, int firstlineno, int off)
{
	int64_t line = firstlineno, addr = 0;

	for (size_t i = 0; i + 1 < len; i += 2) {
		addr += t[i];
		if (addr > off)
			break;
		line += (int8_t)t[i + 1];
	}
	return to_line(line);
}

/* 3.10 co_linetable. */
static int lt310_addr2line(const uint8_t *t, size_t len, int firstlineno, int off)
{
	int64_t line = firstlineno, end = 0;

	for (size_t i = 0; i + 1 < len; i += 2) {
		int delta = (int8_t)t[i + 1];

		end += t[i];
		if (delta != LT310_NO_LINE)
			line += delta;
		if (end > off)	/* zero-length ranges never get here */
			return delta == LT310_NO_LINE ? -1 : to_line(line);
	}
	return -1;
}

/* Unsigned varint at t[*pos]; advances *pos.  0 on success, -1 if the table
 * ends inside it or it has more chunks than a 32-bit value needs. */
static int loc_varint(const uint8_t *t, size_t len, size_t *pos, uint32_t *out)
{
	uint32_t val = 0;

	for (unsigned chunk = 0; chunk < VARINT_MAX_CHUNKS; chunk++) {
		if (*pos >= len)
			return -1;
		uint8_t b = t[(*pos)++];
		val |= (uint32_t)(b & 63) << (6 * chunk);
		if (!(b & 64)) {
			*out = val;
			return 0;
		}
	}
	return -1;
}

/* Start-line delta of the entry whose first byte is t[pos]; -1 if the entry
 * is cut short. */
static int loc_line_delta(const uint8_t *t, size_t len, size_t pos, int64_t *delta)
{
	int code = (t[pos] >> 3) & 15;
	uint32_t u;

	*delta = 0;
	if (code == LOC_LONG || code == LOC_NO_COLUMNS) {
		pos++;
		if (loc_varint(t, len, &pos, &u) < 0)
			return -1;
		*delta = (u & 1) ? -(int64_t)(u >> 1) : (int64_t)(u >> 1);
	} else if (code >= LOC_ONE_LINE0 && code < LOC_NO_COLUMNS) {
		*delta = code - LOC_ONE_LINE0;
	}
	return 0;
}

/* Index of the first byte of the entry after the one starting at pos. */
static size_t loc_next_entry(const uint8_t *t, size_t len, size_t pos)
{
	do
		pos++;
	while (pos < len && !(t[pos] & 128));
	return pos;
}

/* 3.11+ location table. */
static int locations_addr2line(const uint8_t *t, size_t len, int firstlineno, int off)
{
	int64_t line = firstlineno, end = 0, delta;

	for (size_t pos = 0; pos < len; pos = loc_next_entry(t, len, pos)) {
		uint8_t first = t[pos];

		if (!(first & 128) || loc_line_delta(t, len, pos, &delta) < 0)
			return -1;	/* not an entry start, or cut short */
		line += delta;
		end += ((first & 7) + 1) * CODE_UNIT;
		if (end > off)
			return ((first >> 3) & 15) == LOC_NONE ? -1 : to_line(line);
	}
	return -1;
}

int linetable_addr2line(enum py_linetable_kind kind, const uint8_t *table, size_t len,
			int firstlineno, int byte_offset)
{
	if (byte_offset < 0)
		return firstlineno;
	if (!table)
		len = 0;
	switch (kind) {
	case LT_LNOTAB:
		return lnotab_addr2line(table, len, firstlineno, byte_offset);
	case LT_LINETABLE310:
		return lt310_addr2line(table, len, firstlineno, byte_offset);
	case LT_LOCATIONS:
		return locations_addr2line(table, len, firstlineno, byte_offset);
	}
	return -1;
}
