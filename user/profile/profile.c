/* profile.c - see profile.h.  Names are resolved the moment a stack is
 * announced, while the process is alive; a code object already named for this
 * process (same address and co_firstlineno) is not read again. */
#include "profile.h"
#include "pyread.h"
#include "merge.h"

#include <stdlib.h>
#include <string.h>

struct code_key {
	uint64_t addr;
	uint32_t check;
	uint32_t gen;
};

struct stack_id {
	uint64_t hash;
	uint64_t gen;
};

struct sample_key {
	struct pstack *stack;
	struct kstack *kstack;
	uint64_t tid;
};

/* pp's stacks and functions are freed with pp */
static void own(struct pproc *pp, void *ptr)
{
	if (pp->nowned == pp->capowned) {
		size_t cap = pp->capowned ? pp->capowned * 2 : 256;
		void **v = realloc(pp->owned, cap * sizeof(*v));

		if (!v)
			return; /* leaks until the process is forgotten */
		pp->owned = v;
		pp->capowned = cap;
	}
	pp->owned[pp->nowned++] = ptr;
}

void profile_init(struct profile *p)
{
	memset(p, 0, sizeof(*p));
}

static void free_proc(void *v)
{
	struct pproc *pp = v;

	hmap_free(&pp->code, NULL);
	hmap_free(&pp->stacks, NULL);
	for (size_t i = 0; i < pp->nowned; i++)
		free(pp->owned[i]);
	free(pp->owned);
	free(pp);
}

void profile_free(struct profile *p)
{
	hmap_free(&p->procs, free_proc);
	hmap_free(&p->samples, free);
	hmap_free(&p->threads, free);
	hmap_free(&p->kstacks, free);
	hmap_free(&p->knames, free);
	memset(p, 0, sizeof(*p));
}

struct pproc *profile_proc(struct profile *p, int pid)
{
	struct pproc *pp = hmap_get(&p->procs, &pid, sizeof(pid));

	if (pp)
		return pp;
	pp = calloc(1, sizeof(*pp));
	if (!pp)
		return NULL;
	pp->pid = pid;
	proc_comm(pid, pp->comm, sizeof(pp->comm));
	proc_cmdline(pid, pp->cmdline, sizeof(pp->cmdline));
	if (hmap_put(&p->procs, &pid, sizeof(pid), pp)) {
		free(pp);
		return NULL;
	}
	return pp;
}

static struct func *name_code(struct profile *p, struct pproc *pp, uint32_t gen,
				const struct py_frame *f)
{
	struct code_key k = { .addr = f->code, .check = f->check, .gen = gen };
	struct func *fn = hmap_get(&pp->code, &k, sizeof(k));

	if (fn)
		return fn;
	if (pp->python && pp->gen == gen)
		fn = pyread_code(pp->pid, f->code, f->check, &pp->py.off);
	if (!fn) {
		p->unresolved_frames++;
		fn = func_unknown_code(f->code);
		if (!fn)
			return NULL;
		own(pp, fn->name);
		own(pp, fn->file);
		own(pp, fn);
		return fn; /* not cached: a later announcement may read it */
	}
	own(pp, fn->name);
	own(pp, fn->file);
	own(pp, fn->lt);
	own(pp, fn);
	hmap_put(&pp->code, &k, sizeof(k), fn);
	return fn;
}

void profile_set_thread_name(struct profile *p, uint32_t tid, const char *comm)
{
	char *name = hmap_get(&p->threads, &tid, sizeof(tid));

	if (!name) {
		name = calloc(1, PYPERF_COMM_LEN + 1);
		if (!name || hmap_put(&p->threads, &tid, sizeof(tid), name)) {
			free(name);
			return;
		}
	}
	/* comm: the kernel's fixed-size name, NUL-padded, or a shorter string */
	memset(name, 0, PYPERF_COMM_LEN + 1);
	memcpy(name, comm, strnlen(comm, PYPERF_COMM_LEN));
}

