/* naming.c - see naming.h.  Names are read the moment a stack is announced,
 * while the process is alive; a code object already named for this image
 * (same address and check) is not read again. */
#include "naming.h"
#include "clock.h"
#include "ksyms.h"
#include "merge.h"
#include "native.h"
#include "procmaps.h"
#include "profile.h"
#include "pyasync.h"
#include "pyobj.h"
#include "pyread.h"
#include "sampler.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct py_image {
	struct py_offsets off;
	struct py_types types;
	uint32_t gen;
	struct pyasync *async;       /* --async, once asyncio was found; NULL: none */
	int copy_of;                 /* a forked copy: its parent, whose memory holds
				      * the same objects (read once the copy is gone) */
	struct hmap files;           /* co_filename's address -> struct seen_file *: the
				      * files named, for code named once the process is
				      * gone (name_from_seen) */
	uint64_t exited_ns;          /* in naming.exited: when it exited */
};

/* a file str named, and what the walk saw of it */
struct seen_file {
	struct str_seen seen;
	char text[];
};

#define SEEN_FILES_MAX 1024 /* per image: files, not functions */

static void image_free(void *v)
{
	struct py_image *im = v;

	if (im) {
		free(im->async);
		hmap_free(&im->files, free);
	}
	free(im);
}

void naming_init(struct naming *n, struct native *nat)
{
	memset(n, 0, sizeof(*n));
	n->nat = nat;
}

void naming_free(struct naming *n)
{
	hmap_free(&n->python, image_free);
	hmap_free(&n->exited, image_free);
	memset(n, 0, sizeof(*n));
}

/* the profile's names of pid, read now (an exec changes them) */
static void describe(struct profile *p, int pid)
{
	char comm[PYPERF_COMM_LEN + 1], cmdline[256];

	struct pproc *pp;

	proc_comm(pid, comm, sizeof(comm));
	proc_cmdline(pid, cmdline, sizeof(cmdline));
	profile_describe_proc(p, pid, comm, cmdline);
	pp = hmap_get(&p->procs, &pid, sizeof(pid));
	if (pp) { /* where it runs: a container's pid namespace, its cgroup */
		pp->ns_pid = procmaps_ns_pid(pid);
		container_of_pid(pid, &pp->ctr);
	}
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
	im->types = py->types;
	im->gen = gen;
	im->copy_of = 0;
	hmap_free(&im->files, free); /* another image's addresses */
	memset(&im->files, 0, sizeof(im->files));
	free(im->async); /* a new image: its asyncio is found afresh */
	im->async = NULL;
	describe(p, py->pid);
	pp = profile_proc(p, py->pid);
	if (!pp)
		return -1;
	pp->py_major = py->major;
	pp->py_minor = py->minor;
	return 0;
}

int naming_set_copy(struct naming *n, struct profile *p, int pid, int ppid, uint32_t gen)
{
	const struct py_image *parent = hmap_get(&n->python, &ppid, sizeof(ppid));
	struct py_image *im = hmap_get(&n->python, &pid, sizeof(pid));
	const struct pproc *pparent;
	struct pproc *pp;

	if (!parent || parent->gen != gen)
		return 0; /* the parent is another image by now: nothing to read */
	if (!im) {
		im = calloc(1, sizeof(*im));
		if (!im || hmap_put(&n->python, &pid, sizeof(pid), im)) {
			free(im);
			return -1;
		}
		im->off = parent->off;
		im->types = parent->types;
		im->gen = gen;
	} else if (im->gen != gen) {
		return 0;
	}
	im->copy_of = ppid;
	pp = profile_proc(p, pid);
	pparent = hmap_get(&p->procs, &ppid, sizeof(ppid));
	if (!pp)
		return -1;
	if (!pp->comm[0])
		describe(p, pid);
	/* gone already (a zombie's command line reads empty): its parent's
	 * names, which were its own as a copy */
	if (pparent && !pp->cmdline[0])
		profile_describe_proc(p, pid, pparent->comm, pparent->cmdline);
	if (pparent && !pp->py_major) {
		pp->py_major = pparent->py_major;
		pp->py_minor = pparent->py_minor;
	}
	return 0;
}

