/* dwarfstruct.h - member offsets of a C struct as a binary's DWARF
 * describes it, for layouts a program publishes nowhere else (the 3.12 and
 * 3.13 _asyncio module's TaskObj).  Built on libdw. */
#ifndef PYPERF_DWARFSTRUCT_H
#define PYPERF_DWARFSTRUCT_H

#include <stddef.h>

/* In the DWARF of the ELF file at path, the struct named `type` (a typedef
 * name or a struct tag): offs[i] = byte offset of its member members[i], -1
 * where it has none (or it is a bit-field); *size its size (may be NULL).
 * 0: found; 1: the file has no DWARF, or no complete struct of that name;
 * -1 with a message: the file cannot be opened. */
int dwarf_struct_offsets(const char *path, const char *type, const char *const *members,
			 size_t n, long *offs, long *size, char *err, size_t errlen);

#endif