/* nraw Python frames in raw; nnat native ones in nat */
struct raw_stack {
	const struct py_frame *py;
	uint32_t npy;
	const __u64 *nat;
	uint32_t nnat;
};

static bool same_raw(const struct pstack *st, uint32_t flags, const struct raw_stack *r)
{
	return st->raw && st->flags == flags && st->nraw == r->npy && st->nrawnat == r->nnat &&
	       !memcmp(st->raw, r->py, r->npy * sizeof(*r->py)) &&
	       (!r->nnat || !memcmp(st->rawnat, r->nat, r->nnat * sizeof(*r->nat)));
}

static int insert_stack(struct profile *p, uint32_t pid, uint32_t gen, uint64_t hash,
			uint32_t flags, const struct pframe *frames, uint32_t n,
			const struct raw_stack *raw);

int profile_insert_stack(struct profile *p, uint32_t pid, uint32_t gen, uint64_t hash,
			 uint32_t flags, const struct pframe *frames, uint32_t n,
			 const struct py_frame *raw)
{
	struct raw_stack r = { .py = raw, .npy = n };

	return insert_stack(p, pid, gen, hash, flags, frames, n, raw ? &r : NULL);
}

static int insert_stack(struct profile *p, uint32_t pid, uint32_t gen, uint64_t hash,
			uint32_t flags, const struct pframe *frames, uint32_t n,
			const struct raw_stack *raw)
{
	struct pproc *pp = profile_proc(p, (int)pid);
	struct stack_id id = { .hash = hash, .gen = gen };
	struct pstack *st, *old;

	if (!pp)
		return -1;
	old = hmap_get(&pp->stacks, &id, sizeof(id));
	if (old && (!raw || same_raw(old, flags, raw)))
		return 0; /* announced again after a drain: already known */
	st = malloc(sizeof(*st) + n * sizeof(st->frames[0]));
	if (!st)
		return -1;
	st->pid = pid;
	st->gen = gen;
	st->flags = flags;
	st->nframes = n;
	st->raw = NULL;
	st->rawnat = NULL;
	st->nraw = st->nrawnat = 0;
	memcpy(st->frames, frames, n * sizeof(st->frames[0]));
	own(pp, st);
	if (raw) {
		st->raw = malloc(raw->npy * sizeof(*raw->py) + 1);
		if (!st->raw)
			return -1;
		memcpy(st->raw, raw->py, raw->npy * sizeof(*raw->py));
		st->nraw = raw->npy;
		own(pp, st->raw);
		if (raw->nnat) {
			st->rawnat = malloc(raw->nnat * sizeof(*raw->nat));
			if (!st->rawnat)
				return -1;
			memcpy(st->rawnat, raw->nat, raw->nnat * sizeof(*raw->nat));
			st->nrawnat = raw->nnat;
			own(pp, st->rawnat);
		}
	}
	return hmap_put(&pp->stacks, &id, sizeof(id), st);
}

