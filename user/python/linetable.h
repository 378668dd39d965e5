/* linetable.h - map a bytecode offset to a source line, for every CPython
 * line-table format from 3.8 on.  Pure functions over bytes copied out of the
 * target's code object; no process access here. */
#ifndef PYPERF_LINETABLE_H
#define PYPERF_LINETABLE_H

#include <stddef.h>
#include <stdint.h>

enum py_linetable_kind {
	LT_LNOTAB = 0,      /* co_lnotab: (byte delta, signed line delta) pairs, 3.8 and 3.9 */
	LT_LINETABLE310 = 1,/* co_linetable of 3.10: (byte delta, line delta, -128 = none) */
	LT_LOCATIONS = 2,   /* co_linetable of 3.11+: PEP 626/657 location table */
};

/* Line of the instruction at `byte_offset` (as PyCode_Addr2Line does), or
 * `firstlineno` for a negative offset, or -1 when the table gives no line. */
int linetable_addr2line(enum py_linetable_kind kind, const uint8_t *table, size_t len,
			int firstlineno, int byte_offset);

#endif
