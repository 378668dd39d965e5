/* evalparts.h - find the pieces of CPython's eval loop that a stripped
 * interpreter does not name.
 *
 * GCC splits a large function: the parts a profile (PGO) or its heuristics
 * call cold go to a separate stretch of .text, "_PyEval_EvalFrameDefault.cold",
 * a local symbol.  Only .symtab names it, and Debian ships .symtab in the
 * -dbg package.  In Debian's 3.14 and 3.15 builds the exported
 * _PyEval_EvalFrameDefault is a 1-kB entry part and the opcodes run in the
 * 80-kB split part, so without -dbg no sampled frame was seen as the eval
 * loop and no stack merged.
 *
 * What is always there: .dynsym's _PyEval_EvalFrameDefault and .eh_frame,
 * where the compiler gave the split part an FDE of its own.  The exported
 * part reaches the split part by direct jumps (jmp and jcc, not calls), so:
 * decode the exported function's instructions (capstone), take the targets
 * of its direct jumps that lie outside it, and each FDE range holding such a
 * target is a part of the loop.  A target that is the start of an exported
 * function is a tail call, not a part, and is left out.
 *
 * Library code: nothing here prints or exits. */
#ifndef PYPERF_EVALPARTS_H
#define PYPERF_EVALPARTS_H

#include <libelf.h>
#include <stddef.h>
#include <stdint.h>

struct evalpart {
	uint64_t start, end;         /* ELF addresses, [start, end) */
};

/* Is `addr` the start of an exported function?  (Tail-call targets.) */
typedef int (*evalparts_is_func)(void *ctx, uint64_t addr);

/* The parts of the function [start, end) of `elf` (its code read from the
 * section holding it) that lie elsewhere: FDE ranges of .eh_frame reached
 * by its direct jumps, at most `cap`, sorted and distinct.  Returns how many
 * (0 when the code cannot be read or decoded, or there are none). */
size_t evalparts_find(Elf *elf, uint64_t start, uint64_t end, evalparts_is_func is_func,
		      void *ctx, struct evalpart *out, size_t cap);

#endif
