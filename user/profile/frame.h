/* frame.h - what the frames of a profile are: the vocabulary shared by the
 * readers that name frames (pyread.c for Python code, native.c and nsym.c
 * for native code), the profile that counts stacks of them, and every
 * output format that writes them.
 *
 * A frame runs a `struct func`: a Python code object, a native function (in
 * a `struct binary`), the interpreter's eval loop, or a marker that says
 * where a stack is incomplete.  Funcs are interned by their readers and
 * stacks hold plain pointers to them: a Python code object's lives as long
 * as its process's entry in the profile, a native function's until a sweep
 * (native.h) finds no kept stack holding any function of its binary and no
 * process mapping it, markers for the whole run. */
#ifndef PYPERF_FRAME_H
#define PYPERF_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* What a frame of a merged stack is. */
enum func_kind {
	FN_PYTHON = 0,         /* a code object */
	FN_NATIVE,             /* a native function (name: symbol, file: binary) */
	FN_EVAL,               /* native, and the interpreter's eval loop */
	FN_MARK,               /* a marker such as "[native incomplete]" (name only) */
};

/* The binary of native functions, for formats that describe it (pprof). */
struct binary {
	const char *path;      /* as the process mapped it */
	char build_id[65];     /* GNU build-id in hex, or "" */
	uint64_t lo, hi;       /* ELF addresses its executable segments span */
	uint64_t offset;       /* file offset of the segment at lo */
};

/* A named code object, a native function or a marker. */
struct func {
	char *name;            /* co_qualname where the version has it, else co_name */
	char *file;            /* co_filename */
	int firstlineno;
	uint8_t lt_kind;       /* enum py_linetable_kind */
	uint8_t *lt;           /* line table bytes */
	size_t lt_len;
	uint8_t kind;          /* enum func_kind (FN_PYTHON: 0) */
	/* native functions: */
	const struct binary *bin; /* NULL: no known binary (JIT code, [unknown]) */
	uint64_t addr;         /* ELF address of the symbol, or of the code if unnamed */
	/* compiled Python (a Cython function's code, kind FN_PYTHON): the
	 * source line of this func's addresses (one func per line, all with
	 * the function's firstlineno); 0 for every other func */
	int line;
	uint32_t seen;         /* the last sweep that found a kept stack holding
				* it (native_sweep_begin); never set on FN_MARK */
	bool no_lines;         /* named from what the walk saw once its process had
				* ended: no line table was read, so no line is
				* known (func_line says 0) */
};

/* Where a subinterpreter's frames begin: a marker "<interpreter ID>". */
static inline int func_is_interp(const struct func *f)
{
	return f->kind == FN_MARK && f->name && !strncmp(f->name, "<interpreter ", 13);
}

/* An asyncio task's frame (--async): a marker named "<task NAME>", which
 * tables of functions (top) still list, as the task's time. */
static inline int func_is_task(const struct func *f)
{
	return f->kind == FN_MARK && f->name && !strncmp(f->name, "<task ", 6);
}

/* A placeholder for a code object that could not be read. */
struct func *func_unknown_code(uint64_t code);
/* Source line of the instruction at byte offset instr of a Python func
 * (UINT32_MAX: not started; the first line). */
int func_line(const struct func *f, uint32_t instr);
/* A copy of a Python func, its strings and line table its own; NULL: no
 * memory. */
struct func *func_dup(const struct func *f);
void func_free(struct func *f);

#endif
