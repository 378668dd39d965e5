/* pyobj.h - read Python values out of another process for people to look
 * at: a short repr of any object, an attribute of an instance, the local
 * variables of a frame (dump --locals) and the name of the threading.Thread
 * a thread state runs (Python thread names).
 *
 * Nothing here runs code in the target: every value is read from memory
 * with process_vm_readv, every read is checked and every walk is bounded,
 * and an object whose layout is not known is shown by its type name and
 * address.  Layouts come from struct py_offsets (the version table). */
#ifndef PYPERF_PYOBJ_H
#define PYPERF_PYOBJ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "pyperf.h"

#define PYOBJ_REPR_MAX 129           /* bytes of a repr, with its NUL: py-spy's
				      * default bound is 128 characters */
#define PYOBJ_NAME_MAX 64            /* bytes of a variable's name, with its NUL */
#define PYOBJ_MAX_LOCALS 256         /* variables shown per frame */

/* A short repr of obj into out, at most len - 1 bytes: Python's own for
 * None, bool, int, float, str, bytes and the exact types list, tuple, dict,
 * set and frozenset (their items' reprs); numpy's bool,
 * int and float scalars as str() shows them; the type and length of a
 * subclass of list, tuple or dict (its repr is its own); "<TYPE object at
 * 0x...>" otherwise; "<unreadable>" for what cannot be read.  What does not
 * fit is cut, marked "...": a str after 100 characters ('abc...'), a
 * container after its last item that fits ([1, 2, ...]).  Returns false
 * when something was cut. */
bool pyobj_repr(int pid, const struct py_offsets *o, uint64_t obj, char *out, size_t len);

/* The value of attribute `name` of instance obj of a Python class (one
 * whose attributes live in its __dict__ or its class's shared keys), or 0. */
uint64_t pyobj_attr(int pid, const struct py_offsets *o, uint64_t obj, const char *name);

struct pylocal {
	char name[PYOBJ_NAME_MAX];
	char repr[PYOBJ_REPR_MAX];
	uint64_t addr;               /* the object */
	bool arg;                    /* an argument of the function */
	bool cut;                    /* repr is not all of it ("..." marks where) */
};

/* The bound local variables of the frame at `frame` (PyFrameObject up to
 * 3.10, _PyInterpreterFrame after), which runs code object `code`:
 * arguments first, in their order, then the other locals; unbound ones are
 * left out, as are free variables (the enclosing function's).  Returns how
 * many (at most cap), or -1 when the code object cannot be read or the
 * version's layout is not known. */
int pyobj_locals(int pid, const struct py_offsets *o, uint64_t frame, uint64_t code,
		 struct pylocal *out, int cap);

/* The name of the threading.Thread object that thread state tstate runs
 * (its bottom frame is Thread._bootstrap, whose `self` it is), malloc'd, or
 * NULL when the thread was not started by threading (the main thread among
 * them) or it cannot be read. */
char *pyobj_thread_name(int pid, const struct py_offsets *o, uint64_t tstate);
/* The two steps of it: the Thread object (0: none), found by walking to the
 * thread's bottom frame; its name now (a thread renamed since), malloc'd.
 * never (may be NULL): set when there is none because the bottom frame was
 * read and is not threading's _bootstrap: a thread's bottom frame is its
 * entry point for as long as it runs (the main thread's <module>, a C
 * thread's callback), so it never will have one. */
uint64_t pyobj_thread_object(int pid, const struct py_offsets *o, uint64_t tstate, bool *never);
char *pyobj_thread_object_name(int pid, const struct py_offsets *o, uint64_t thread);

#endif