bool naming_is_python(const struct naming *n, int pid)
{
	return hmap_get(&n->python, &pid, sizeof(pid)) != NULL;
}

uint32_t naming_gen(const struct naming *n, int pid)
{
	const struct py_image *im = hmap_get(&n->python, &pid, sizeof(pid));

	return im ? im->gen : 0;
}

void naming_exited(struct naming *n, int pid, uint64_t now)
{
	struct py_image *im = hmap_del(&n->python, &pid, sizeof(pid));

	if (!im)
		return;
	image_free(hmap_del(&n->exited, &pid, sizeof(pid))); /* an earlier one of pid */
	im->exited_ns = now;
	if (hmap_put(&n->exited, &pid, sizeof(pid), im))
		image_free(im); /* out of memory: let go now */
}

static bool take_exited(void *val, void *now)
{
	struct py_image *im = val;

	if (*(const uint64_t *)now - im->exited_ns < NATIVE_EXITED_KEEP_NS)
		return false;
	image_free(im);
	return true;
}

void naming_sweep_exited(struct naming *n, uint64_t now)
{
	(void)hmap_take_if(&n->exited, take_exited, &now);
}

/* pid's image gen: the current one, or the one that exited lately (*exited
 * set), else the current one whatever its generation (NULL: none) */
static struct py_image *image_of(const struct naming *n, int pid, uint32_t gen, bool *exited)
{
	struct py_image *im = hmap_get(&n->python, &pid, sizeof(pid)), *gone = NULL;

	if (!im || im->gen != gen)
		gone = hmap_get(&n->exited, &pid, sizeof(pid));
	if (gone && gone->gen != gen)
		gone = NULL;
	if (exited)
		*exited = gone != NULL;
	return gone ? gone : im;
}

int naming_set_async(struct naming *n, int pid, uint32_t gen, const struct pyasync *a)
{
	struct py_image *im = hmap_get(&n->python, &pid, sizeof(pid));

	if (!im || im->gen != gen)
		return 0;
	if (!im->async && !(im->async = malloc(sizeof(*im->async))))
		return -1;
	*im->async = *a;
	return 0;
}

/* The "<task NAME>" frame, one func per name and process. */
static struct func *task_func(struct profile *p, int pid, uint32_t gen, const char *name)
{
	char text[PYASYNC_NAME_MAX + 16];
	struct code_ref c = { .check = 0x7a5c7a5cu, .gen = gen };
	struct func *fn;
	uint64_t h = 0xcbf29ce484222325ULL;

	snprintf(text, sizeof(text), "<task %s>", name);
	for (const char *q = text; *q; q++)
		h = (h ^ (uint8_t)*q) * 0x100000001b3ULL;
	c.addr = h | 1; /* odd: never a code object's address */
	fn = profile_code(p, pid, &c);
	if (fn)
		return fn;
	fn = calloc(1, sizeof(*fn));
	if (!fn || !(fn->name = strdup(text)) || !(fn->file = strdup(""))) {
		if (fn)
			func_free(fn);
		return NULL;
	}
	fn->kind = FN_MARK;
	return profile_keep_func(p, pid, fn, &c) ? NULL : fn;
}

/* The task frames of task and the tasks awaiting it, leaf first, into out
 * (room for PYASYNC_MAX_CHAIN); how many, -1: out of memory. */
static int task_chain(struct profile *p, const struct pyasync *a, int pid, uint32_t gen,
		      uint64_t task, struct pframe *out)
{
	uint64_t seen[PYASYNC_MAX_CHAIN];
	char name[PYASYNC_NAME_MAX];
	int n = 0;

	while (task && n < PYASYNC_MAX_CHAIN) {
		for (int i = 0; i < n; i++)
			if (seen[i] == task)
				return n; /* a cycle: memory changed under us */
		if (!pyasync_task_name(pid, a, task, name, sizeof(name)))
			snprintf(name, sizeof(name), "? 0x%llx", (unsigned long long)task);
		out[n].fn = task_func(p, pid, gen, name);
		out[n].instr = UINT32_MAX;
		if (!out[n].fn)
			return -1;
		seen[n++] = task;
		task = pyasync_awaiter(pid, a, task);
	}
	return n;
}