int profile_add_stack(struct profile *p, const struct ev_stack *ev)
{
	static struct pframe frames[PYPERF_MAX_FRAMES];
	static struct pframe merged[PYPERF_MAX_FRAMES + PYPERF_MAX_NATIVE + 1];
	static uint8_t entry[PYPERF_MAX_FRAMES];
	static const struct func *nat[PYPERF_MAX_NATIVE];
	struct pproc *pp = profile_proc(p, ev->pid);
	struct stack_id id = { .hash = ev->hash, .gen = ev->gen };
	uint32_t n = ev->nframes > PYPERF_MAX_FRAMES ? PYPERF_MAX_FRAMES : ev->nframes;
	uint32_t nn = ev->nnative > PYPERF_MAX_NATIVE ? PYPERF_MAX_NATIVE : ev->nnative;
	struct raw_stack raw = { .py = ev->frames, .npy = n, .nat = ev->native, .nnat = nn };
	struct pstack *old;
	/* a thread that ran no Python code: its native and kernel stack only */
	uint32_t flags = ev->flags | (n ? 0 : STACK_NO_PYTHON);

	if (!pp)
		return -1;
	profile_set_thread_name(p, ev->tid, ev->comm);
	old = hmap_get(&pp->stacks, &id, sizeof(id));
	if (old && same_raw(old, flags, &raw))
		return 0;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t instr = PY_FRAME_INSTR(ev->frames[i].instr);

		frames[i].fn = name_code(p, pp, ev->gen, &ev->frames[i]);
		/* negative offsets (a frame not started yet) come masked */
		frames[i].instr = instr >= 0x7fff0000u ? UINT32_MAX : instr;
		entry[i] = !!(ev->frames[i].instr & PY_FRAME_ENTRY);
		if (!frames[i].fn)
			return -1;
	}
	if (!(flags & STACK_NATIVE) || !p->nat)
		return insert_stack(p, ev->pid, ev->gen, ev->hash, flags, frames, n, &raw);
	for (uint32_t i = 0; i < nn; i++)
		nat[i] = native_func(p->nat, ev->pid, ev->native[i], i == 0);
	n = merge_frames(frames, entry, n, nat, nn, flags, merged);
	return insert_stack(p, ev->pid, ev->gen, ev->hash, flags, merged, n, &raw);
}

/* the interned, named kernel stack for these addresses */
static struct kstack *intern_kstack(struct profile *p, const uint64_t *ips, unsigned n)
{
	struct kstack *ks;

	if (!n)
		return NULL;
	ks = hmap_get(&p->kstacks, ips, n * sizeof(*ips));
	if (ks)
		return ks;
	ks = calloc(1, sizeof(*ks) + n * sizeof(ks->names[0]));
	if (!ks)
		return NULL;
	ks->n = n;
	if (hmap_put(&p->kstacks, ips, n * sizeof(*ips), ks)) {
		free(ks);
		return NULL;
	}
	return ks;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* every distinct kernel address of the profile not named yet, sorted */
static uint64_t *kernel_addresses(struct profile *p, size_t *n)
{
	struct hmap seen = { 0 };
	uint64_t *v;
	size_t k = 0;

	hmap_for_each(&p->kstacks, s) {
		const uint64_t *ips = s->key;

		for (uint32_t i = 0; i < ((struct kstack *)s->val)->n; i++)
			if (!hmap_get(&p->knames, &ips[i], sizeof(ips[i])))
				hmap_put(&seen, &ips[i], sizeof(ips[i]), NULL);
	}
	v = malloc((seen.len + 1) * sizeof(*v));
	if (v)
		hmap_for_each(&seen, s)
			memcpy(&v[k++], s->key, sizeof(*v));
	hmap_free(&seen, NULL);
	qsort(v, k, sizeof(*v), cmp_u64);
	*n = k;
	return v;
}

void profile_name_kernel_stacks(struct profile *p)
{
	size_t n = 0;
	uint64_t *addrs;
	char **names;

	if (!p->kstacks.len)
		return;
	addrs = kernel_addresses(p, &n);
	names = calloc(n + 1, sizeof(*names));
	if (addrs && names && n) { /* a daemon's later intervals often name none anew */
		ksyms_resolve("/proc/kallsyms", addrs, n, names);
		for (size_t i = 0; i < n; i++)
			if (names[i] && hmap_put(&p->knames, &addrs[i], sizeof(addrs[i]), names[i]))
				free(names[i]);
	}
	free(addrs);
	free(names);
	hmap_for_each(&p->kstacks, s) {
		struct kstack *ks = s->val;

		ks->ips = s->key; /* the table's copy of the addresses */
		for (uint32_t i = 0; i < ks->n; i++) {
			const char *name = hmap_get(&p->knames, &ks->ips[i], sizeof(ks->ips[i]));

			ks->names[i] = name ? name : "[unknown]";
		}
	}
}

void profile_add_count(struct profile *p, const struct stack_key *k, uint64_t count,
		       const uint64_t *kips, unsigned nk)
{
	struct pproc *pp = hmap_get(&p->procs, &k->pid, sizeof(k->pid));
	struct stack_id id = { .hash = k->hash, .gen = k->gen };
	struct pstack *st = pp ? hmap_get(&pp->stacks, &id, sizeof(id)) : NULL;
	struct sample_key sk;
	struct psample *s;

	if (!st) {
		p->unattributed += count;
		return;
	}
	memset(&sk, 0, sizeof(sk));
	sk.stack = st;
	sk.kstack = intern_kstack(p, kips, nk);
	sk.tid = k->tid;
	s = hmap_get(&p->samples, &sk, sizeof(sk));
	if (!s) {
		s = calloc(1, sizeof(*s));
		if (!s || hmap_put(&p->samples, &sk, sizeof(sk), s)) {
			free(s);
			p->unattributed += count;
			return;
		}
		s->stack = st;
		s->kstack = sk.kstack;
		s->tid = k->tid;
	}
	s->count += count;
	pp->samples += count;
	p->total += count;
}

void profile_set_python(struct profile *p, int pid, const struct pyproc *py, uint32_t gen)
{
	struct pproc *pp = profile_proc(p, pid);

	if (!pp)
		return;
	pp->py = *py;
	pp->python = true;
	pp->gen = gen;
	proc_comm(pid, pp->comm, sizeof(pp->comm));
	proc_cmdline(pid, pp->cmdline, sizeof(pp->cmdline));
}

static int cmp_sample(const void *a, const void *b)
{
	const struct psample *x = *(struct psample *const *)a, *y = *(struct psample *const *)b;

	if (x->stack->pid != y->stack->pid)
		return x->stack->pid < y->stack->pid ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return x->stack < y->stack ? -1 : x->stack > y->stack;
}

struct psample **profile_samples(const struct profile *p, size_t *n)
{
	struct psample **v = malloc((p->samples.len + 1) * sizeof(*v));
	size_t k = 0;

