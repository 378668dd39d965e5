/* native.h - native frames, seen from the loader.
 *
 * For each profiled process we read its executable mappings and, per distinct
 * binary (device and inode), build once the unwind table the BPF unwinder
 * needs (unwind_table.c) and copy it into the sampler's shared rows array.
 * The process's mappings, with the load bias of each and where its binary's
 * rows are, go to the `native_procs` map.
 *
 * The same records name native addresses later: a runtime address becomes
 * (binary, ELF address), and the binary's symbols (nsym.c) give the name.
 * Binaries stay open (by the descriptor taken while the process lived), so
 * processes that exited are still named.
 *
 * Library code: errors are returned, with a one-line message where asked. */
#ifndef PYPERF_NATIVE_H
#define PYPERF_NATIVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "hmap.h"
#include "pyperf.h"
#include "pyread.h"

struct sampler;
struct nbin;

struct native_stats {
	uint64_t binaries;           /* distinct binaries seen */
	uint64_t tables;             /* unwind tables built */
	uint64_t rows;               /* rows used in the shared array */
	uint64_t no_room;            /* binaries whose table did not fit */
	uint64_t build_ns;           /* time spent building tables */
	uint64_t mappings_dropped;   /* executable mappings beyond PYPERF_MAX_MAPPINGS */
};

/* Writes rows [start, start + n) of the shared array; 0 or -1. */
typedef int (*native_write_fn)(void *ctx, size_t start, const struct unwind_row *rows, size_t n);

struct native {
	native_write_fn write;       /* into the sampler's array (NULL: no tables) */
	void *write_ctx;
	size_t cap, used;
	struct hmap bins;            /* (dev, inode) -> struct nbin * */
	struct hmap procs;           /* pid -> struct nproc * */
	struct hmap funcs;           /* (nbin *, symbol start or address) -> struct pyfunc * */
	struct pyfunc *unknown;      /* "[unknown]" */
	struct native_stats st;
};

/* Unwind tables go through write into an array of cap rows (write NULL,
 * cap 0: no tables).  Row 0 is kept as a "no CFI here" row for binaries
 * whose table did not fit, row 1 for CPython's perf trampolines. */
void native_init(struct native *n, native_write_fn write, void *ctx, size_t cap);
void native_free(struct native *n);

/* (Re)read pid's mappings, build the tables of binaries not seen before, and
 * fill *out for the BPF map.  Returns 0, or -1 with a message (process gone,
 * unreadable maps). */
int native_proc_update(struct native *n, int pid, struct native_maps *out, char *err,
		       size_t errlen);
/* pid exited or exec'ed: its mappings are gone (binaries stay, for names). */
void native_proc_forget(struct native *n, int pid);

/* The function at runtime address pc of pid, named (interned; lives as long
 * as n).  `leaf`: pc is where the thread was, else a return address (named
 * by the call before it).  kind FN_EVAL for the interpreter's eval loop. */
const struct pyfunc *native_func(struct native *n, int pid, uint64_t pc, bool leaf);

#endif