/* With the frames cut at the task's coroutine (py[0..np)), the native
 * frames that belong to them: up to the eval-loop frame running the
 * coroutine's segment; nn when the walk did not reach it. */
static uint32_t native_of_task(const uint8_t *entry, uint32_t np,
			       const struct func *const *nat, uint32_t nn)
{
	uint32_t segs = 0, evals = 0;

	for (uint32_t i = 0; i < np; i++)
		if (entry[i] || i == np - 1)
			segs++;
	for (uint32_t i = 0; i < nn; i++)
		if (nat[i] && nat[i]->kind == FN_EVAL && ++evals == segs)
			return i + 1;
	return nn;
}

/* CPython 3.13+'s _Py_InitCleanup: the shim frame the specialised call of
 * a class with a Python __init__ (CALL_ALLOC_AND_ENTER_INIT) pushes under
 * that __init__, to check that it returned None; a static code object
 * named "__init__" in file "__init__".  Tracebacks do not show it; neither
 * do we (it is never an entry frame: it runs in its caller's eval loop) */
static bool is_init_shim(const struct func *fn)
{
	return fn->kind == FN_PYTHON && fn->name && fn->file && !strcmp(fn->name, "__init__") &&
	       !strcmp(fn->file, "__init__");
}

/* A forked copy (ended, or exec'ed, before it was named) ran code its parent
 * ppid has at the same address (the check tells a code object made since
 * apart): named as the parent named it, or from the parent's memory. */
static struct func *name_from_parent(struct naming *n, struct profile *p, int ppid,
				     const struct code_ref *c)
{
	const struct py_image *pim = image_of(n, ppid, c->gen, NULL);
	const struct func *known = profile_code(p, ppid, c);

	if (known)
		return func_dup(known);
	if (!pim || pim->gen != c->gen)
		return NULL;
	return pyread_code(ppid, c->addr, c->check, &pim->off, &pim->types, NULL);
}

/* fn, named for a copy of ppid, kept for ppid too: its other copies find
 * it there once the copy and the parent are gone */
static void keep_for_parent(struct profile *p, int ppid, const struct func *fn,
			    const struct code_ref *c)
{
	struct func *d;

	if (!hmap_get(&p->procs, &ppid, sizeof(ppid)) || profile_code(p, ppid, c))
		return;
	if ((d = func_dup(fn)))
		(void)profile_keep_func(p, ppid, d, c);
}

/* Remember the file str at addr, named text, as the walk saw it. */
static void remember_file(struct py_image *im, uint64_t addr, const struct str_seen *seen,
			  const char *text)
{
	struct seen_file *sf;
	size_t len;

	if (!text || seen->length < 0 || hmap_get(&im->files, &addr, sizeof(addr)) ||
	    im->files.len >= SEEN_FILES_MAX)
		return;
	len = strlen(text);
	sf = malloc(sizeof(*sf) + len + 1);
	if (!sf)
		return;
	sf->seen = *seen;
	memcpy(sf->text, text, len + 1);
	if (hmap_put(&im->files, &addr, sizeof(addr), sf))
		free(sf);
}

/* Code named once nothing of it can be read any more (the process is
 * gone): its file from a file str of the same image named before, if the
 * walk saw the same str (length, hash, last bytes) at that address, else
 * from the walk's last bytes when they are all of it; its name from those
 * likewise, else PYREAD_FREED_NAME; its first line.  NULL without the
 * file. */
static struct func *name_from_seen(const struct py_image *im, const struct code_id *id)
{
	const struct seen_file *sf = hmap_get(&im->files, &id->filename, sizeof(id->filename));
	char *file = sf && !memcmp(&sf->seen, &id->file_seen, sizeof(sf->seen))
			     ? strdup(sf->text)
			     : pyread_seen_text(&id->file_seen);
	struct func *f;

