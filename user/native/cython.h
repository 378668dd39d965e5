/* cython.h - naming the native frames of Cython-compiled code as Cython's
 * source names them: `crunch (fastloop.pyx:7)` for a sample in the C
 * function Cython made of `def crunch` in fastloop.pyx, instead of
 * `__pyx_pw_8fastloop_1crunch (fastloop.cpython-311-x86_64-linux-gnu.so)`.
 *
 * How: a symbol `__pyx_{pw,pf,f,gb}_` + the length-prefixed components of
 * the module's dotted name (and of a class, for a method) + the function's
 * name (after the index Cython numbers wrappers with) gives the name.  The
 * line comes from the extension's DWARF line table: built with Cython's
 * line directives it names the .pyx line itself; else it names a line of
 * the generated C file, and the C file's own comments, which Cython writes
 * above the code of each source line (`/ * "fastloop.pyx":7` ...), give the
 * .pyx file and line, when that C file is still where it was built. */
#ifndef PYPERF_CYTHON_H
#define PYPERF_CYTHON_H

#include <stdbool.h>
#include <stddef.h>
#include "hmap.h"

/* The Cython name of symbol sym (a method as Class.method) into out, or
 * false when sym is not a Cython function symbol.  module: the extension's
 * module name (its file name up to the first '.'), which tells the module's
 * components from a class's; NULL or not found: the last name alone. */
bool cython_name(const char *sym, const char *module, char *out, size_t len);

/* Generated C files read so far: path -> their line map (bounded). */
struct cython_sources {
	struct hmap files;
};
void cython_sources_free(struct cython_sources *s);
/* The .pyx line that line cline of the generated C file cfile was made
 * from, and that .pyx file's name as Cython wrote it (valid while s is);
 * 0 when unknown (the C file is gone, or the line precedes every mark). */
int cython_source_line(struct cython_sources *s, const char *cfile, int cline,
		       const char **pyx);

#endif
