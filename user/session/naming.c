/* naming.c - see naming.h.  Names are read the moment a stack is announced,
 * while the process is alive; a code object already named for this image
 * (same address and check) is not read again. */
#include "naming.h"
#include "ksyms.h"
#include "merge.h"
#include "native.h"
#include "profile.h"
#include "pyread.h"

#include <stdlib.h>
#include <string.h>

struct py_image {
	struct py_offsets off;
	uint32_t gen;
};

void naming_init(struct naming *n, struct native *nat)
{
	memset(n, 0, sizeof(*n));
	n->nat = nat;
}

void naming_free(struct naming *n)
{
	hmap_free(&n->python, free);
	memset(n, 0, sizeof(*n));
}

/* the profile's names of pid, read now (an exec changes them) */
static void describe(struct profile *p, int pid)
{
	char comm[PYPERF_COMM_LEN + 1], cmdline[256];

	proc_comm(pid, comm, sizeof(comm));
	proc_cmdline(pid, cmdline, sizeof(cmdline));
	profile_describe_proc(p, pid, comm, cmdline);
}

int naming_set_python(struct naming *n, struct profile *p, const struct pyproc *py, uint32_t gen)
{
	struct py_image *im = hmap_get(&n->python, &py->pid, sizeof(py->pid));
	struct pproc *pp;

	if (!im) {
		im = calloc(1, sizeof(*im));
		if (!im || hmap_put(&n->python, &py->pid, sizeof(py->pid), im)) {
			free(im);
			return -1;
		}
	}
	im->off = py->off;
	im->gen = gen;
	describe(p, py->pid);
	pp = profile_proc(p, py->pid);
	if (!pp)
		return -1;
	pp->py_major = py->major;
	pp->py_minor = py->minor;
	return 0;
}

bool naming_is_python(const struct naming *n, int pid)
{
	return hmap_get(&n->python, &pid, sizeof(pid)) != NULL;
}

void naming_forget(struct naming *n, int pid)
{
	free(hmap_del(&n->python, &pid, sizeof(pid)));
}

/* the function of Python frame f of image gen, read once */
static struct func *name_code(struct naming *n, struct profile *p, int pid, uint32_t gen,
			      const struct py_frame *f)
{
	struct code_ref c = { .addr = f->code, .check = f->check, .gen = gen };
	const struct py_image *im = hmap_get(&n->python, &pid, sizeof(pid));
	struct func *fn = profile_code(p, pid, &c);

	if (fn)
		return fn;
	if (im && im->gen == gen)
		fn = pyread_code(pid, f->code, f->check, &im->off);
	if (fn)
		return profile_keep_func(p, pid, fn, &c) ? NULL : fn;
	p->unresolved_frames++;
	fn = func_unknown_code(f->code);
	/* not kept under c: a later announcement may read it */
	return fn && !profile_keep_func(p, pid, fn, NULL) ? fn : NULL;
}

void naming_raw_of_event(const struct ev_stack *ev, struct raw_stack *out)
{
	out->pid = (int)ev->pid;
	out->tid = (int)ev->tid;
	out->gen = ev->gen;
	out->hash = ev->hash;
	out->flags = ev->flags;
	out->thread_name = ev->comm;
	out->py = ev->frames;
	out->npy = ev->nframes > PYPERF_MAX_FRAMES ? PYPERF_MAX_FRAMES : ev->nframes;
	out->native = ev->native;
	out->nnative = ev->nnative > PYPERF_MAX_NATIVE ? PYPERF_MAX_NATIVE : ev->nnative;
	out->kernel = ev->kernel;
	out->nkernel = ev->nkernel > PYPERF_KSTACK_DEPTH ? PYPERF_KSTACK_DEPTH : ev->nkernel;
}

int naming_add_stack(struct naming *n, struct profile *p, const struct raw_stack *s)
{
	/* what the stack is named from: its Python frames, its native ones,
	 * its kernel ones (off-CPU stacks) */
	static uint8_t ident[sizeof(struct py_frame) * PYPERF_MAX_FRAMES +
			     sizeof(uint64_t) * (PYPERF_MAX_NATIVE + PYPERF_KSTACK_DEPTH)];
	static struct pframe frames[PYPERF_MAX_FRAMES];
	static struct pframe merged[PYPERF_MAX_FRAMES + PYPERF_MAX_NATIVE + 2];
	static uint8_t entry[PYPERF_MAX_FRAMES];
	static const struct func *nat[PYPERF_MAX_NATIVE];
	struct stack_ref ref = { .pid = (uint32_t)s->pid, .gen = s->gen, .hash = s->hash };
	uint32_t np = s->npy > PYPERF_MAX_FRAMES ? PYPERF_MAX_FRAMES : s->npy;
	uint32_t nn = s->nnative > PYPERF_MAX_NATIVE ? PYPERF_MAX_NATIVE : s->nnative;
	uint32_t nk = s->nkernel > PYPERF_KSTACK_DEPTH ? PYPERF_KSTACK_DEPTH : s->nkernel;
	size_t pybytes = np * sizeof(*s->py), natbytes = nn * sizeof(*s->native);
	size_t nident = pybytes + natbytes + nk * sizeof(*s->kernel);
	/* a thread that ran no Python code: its native and kernel stack only */
	uint32_t flags = s->flags | (np ? 0 : STACK_NO_PYTHON);
	struct pproc *pp = profile_proc(p, s->pid);

	if (!pp)
		return -1;
	if (!pp->comm[0])
		describe(p, s->pid);
	profile_set_thread_name(p, (uint32_t)s->tid, s->thread_name);
	memcpy(ident, s->py, pybytes);
	memcpy(ident + pybytes, s->native, natbytes);
	if (nk)
		memcpy(ident + pybytes + natbytes, s->kernel, nk * sizeof(*s->kernel));
	if (profile_has_stack(p, &ref, flags, ident, nident))
		return 0;
	for (uint32_t i = 0; i < np; i++) {
		uint32_t instr = PY_FRAME_INSTR(s->py[i].instr);

		frames[i].fn = name_code(n, p, s->pid, s->gen, &s->py[i]);
		/* negative offsets (a frame not started yet) come masked */
		frames[i].instr = instr >= 0x7fff0000u ? UINT32_MAX : instr;
		entry[i] = !!(s->py[i].instr & PY_FRAME_ENTRY);
		if (!frames[i].fn)
			return -1;
	}
	if (!(flags & STACK_NATIVE) || !n->nat)
		return profile_insert_stack(p, &ref, flags, frames, np, (const uint64_t *)s->kernel,
					    nk, ident, nident);
	for (uint32_t i = 0; i < nn; i++)
		nat[i] = native_func(n->nat, s->pid, s->native[i], i == 0);
	np = merge_frames(frames, entry, np, nat, nn, flags, merged);
	np = merge_mark_gil(merged, np);
	return profile_insert_stack(p, &ref, flags, merged, np, (const uint64_t *)s->kernel, nk,
				    ident, nident);
}

void naming_name_kernel(struct profile *p)
{
	size_t n = 0;
	uint64_t *addrs = profile_unnamed_kernel(p, &n);
	char **names = n ? calloc(n, sizeof(*names)) : NULL;

	/* a daemon's later intervals often have none to name anew */
	if (addrs && names)
		ksyms_resolve("/proc/kallsyms", addrs, n, names);
	profile_set_kernel_names(p, addrs, names, names ? n : 0);
	free(addrs);
	free(names);
}