	if (!file || !file[0] || !(f = calloc(1, sizeof(*f)))) {
		free(file);
		return NULL;
	}
	f->firstlineno = (int32_t)id->firstlineno;
	f->lt_kind = im->off.linetable_kind;
	f->no_lines = true;
	f->file = file;
	f->name = pyread_seen_text(&id->name_seen);
	if (!f->name)
		f->name = strdup(PYREAD_FREED_NAME);
	if (!f->name) {
		func_free(f);
		return NULL;
	}
	return f;
}

/* Has pid ended (no process, or a zombie: no memory left to read)? */
static bool process_gone(int pid)
{
	struct proc_image img;

	return procmaps_image(pid, &img) != 0;
}

/* the function of Python frame f of image gen, read once */
static struct func *name_code(struct naming *n, struct profile *p, int pid, uint32_t gen,
			      const struct py_frame *f)
{
	struct code_ref c = { .addr = f->code, .check = f->check, .gen = gen };
	struct py_image *im = image_of(n, pid, gen, NULL);
	struct func *fn = profile_code(p, pid, &c);
	struct code_id id;
	bool seen;

	if (fn)
		return fn;
	if (f->code == PY_INTERP_MARK) {
		/* where a subinterpreter's frames begin: "<interpreter ID>" */
		char name[40];

		c.check = PY_FRAME_INSTR(f->instr); /* its id: one mark per interpreter */
		if ((fn = profile_code(p, pid, &c)))
			return fn;
		snprintf(name, sizeof(name), "<interpreter %u>", c.check);
		fn = calloc(1, sizeof(*fn));
		if (fn && (!(fn->name = strdup(name)) || !(fn->file = strdup("")))) {
			func_free(fn);
			fn = NULL;
		}
		if (!fn)
			return NULL;
		fn->kind = FN_MARK;
		return profile_keep_func(p, pid, fn, &c) ? NULL : fn;
	}
	if (im && im->gen == gen) {
		/* what the walk saw of it: the strings it had then, should it
		 * be freed by now */
		seen = sampler_code_id(n->sampler, (uint32_t)pid, f->code, f->check, &id) == 0 &&
		       id.check == f->check;
		fn = pyread_code(pid, f->code, f->check, &im->off, &im->types, seen ? &id : NULL);
		if (fn && seen)
			remember_file(im, id.filename, &id.file_seen, fn->file);
		if (!fn && seen) /* gone: named from what the walk saw */
			fn = pyread_code_id(pid, &id, &im->off, &im->types);
		if (!fn && im->copy_of)
			fn = name_from_parent(n, p, im->copy_of, &c);
		if (fn && im->copy_of)
			keep_for_parent(p, im->copy_of, fn, &c);
		/* the process too: from what the walk saw and the files named
		 * before; not kept under c, so that a read that failed for
		 * another reason does not name this code for good */
		if (!fn && seen && process_gone(pid) && (fn = name_from_seen(im, &id)))
			return profile_keep_func(p, pid, fn, NULL) ? NULL : fn;
	}
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
	out->task = ev->task;
	out->task_name = ev->task_name;
	out->anchor = ev->anchor;
}

