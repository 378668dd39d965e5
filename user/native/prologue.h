/* prologue.h - unwind rules for x86-64 functions that have no CFI, read from
 * their first instructions.
 *
 * Hand-written assembly is often assembled without .cfi directives:
 * OpenBLAS's GEMM kernels (dgemm_kernel_ZEN, sgemm_beta_ZEN, ...) are where a
 * numpy or PyTorch program spends most of its time, and none has an FDE, so
 * the unwinder stopped at the leaf.  Such functions are leaves with a
 * simple, fixed prologue: push registers, lower rsp, perhaps keep the
 * entry rsp in rbx or rbp before aligning the stack.  This module follows
 * that prologue, instruction by instruction, as long as it understands
 * them, and takes the rule it reached for the rest of the function.  Where
 * the body moves rsp again (an epilogue, a push in a loop) the rule is
 * wrong; the unwinder then reads a return address that lands in no mapping
 * and marks the stack incomplete, as it did before.
 *
 * The rules are guesses, not the compiler's word: they fill only gaps of a
 * table (code no FDE covers) and only for functions a symbol sizes, and a
 * rule based on rbx (CFA_RBX) is followed only for the leaf frame, whose
 * registers are the sampled ones.
 *
 * Library code: nothing here prints or exits. */
#ifndef PYPERF_PROLOGUE_H
#define PYPERF_PROLOGUE_H

#include <stddef.h>
#include <stdint.h>

#include "pyperf.h"
#include "unwind_table.h"

/* The rows for a function at ELF address `start` whose first bytes are
 * code[0..len): a row at start, one after each instruction that changes the
 * rule, the last one holding to the function's end.  Returns how many (at
 * most cap, at least 1 when cap > 0). */
size_t prologue_rows(const uint8_t *code, size_t len, uint32_t start, struct unwind_row *out,
		     size_t cap);

/* Add rows for every sized function symbol (.symtab and .dynsym of the ELF
 * file open on fd) that lies wholly in a gap of t (CFA_NONE, or beyond the
 * last row).  A table without rows (a binary without CFI: frame pointers)
 * is left alone.  Returns how many functions got rows, or -1 on memory
 * exhaustion (t is then unchanged). */
long prologue_fill_gaps(int fd, struct unwind_table *t);

#endif
