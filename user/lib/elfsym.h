/* elfsym.h - what the profiler needs to know about an ELF file on disk:
 * addresses of named symbols, where the file sits in a process (load bias),
 * and its GNU build-id.  Built on libelf (link with -lelf).
 *
 * Library code: errors come back as -1 plus, where the signature has one, a
 * one-line message naming the file in a caller-supplied buffer; nothing here
 * prints or exits. */
#ifndef PYPERF_ELFSYM_H
#define PYPERF_ELFSYM_H

#include <gelf.h>
#include <stddef.h>
#include <stdint.h>

#include "procmaps.h"

/* Call fn for each named function symbol (STT_FUNC) of e's .symtab, in
 * table order, until it returns non-zero: that value, or 0 when it never
 * did (or e has no .symtab). */
int elf_each_function(Elf *e, int (*fn)(void *ctx, const GElf_Sym *sym, const char *name),
		      void *ctx);

/* Look up `n` symbol names in .dynsym and .symtab of the ELF file at `path`
 * (.dynsym first; at most one pass over each table, none over .symtab when
 * .dynsym defines them all).  values[i] is the symbol's st_value (a link-time
 * virtual address: add the load bias for the runtime address) and sizes[i]
 * its st_size; both 0 when the name is not defined in the file.  `sizes` may
 * be NULL.  A defined global/weak symbol wins over a local one of the same
 * name; undefined (imported) entries are ignored.
 * Returns 0, or -1 with a message when the file can't be opened or parsed as
 * ELF (a missing symbol is not an error). */
int elf_find_symbols(const char *path, const char *const *names, size_t n,
		     uint64_t *values, uint64_t *sizes, char *err, size_t errlen);

/* Load bias of the ELF file at `path` in the process whose memory map is
 * `maps`, where that process maps the same file as `mapped_path` (usually
 * path is procmaps_host_path() of mapped_path).  runtime address = symbol
 * value + *bias.  ET_EXEC: *bias = 0 (maps unused, may be NULL).  ET_DYN:
 * each mapping of `mapped_path` whose file offset equals a PT_LOAD segment's
 * page-aligned offset (with compatible x/w permissions) proposes
 * start - page-aligned p_vaddr; the value proposed most often wins, so a page
 * shared by two segments does not mislead.  Returns 0, or -1 with a message
 * (unreadable file, not ET_EXEC/ET_DYN, or no mapping matching a segment). */
int elf_load_bias(const char *path, const struct proc_maps *maps,
		  const char *mapped_path, uint64_t *bias, char *err, size_t errlen);

/* GNU build-id of the file at `path` as lowercase hex, NUL-terminated, in
 * `hex` (needs 2 * id bytes + 1; 41 for the usual SHA-1 id).  Looks in
 * PT_NOTE segments first, then SHT_NOTE sections.  Returns 0, or -1 when the
 * file can't be read as ELF, has no build-id, or `len` is too small. */
int elf_read_build_id(const char *path, char *hex, size_t len);

/* The first len bytes of section `name` (e.g. ".AsyncioDebug") of the ELF
 * file at `path` into buf, *got of them (0 where the section holds none).
 * 0: found; 1: the file has no such section; -1 with a message: the file
 * cannot be read as ELF. */
int elf_read_section(const char *path, const char *name, void *buf, size_t len,
		     size_t *got, char *err, size_t errlen);

#endif
