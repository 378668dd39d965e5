/* dynlib.h - a shared library opened when first needed, not linked.
 *
 * What few runs use (libcurl for pushes, libdebuginfod in the fetch helper,
 * capstone for a stripped interpreter's split eval loop) is not linked into
 * the dynamic build: linked, each run loaded it and what it needs (44
 * libraries in all, 5 MB of capstone's RSS).  A user keeps its functions in
 * a struct of function pointers, in the order of a list of names.
 *
 * Library code: nothing here prints or exits. */
#ifndef PYPERF_DYNLIB_H
#define PYPERF_DYNLIB_H

#include <stddef.h>

/* dlopen soname and fill slots[i] with the function names[i] (n of them).
 * Returns the library's handle, or NULL with why in err (the library is
 * missing, or lacks one of the names; slots are then all NULL). */
void *dynlib_open(const char *soname, const char *const *names, void **slots, size_t n,
		  char *err, size_t errlen);

#endif
