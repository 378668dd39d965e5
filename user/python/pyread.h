/* pyread.h - read CPython objects out of another process: str, bytes, and the
 * parts of a code object a profile needs (name, file, line table), as a
 * struct func (frame.h). */
#ifndef PYPERF_PYREAD_H
#define PYPERF_PYREAD_H

#include <stddef.h>
#include <stdint.h>
#include "frame.h"
#include "pyperf.h"

/* Where a PyObject's ob_type lies: after ob_refcnt, in every supported
 * (default, not free-threaded) build. */
#define PY_OB_TYPE 8

/* Copy len bytes at addr in pid; 0, or -errno. */
int mem_read(int pid, uint64_t addr, void *buf, size_t len);
/* how many reads mem_read made in this process, all threads (--stats-json) */
uint64_t mem_read_count(void);
/* The UTF-8 of str object obj (malloc'd), or NULL if it is not one; a str
 * longer than PYREAD_MAX_CHARS is cut there, ending "...[cut: N characters]". */
#define PYREAD_MAX_CHARS 4096
char *pyread_str(int pid, uint64_t obj, const struct py_offsets *o);
/* The first max characters of str object obj as UTF-8 with control
 * characters and NULs kept (for a repr: *bytes long; *chars: its length in
 * characters), malloc'd, or NULL. */
char *pyread_str_value(int pid, uint64_t obj, const struct py_offsets *o, size_t max,
		       size_t *bytes, uint64_t *chars);
/* A bytes object's contents (malloc'd, *len set), or NULL. */
uint8_t *pyread_bytes(int pid, uint64_t obj, const struct py_offsets *o, size_t *len);
/* Where the target's type objects for code, str and bytes lie (all 0: not
 * known, not checked).  A freed object keeps its fields until its memory is reused,
 * so a code object read after the sample that saw it may pass its check:
 * its type and reference count tell a freed one (see pyread.c). */
struct py_types {
	uint64_t code, str, bytes;
};

/* The code object at `code` whose py_code_check() is `check`, or NULL when it
 * cannot be read or is no longer that code object (nor its name, file or line
 * table objects of their types, when t says which those are; nor its name
 * and file the str objects the sampler saw, when `seen`, what it saw of
 * this code object, is given). */
struct func *pyread_code(int pid, uint64_t code, uint32_t check, const struct py_offsets *o,
			 const struct py_types *t, const struct code_id *seen);

/* The function of a code object freed since the sampler saw it, from what
 * it saw (struct code_id): its name and file if those str objects still
 * live, as it saw them (the name PYREAD_FREED_NAME if only the file does), its first line
 * (no line table); NULL if its file is gone too. */
#define PYREAD_FREED_NAME "<freed code>"

/* The characters of a str as the walk saw it (struct str_seen), as UTF-8,
 * when it saw them all (STR_TAIL bytes at most); else NULL. */
char *pyread_seen_text(const struct str_seen *seen);
struct func *pyread_code_id(int pid, const struct code_id *id, const struct py_offsets *o,
			    const struct py_types *t);

#endif
