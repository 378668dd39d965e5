/* nsym.h - names of native code addresses in one ELF binary, for the
 * profiler's output.
 *
 * The profiler keeps one nsym_bin per mapped binary.  It opens the file while
 * the target process is alive (perhaps through /proc/PID/map_files/...) and
 * hands over the descriptor; later it asks which function holds an ELF
 * virtual address (the st_value space: runtime address minus load bias).
 *
 * Symbols come from the best table elfutils' libdwfl finds, loaded on the
 * first question: the binary's own .symtab; else a separate debug file
 * (by build-id under /usr/lib/debug/.build-id/, or by .gnu_debuglink next to
 * the binary or under /usr/lib/debug); else .dynsym, plus .gnu_debugdata
 * (MiniDebugInfo) when present.  On x86-64, PLT stubs are named "foo@plt".
 * A debug file fetched elsewhere can be named by the caller
 * (nsym_open_debug).  libdwfl would also ask the debuginfod servers in
 * DEBUGINFOD_URLS itself, on the calling thread, for as long as they take:
 * the profiler takes that variable out of its environment and fetches in
 * helper processes instead (dbgfetch.h).
 *
 * A symbol names only the addresses inside it, value to value + size (a
 * symbol of size 0 names just its own address): a static function of a
 * stripped binary is never named after the exported function before it.
 * Function symbols only (and untyped labels in code); C++ names are
 * demangled, symbol versions ("@GLIBC_2.2.5") dropped.
 *
 * Link with -ldw -lelf and user/lib/demangle.c (libstdc++'s demangler, opened
 * when first needed).
 *
 * Library code: errors come back as NULL plus a one-line message; nothing
 * here prints or exits.  Not thread-safe: one thread per nsym_bin. */
#ifndef PYPERF_NSYM_H
#define PYPERF_NSYM_H

#include <stddef.h>
#include <stdint.h>

struct nsym_bin;

/* Take the binary open on `fd` (duplicated: the caller keeps and closes its
 * own fd).  `path` is the file's name as the target mapped it: the module
 * name is its basename (a " (deleted)" suffix dropped), and .gnu_debuglink
 * files are looked for next to it.  It need not be openable from here; when
 * it does not name the same file as `fd`, the debug-file search goes through
 * /proc/self/fd instead.  Only reads the ELF header: symbol tables and debug
 * files load on the first nsym_name/nsym_lookup/nsym_has_debug_file.
 * Returns NULL with a one-line message in err when fd is unreadable, empty,
 * not ELF, or not an executable or shared object. */
struct nsym_bin *nsym_open(int fd, const char *path, const char *debuginfo_path, char *err,
			   size_t errlen);
/* The same, with its debug file named (one fetched from a debuginfod
 * server): no search for another. */
struct nsym_bin *nsym_open_debug(int fd, const char *path, const char *debuginfo_path,
				 const char *debug_file, char *err, size_t errlen);
/* Free everything, close the duplicated descriptor.  NULL is fine. */
void nsym_close(struct nsym_bin *b);

/* Name of the function containing `vaddr`, NUL-terminated in buf (truncated
 * to len): the demangled C++ name when mangled, else the symbol's name.
 * When no symbol covers vaddr, "MODULE+0xOFF" (basename, vaddr in hex).
 * Returns 1 when a symbol named it, 0 for the fallback.  *sym_start (may be
 * NULL) gets the symbol's start, or vaddr itself on fallback.  Repeated
 * questions about one address are answered from a small cache. */
int nsym_name(struct nsym_bin *b, uint64_t vaddr, char *buf, size_t len, uint64_t *sym_start);

/* The source locations of vaddr from the binary's DWARF (its own, or its
 * debug file's): the line table's, then, when vaddr is in code inlined
 * into its function, each inlined call's site, innermost first; files with
 * their directory.  How many (up to max), 0 when the binary has no line
 * for it.  The names live until the next call. */
struct nsym_loc {
	const char *file;
	int line;
};
int nsym_source(struct nsym_bin *b, uint64_t vaddr, struct nsym_loc *out, int max);

/* Start and end (exclusive) of the function symbol called `name` exactly
 * (versions like "@GLIBC_2.2.5" ignored; no demangling), e.g.
 * "_PyEval_EvalFrameDefault" or "_PyEval_EvalFrameDefault.cold".  When
 * several symbols have the name, a sized global one wins.  Returns 0, or -1
 * when there is none. */
int nsym_lookup(struct nsym_bin *b, const char *name, uint64_t *start, uint64_t *end);

/* Basename of the binary. */
const char *nsym_module(const struct nsym_bin *b);
/* 1 if the symbols were read from those a run before kept in
 * /run/pyperf-bpf (same build, binary and debug file), not from the binary
 * (see nsym.c).  Loads the symbols if not yet done. */
int nsym_kept(struct nsym_bin *b);
/* 1 if a separate debug file was found (by build-id or .gnu_debuglink),
 * which happens only when the binary has no .symtab of its own; its .symtab
 * then names the functions.  Loads the symbols if not yet done. */
int nsym_has_debug_file(struct nsym_bin *b);
/* 1 if the binary has neither a .symtab nor a debug file here: a debug
 * file from elsewhere (debuginfod) would name more.  Loads the symbols. */
int nsym_wants_debug_file(struct nsym_bin *b);

#endif