int naming_add_stack(struct naming *n, struct profile *p, const struct raw_stack *s)
{
	/* what the stack is named from: its Python frames, its native ones,
	 * its kernel ones (off-CPU stacks) */
	static uint8_t ident[sizeof(struct py_frame) * PYPERF_MAX_FRAMES +
			     sizeof(uint64_t) * (PYPERF_MAX_NATIVE + PYPERF_KSTACK_DEPTH + 2)];
	/* room for the markers: [awaiting] or <GC>; the merge's, [GIL wait] and <GC> */
	static struct pframe frames[PYPERF_MAX_FRAMES + 2 + PYASYNC_MAX_CHAIN];
	static struct pframe merged[PYPERF_MAX_FRAMES + 2 * PYPERF_MAX_NATIVE + 3 + PYASYNC_MAX_CHAIN];
	static struct pframe tasks[PYASYNC_MAX_CHAIN];
	static uint8_t entry[PYPERF_MAX_FRAMES];
	static const struct func *nat[2 * PYPERF_MAX_NATIVE]; /* with [stack scan] marks */
	struct stack_ref ref = { .pid = (uint32_t)s->pid, .gen = s->gen, .hash = s->hash };
	uint32_t np = s->npy > PYPERF_MAX_FRAMES ? PYPERF_MAX_FRAMES : s->npy;
	uint32_t nn = s->nnative > PYPERF_MAX_NATIVE ? PYPERF_MAX_NATIVE : s->nnative;
	uint32_t nk = s->nkernel > PYPERF_KSTACK_DEPTH ? PYPERF_KSTACK_DEPTH : s->nkernel, walked;
	size_t pybytes = np * sizeof(*s->py), natbytes = nn * sizeof(*s->native);
	size_t nident = pybytes + natbytes + nk * sizeof(*s->kernel);
	/* a thread that ran no Python code: its native and kernel stack only */
	uint32_t flags = s->flags | (np ? 0 : STACK_NO_PYTHON);
	struct pproc *pp = profile_proc(p, s->pid);
	bool exited;
	const struct py_image *im = image_of(n, s->pid, s->gen, &exited);
	int nt = 0;

	if (!pp)
		return -1;
	if (!pp->comm[0])
		describe(p, s->pid);
	if (s->thread_name)
		profile_set_thread_name(p, s->pid, (uint32_t)s->tid, s->thread_name);
	/* a stack the loader makes itself (a waiting task) has no native part:
	 * memcpy from NULL is undefined even for 0 bytes */
	if (pybytes)
		memcpy(ident, s->py, pybytes);
	if (natbytes)
		memcpy(ident + pybytes, s->native, natbytes);
	if (nk)
		memcpy(ident + pybytes + natbytes, s->kernel, nk * sizeof(*s->kernel));
	if (s->task) {
		memcpy(ident + nident, &s->task, 8);
		memcpy(ident + nident + 8, &s->task_name, 8);
		nident += 16;
	}
	if (profile_has_stack(p, &ref, flags, ident, nident))
		return 0;
	/* --async: the task's frames only, under its task and those awaiting it */
	if (s->task && s->anchor && s->anchor <= np && im && im->async && im->gen == s->gen) {
		nt = task_chain(p, im->async, s->pid, s->gen, s->task, tasks);
		if (nt < 0)
			return -1;
		np = s->anchor;
	}
	for (uint32_t i = 0, k = 0, all = np; i < all; i++) {
		uint32_t instr = PY_FRAME_INSTR(s->py[i].instr);

		frames[k].fn = name_code(n, p, s->pid, s->gen, &s->py[i]);
		/* negative offsets (a frame not started yet) come masked */
		frames[k].instr = instr >= 0x7fff0000u ? UINT32_MAX : instr;
		entry[k] = !!(s->py[i].instr & PY_FRAME_ENTRY);
		if (!frames[k].fn)
			return -1;
		if (!entry[k] && is_init_shim(frames[k].fn))
			np--; /* left out */
		else
			k++;
	}
	if (flags & STACK_AWAITING) { /* where a task waits: no native frames */
		memmove(frames + 1, frames, np * sizeof(*frames));
		frames[0].fn = (struct func *)&merge_mark_awaiting;
		frames[0].instr = UINT32_MAX;
		np++;
	}
	if (!(flags & STACK_NATIVE) || !n->nat) {
		if (flags & STACK_GC)
			np = merge_mark_gc(frames, np);
		for (int i = 0; i < nt; i++)
			frames[np++] = tasks[i];
		return profile_insert_stack(p, &ref, flags, frames, np, (const uint64_t *)s->kernel,
					    nk, ident, nident);
	}
	walked = nn;
	nn = 0;
	for (uint32_t i = 0; i < walked; i++) {
		uint64_t pc = s->native[i];
		int owner = s->pid;

		if (pc & NATIVE_PC_SCANNED) /* found by a scan of its callee's stack */
			nat[nn++] = &merge_mark_scanned;
		pc &= ~NATIVE_PC_SCANNED;
		/* a forked copy whose mappings were never read (it ended
		 * first): its parent's, which it inherited */
		if (im && im->copy_of && im->gen == s->gen && !native_pc_mapped(n->nat, owner, pc))
			owner = im->copy_of;
		/* announced after its exit: the mappings it had then */
		if (exited && owner == s->pid)
			nat[nn++] = native_func_exited(n->nat, owner, pc, i == 0);
		else
			nat[nn++] = native_func(n->nat, owner, pc, i == 0);
	}
	if (nt)
		nn = native_of_task(entry, np, nat, nn);
	np = merge_frames(frames, entry, np, nat, nn, flags, merged);
	np = merge_mark_gil(merged, np);
	if (flags & STACK_GC)
		np = merge_mark_gc(merged, np);
	for (int i = 0; i < nt; i++)
		merged[np++] = tasks[i];
	return profile_insert_stack(p, &ref, flags, merged, np, (const uint64_t *)s->kernel, nk,
				    ident, nident);
}