	if (!v) {
		*n = 0;
		return NULL;
	}
	hmap_for_each(&p->samples, s)
		v[k++] = s->val;
	qsort(v, k, sizeof(*v), cmp_sample);
	*n = k;
	return v;
}

const char *profile_thread_name(const struct profile *p, uint32_t tid)
{
	const char *name = hmap_get(&p->threads, &tid, sizeof(tid));

	return name ? name : "?";
}

size_t profile_nprocs_seen(const struct profile *p)
{
	size_t n = 0;

	hmap_for_each(&p->procs, s)
		n += ((struct pproc *)s->val)->samples > 0;
	return n;
}

void profile_reset_counts(struct profile *p)
{
	hmap_free(&p->samples, free);
	hmap_free(&p->kstacks, free); /* the samples held the only references */
	hmap_free(&p->threads, free);
	memset(&p->samples, 0, sizeof(p->samples));
	memset(&p->kstacks, 0, sizeof(p->kstacks));
	memset(&p->threads, 0, sizeof(p->threads));
	hmap_for_each(&p->procs, s)
		((struct pproc *)s->val)->samples = 0;
	p->total = p->unattributed = p->unresolved_frames = 0;
}

int profile_forget_proc(struct profile *p, int pid)
{
	struct pproc *pp = hmap_get(&p->procs, &pid, sizeof(pid));
	struct hmap keep = { 0 };
	int rc = 0;

	if (!pp || pp->samples)
		return -1; /* samples point at its stacks */
	hmap_for_each(&p->procs, s) {
		struct pproc *pp = s->val;

		if (pp->pid == pid)
			free_proc(pp);
		else if (hmap_put(&keep, &pp->pid, sizeof(pp->pid), pp))
			rc = -1;
	}
	hmap_free(&p->procs, NULL);
	p->procs = keep;
	return rc;
}
