/* nsym.h - names of native code addresses of one ELF binary.
 *
 * The profiler keeps one nsym_bin per mapped binary, opened from the file
 * descriptor it took while the process was alive, and asks for the function
 * at an ELF virtual address (runtime address - load bias).  Symbols come from
 * the best table elfutils' libdwfl finds: the binary's .symtab, else a
 * separate debug file (by build-id under /usr/lib/debug/.build-id, or by
 * .gnu_debuglink), else .gnu_debugdata, else .dynsym.  A symbol names only the
 * addresses inside it (value to value + size): a stripped binary's static
 * function is never named after the exported one before it.  C++ names are
 * demangled.
 *
 * Library code: errors come back as NULL plus a one-line message. */
#ifndef PYPERF_NSYM_H
#define PYPERF_NSYM_H

#include <stddef.h>
#include <stdint.h>

struct nsym_bin;

/* Take the binary open on fd (duplicated; the caller keeps fd).  `path` is
 * the name the target mapped it under: the module name is its basename, and
 * .gnu_debuglink files are looked for next to it.  Symbols load on first use.
 * NULL with a message when fd is not an ELF file. */
struct nsym_bin *nsym_open(int fd, const char *path, char *err, size_t errlen);
void nsym_close(struct nsym_bin *b);

/* Name of the function containing vaddr into buf: the (demangled) symbol,
 * or "MODULE+0xOFF" when no symbol covers it.  Returns 1 when a symbol named
 * it (*sym_start, may be NULL, gets its start), 0 for the fallback
 * (*sym_start = vaddr). */
int nsym_name(struct nsym_bin *b, uint64_t vaddr, char *buf, size_t len, uint64_t *sym_start);

/* Start and end (exclusive) of the function symbol `name`; 0, or -1. */
int nsym_lookup(struct nsym_bin *b, const char *name, uint64_t *start, uint64_t *end);

/* Basename of the binary. */
const char *nsym_module(const struct nsym_bin *b);
/* 1 if symbols came from a separate debug file. */
int nsym_has_debug_file(struct nsym_bin *b);

/* Where separate debug files are searched (libdwfl's syntax, e.g.
 * ":.debug:/usr/lib/debug"); NULL: libdwfl's default.  Set before use. */
extern const char *nsym_debuginfo_path;

#endif
