/* gdbjit.h - names of JIT code from the GDB JIT interface.
 *
 * A JIT that wants debuggers to name its code registers an in-memory ELF
 * object per batch of code in a list headed by a global the debugger knows
 * by name, __jit_debug_descriptor (GDB's "JIT Compilation Interface"):
 *
 *   struct jit_descriptor { uint32_t version; uint32_t action_flag;
 *                           struct jit_code_entry *relevant, *first; };
 *   struct jit_code_entry { struct jit_code_entry *next, *prev;
 *                           const char *symfile_addr; uint64_t symfile_size; };
 *
 * LLVM's MCJIT registers every object it loads there (numba's kernels,
 * through llvmlite), with the sections' addresses set to where they were
 * loaded.  This module reads that list out of a running process and takes
 * each object's sized function symbols as JIT symbols.  Everything read is
 * the target's memory, so bounded: GDBJIT_MAX_ENTRIES entries, objects of at
 * most GDBJIT_MAX_OBJECT bytes, GDBJIT_MAX_TOTAL bytes a read.
 *
 * Library code: nothing here prints or exits. */
#ifndef PYPERF_GDBJIT_H
#define PYPERF_GDBJIT_H

#include <stddef.h>
#include <stdint.h>

#include "perfmap.h"

#define GDBJIT_SYMBOL "__jit_debug_descriptor"
#define GDBJIT_MAX_ENTRIES 4096
#define GDBJIT_MAX_OBJECT (16u << 20)
#define GDBJIT_MAX_TOTAL (64u << 20)

/* Symbols of the objects registered with the descriptor at `desc` (a runtime
 * address) in process pid, appended to m (sorted after).  Returns how many
 * objects were read, or -1 when the descriptor cannot be read. */
int gdbjit_read(int pid, uint64_t desc, struct perfmap *m);

/* The same, from an object already in memory (for tests and fuzzing):
 * one ELF image, its symbols appended to m (not sorted). */
void gdbjit_add_object(const void *image, size_t size, struct perfmap *m);

#endif
