/* pyread.h - read CPython objects out of another process: str, bytes, and the
 * parts of a code object a profile needs (name, file, line table). */
#ifndef PYPERF_PYREAD_H
#define PYPERF_PYREAD_H

#include <stddef.h>
#include <stdint.h>
#include "pyperf.h"

/* What a frame of a merged stack is. */
enum pyfunc_kind {
	FN_PYTHON = 0,         /* a code object */
	FN_NATIVE,             /* a native function (name: symbol, file: binary) */
	FN_EVAL,               /* native, and the interpreter's eval loop */
	FN_MARK,               /* a marker such as "[native incomplete]" (name only) */
};

/* The binary of native functions, for formats that describe it (pprof). */
struct pybin {
	const char *path;      /* as the process mapped it */
	char build_id[65];     /* GNU build-id in hex, or "" */
	uint64_t lo, hi;       /* ELF addresses its executable segments span */
	uint64_t offset;       /* file offset of the segment at lo */
};

/* A named code object, or a native function.  Lives until the end of the run. */
struct pyfunc {
	char *name;            /* co_qualname where the version has it, else co_name */
	char *file;            /* co_filename */
	int firstlineno;
	uint8_t lt_kind;       /* enum py_linetable_kind */
	uint8_t *lt;           /* line table bytes */
	size_t lt_len;
	uint8_t kind;          /* enum pyfunc_kind (FN_PYTHON: 0) */
	/* native functions: */
	const struct pybin *bin; /* NULL: no known binary (JIT code, [unknown]) */
	uint64_t addr;         /* ELF address of the symbol, or of the code if unnamed */
};

/* Copy len bytes at addr in pid; 0, or -errno. */
int mem_read(int pid, uint64_t addr, void *buf, size_t len);
/* A str object as malloc'd UTF-8, or NULL. */
char *pyread_str(int pid, uint64_t obj, const struct py_offsets *o);
/* A bytes object's contents (malloc'd, *len set), or NULL. */
uint8_t *pyread_bytes(int pid, uint64_t obj, const struct py_offsets *o, size_t *len);
/* The code object at `code` whose py_code_check() is `check`, or NULL when it
 * cannot be read or is no longer that code object. */
struct pyfunc *pyread_code(int pid, uint64_t code, uint32_t check, const struct py_offsets *o);
/* A placeholder for a code object that could not be read. */
struct pyfunc *pyfunc_unknown(uint64_t code);
/* Source line of the instruction at byte offset instr (UINT32_MAX: not started). */
int pyfunc_line(const struct pyfunc *f, uint32_t instr);
void pyfunc_free(struct pyfunc *f);

#endif