void naming_name_kernel(struct profile *p, struct sampler *s)
{
	size_t n = 0, i = 0;
	uint64_t *addrs = profile_unnamed_kernel(p, &n);
	char **names = n ? calloc(n, sizeof(*names)) : NULL;
	char buf[256];

	/* a daemon's later intervals often have none to name anew */
	for (; addrs && names && s && i < n; i++) {
		if (sampler_name_kernel(s, addrs[i], buf, sizeof(buf)))
			break;
		if (buf[0] && !(names[i] = strdup(buf)))
			break;
	}
	if (addrs && names && i < n) {
		for (size_t j = 0; j < i; j++)
			free(names[j]);
		ksyms_resolve("/proc/kallsyms", addrs, n, names);
	}
	profile_set_kernel_names(p, addrs, names, names ? n : 0);
	free(addrs);
	free(names);
}

/* Look a thread's Python name up again at most this often (a thread that
 * is not (yet) running threading's code, a thread renamed later). */
#define PYNAME_RETRY_NS 1000000000ull

void naming_python_thread(struct naming *n, struct profile *p, struct sampler *s, int pid,
			  uint32_t tid, bool again)
{
	const struct py_image *im = hmap_get(&n->python, &pid, sizeof(pid));
	struct pthread *t = hmap_get(&p->threads, &tid, sizeof(tid));
	uint64_t now = clock_mono_ns(), tstate;
	char task[64], *name;
	bool never;

	if (!im || !t || t->pid != pid || (t->py && !again) || t->py_never >= 2 ||
	    (!again && t->py_tried_ns && now - t->py_tried_ns < PYNAME_RETRY_NS))
		return;
	/* a thread that ended keeps its last name: its Thread object may be
	 * gone, its memory another object's */
	snprintf(task, sizeof(task), "/proc/%d/task/%u", pid, tid);
	if (t->py && access(task, F_OK))
		return;
	t->py_tried_ns = now;
	/* a rename: the Thread object found before, read again (no walk to
	 * the thread's bottom frame, which may be thousands of frames down) */
	name = t->py_thread ? pyobj_thread_object_name(pid, &im->off, t->py_thread) : NULL;
	if (!name) {
		tstate = sampler_thread_state(s, (uint32_t)pid, tid);
		/* a thread whose bottom frame is not threading's (the main
		 * thread, a C thread's) is walked to the bottom twice, not once
		 * a second for as long as it runs: twice, as a chain read while
		 * it changes may end at a frame that is not its bottom */
		t->py_thread = tstate ? pyobj_thread_object(pid, &im->off, tstate, &never) : 0;
		t->py_never = tstate && never ? t->py_never + 1 : 0;
		name = pyobj_thread_object_name(pid, &im->off, t->py_thread);
	}
	/* the main thread has no Thread._bootstrap frame: threading names it so */
	profile_set_thread_pyname(p, tid, name ? name : (uint32_t)pid == tid ? "MainThread" : NULL);
	free(name);
}

void naming_python_threads(struct naming *n, struct profile *p, struct sampler *s)
{
	hmap_for_each(&p->threads, e)
		naming_python_thread(n, p, s, ((struct pthread *)e->val)->pid,
				     *(const uint32_t *)e->key, true);
}
