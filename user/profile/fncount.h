/* fncount.h - own and total samples per function over a profile's samples,
 * what the report and `top` rank.
 *
 * A function is its name, file and first line: the same code object read
 * twice (in another process, or another generation of one) is one function.
 * Own counts the samples where it is the leaf, total the samples where it is
 * anywhere on the stack, once per sample however deep it recurses.  The part
 * of each from stacks taken off the CPU (--mode wall) is kept apart too. */
#ifndef PYPERF_FNCOUNT_H
#define PYPERF_FNCOUNT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "frame.h"
#include "hmap.h"
#include "profile.h"

struct fn_count {
	const struct func *fn;       /* the first func seen under its key */
	uint64_t own, total;
	uint64_t own_off, total_off; /* of those, in stacks taken off the CPU */
	size_t last;                 /* the last sample that added to total */
};

struct fn_counts {
	bool skip_marks;             /* markers ("[native incomplete]"; not tasks) are no
				      * functions: the leaf is the first other frame */
	bool skip_startup;           /* the native frames root side of a stack's outermost
				      * Python frame (the interpreter's start-up chain:
				      * _start ... PyEval_EvalCode; a thread's start) are
				      * not counted: they only call into the program */
	struct hmap by_key;          /* key -> struct fn_count */
	size_t samples;              /* samples added */
};

/* Add one sample (a stack seen count times); 0, or -1 out of memory. */
int fn_counts_add(struct fn_counts *c, const struct pstack *st, uint64_t count);
/* The counts of the function fn is, or NULL if no sample had it. */
const struct fn_count *fn_counts_get(const struct fn_counts *c, const struct func *fn);
/* Every function's counts, in no order (malloc'd array, *n entries), or NULL. */
struct fn_count **fn_counts_list(const struct fn_counts *c, size_t *n);
void fn_counts_free(struct fn_counts *c);

#endif
