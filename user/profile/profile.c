/* profile.c - see profile.h. */
#include "profile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KNAMES_KEPT 65536

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

static void free_thread(void *v)
{
	struct pthread *t = v;

	if (t)
		free(t->py);
	free(t);
}

void profile_free(struct profile *p)
{
	hmap_free(&p->procs, free_proc);
	hmap_free(&p->samples, free);
	hmap_free(&p->threads, free_thread);
	hmap_free(&p->kstacks, free);
	hmap_free(&p->knames, free);
	hmap_free(&p->refused, free);
	events_free(&p->events);
	if (p->timeline) {
		timeline_free(p->timeline);
		free(p->timeline);
	}
	memset(p, 0, sizeof(*p));
}

void profile_refuse(struct profile *p, int pid, const char *comm, const char *why)
{
	struct prefused *r;

	if (hmap_get(&p->refused, &pid, sizeof(pid)) || p->refused.len >= 4096 ||
	    !(r = calloc(1, sizeof(*r))))
		return;
	r->pid = pid;
	snprintf(r->comm, sizeof(r->comm), "%s", comm);
	snprintf(r->why, sizeof(r->why), "%s", why);
	if (hmap_put(&p->refused, &r->pid, sizeof(r->pid), r))
		free(r);
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
	if (hmap_put(&p->procs, &pid, sizeof(pid), pp)) {
		free(pp);
		return NULL;
	}
	return pp;
}

void profile_describe_proc(struct profile *p, int pid, const char *comm, const char *cmdline)
{
	struct pproc *pp = profile_proc(p, pid);

	if (!pp)
		return;
	snprintf(pp->comm, sizeof(pp->comm), "%s", comm);
	snprintf(pp->cmdline, sizeof(pp->cmdline), "%s", cmdline);
}

const char *profile_proc_label(const struct pproc *pp)
{
	return pp && pp->cmdline[0] ? pp->cmdline : profile_proc_comm(pp);
}

const char *profile_proc_comm(const struct pproc *pp)
{
	return pp && pp->comm[0] ? pp->comm : "?";
}

struct func *profile_code(const struct profile *p, int pid, const struct code_ref *c)
{
	const struct pproc *pp = hmap_get(&p->procs, &pid, sizeof(pid));
	struct code_ref k = { .addr = c->addr, .check = c->check, .gen = c->gen };

	return pp ? hmap_get(&pp->code, &k, sizeof(k)) : NULL;
}

int profile_keep_func(struct profile *p, int pid, struct func *fn, const struct code_ref *c)
{
	struct pproc *pp = profile_proc(p, pid);
	struct code_ref k;

	if (!pp) {
		func_free(fn);
		return -1;
	}
	own(pp, fn->name);
	own(pp, fn->file);
	own(pp, fn->lt);
	own(pp, fn);
	if (!c)
		return 0;
	memset(&k, 0, sizeof(k)); /* a key without stray padding bytes */
	k.addr = c->addr;
	k.check = c->check;
	k.gen = c->gen;
	return hmap_put(&pp->code, &k, sizeof(k), fn);
}

static struct pthread *thread_entry(struct profile *p, uint32_t tid)
{
	struct pthread *t = hmap_get(&p->threads, &tid, sizeof(tid));

	if (!t) {
		t = calloc(1, sizeof(*t));
		if (!t || hmap_put(&p->threads, &tid, sizeof(tid), t)) {
			free(t);
			return NULL;
		}
	}
	return t;
}


void profile_set_thread_name(struct profile *p, int pid, uint32_t tid, const char *comm)
{
	struct pthread *t = thread_entry(p, tid);

	if (!t)
		return;
	if (t->pid != pid) { /* a tid reused by another process */
		free(t->py);
		t->py = NULL;
		t->py_thread = 0;
		t->py_tried_ns = 0;
		t->py_never = 0;
	}
	t->pid = pid;
	/* comm: the kernel's fixed-size name, NUL-padded, or a shorter string */
	memset(t->os, 0, sizeof(t->os));
	memcpy(t->os, comm, strnlen(comm, PYPERF_COMM_LEN));
}

void profile_set_thread_pyname(struct profile *p, uint32_t tid, const char *name)
{
	struct pthread *t = hmap_get(&p->threads, &tid, sizeof(tid));
	char *copy;

	if (!t || !name || (t->py && !strcmp(t->py, name)) || !(copy = strdup(name)))
		return;
	free(t->py);
	t->py = copy;
}

/* ref's stack in its process's entry pp (may be NULL) */
static struct pstack *find_stack(const struct pproc *pp, const struct stack_ref *ref)
{
	struct stack_id id = { .hash = ref->hash, .gen = ref->gen };

	return pp ? hmap_get(&pp->stacks, &id, sizeof(id)) : NULL;
}

const struct pstack *profile_find_stack(const struct profile *p, const struct stack_ref *ref)
{
	return find_stack(hmap_get(&p->procs, &ref->pid, sizeof(ref->pid)), ref);
}

static bool same_ident(const struct pstack *st, uint32_t flags, const void *ident, size_t n)
{
	return st->ident && st->flags == flags && st->nident == n && !memcmp(st->ident, ident, n);
}

bool profile_has_stack(const struct profile *p, const struct stack_ref *ref, uint32_t flags,
		       const void *ident, size_t nident)
{
	const struct pstack *st = find_stack(hmap_get(&p->procs, &ref->pid, sizeof(ref->pid)), ref);

	return st && same_ident(st, flags, ident, nident);
}

int profile_insert_stack(struct profile *p, const struct stack_ref *ref, uint32_t flags,
			 const struct pframe *frames, uint32_t n, const uint64_t *kips,
			 uint32_t nk, const void *ident, size_t nident)
{
	struct pproc *pp = profile_proc(p, (int)ref->pid);
	struct stack_id id = { .hash = ref->hash, .gen = ref->gen };
	struct pstack *st, *old;

	if (!pp)
		return -1;
	old = hmap_get(&pp->stacks, &id, sizeof(id));
	if (old && (!ident || same_ident(old, flags, ident, nident))) {
		/* announced again after a drain: already known, and about to be
		 * counted (profile_trim keeps it) */
		old->used = p->interval;
		return 0;
	}
	st = malloc(sizeof(*st) + n * sizeof(st->frames[0]));
	if (!st)
		return -1;
	st->pid = ref->pid;
	st->gen = ref->gen;
	st->flags = flags;
	st->nframes = n;
	st->ident = NULL;
	st->nident = 0;
	st->kernel = NULL;
	st->nkernel = 0;
	st->used = p->interval;
	memcpy(st->frames, frames, n * sizeof(st->frames[0]));
	own(pp, st);
	if (nk) {
		st->kernel = malloc(nk * sizeof(*kips));
		if (!st->kernel)
			return -1;
		memcpy(st->kernel, kips, nk * sizeof(*kips));
		st->nkernel = nk;
		own(pp, st->kernel);
	}
	if (ident) {
		st->ident = malloc(nident + 1);
		if (!st->ident)
			return -1;
		memcpy(st->ident, ident, nident);
		st->nident = nident;
		own(pp, st->ident);
	}
	return hmap_put(&pp->stacks, &id, sizeof(id), st);
}

/* the interned, named kernel stack for these addresses */
static struct kstack *intern_kstack(struct profile *p, const uint64_t *ips, unsigned n,
				    bool offcpu)
{
	struct kstack *ks;

	if (!n)
		return NULL;
	ks = hmap_get(&p->kstacks, ips, n * sizeof(*ips));
	if (ks)
		return ks;
	ks = calloc(1, sizeof(*ks) + n * sizeof(ks->all_names[0]));
	if (!ks)
		return NULL;
	ks->n = ks->nall = n;
	ks->offcpu = offcpu;
	ks->names = ks->all_names;
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

/* the frames between the scheduler and the program that took an off-CPU
 * stack: the tracepoint's dispatch and the BPF program itself */
static bool is_tracing_frame(const char *name)
{
	return !strncmp(name, "bpf_prog_", 9) || !strncmp(name, "bpf_trace_run", 13) ||
	       !strncmp(name, "__bpf_trace_", 12) || !strncmp(name, "__traceiter_", 12) ||
	       !strncmp(name, "bpf_trampoline_", 15);
}

uint64_t *profile_unnamed_kernel(const struct profile *p, size_t *n)
{
	struct hmap seen = { 0 };
	uint64_t *v = NULL;
	size_t k = 0;

	hmap_for_each(&p->kstacks, s) {
		const uint64_t *ips = s->key;

		for (uint32_t i = 0; i < ((struct kstack *)s->val)->nall; i++)
			if (!hmap_get(&p->knames, &ips[i], sizeof(ips[i])))
				hmap_put(&seen, &ips[i], sizeof(ips[i]), NULL);
	}
	if (seen.len)
		v = malloc(seen.len * sizeof(*v));
	if (v) {
		hmap_for_each(&seen, s)
			memcpy(&v[k++], s->key, sizeof(*v));
		qsort(v, k, sizeof(*v), cmp_u64);
	}
	hmap_free(&seen, NULL);
	*n = k;
	return v;
}

void profile_set_kernel_names(struct profile *p, const uint64_t *addrs, char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (names[i] && hmap_put(&p->knames, &addrs[i], sizeof(addrs[i]), names[i]))
			free(names[i]);
	hmap_for_each(&p->kstacks, s) {
		struct kstack *ks = s->val;

		uint32_t skip = 0;

		ks->ips = s->key; /* the table's copy of the addresses */
		for (uint32_t i = 0; i < ks->nall; i++) {
			const char *name = hmap_get(&p->knames, &ks->ips[i], sizeof(ks->ips[i]));

			ks->all_names[i] = name ? name : "[unknown]";
		}
		while (ks->offcpu && skip + 1 < ks->nall && is_tracing_frame(ks->all_names[skip]))
			skip++;
		ks->names = ks->all_names + skip;
		ks->n = ks->nall - skip;
	}
}

/* ref's sample of thread tid, made if new; NULL when ref was never
 * announced or out of memory */
static struct psample *sample_of(struct profile *p, const struct stack_ref *ref, uint32_t tid)
{
	struct pproc *pp = hmap_get(&p->procs, &ref->pid, sizeof(ref->pid));
	struct pstack *st = find_stack(pp, ref);
	struct sample_key sk;
	struct psample *s;

	if (!st)
		return NULL;
	st->used = p->interval;
	memset(&sk, 0, sizeof(sk));
	sk.stack = st;
	/* its kernel frames are the stack's own (part of its identity) */
	sk.kstack = intern_kstack(p, st->kernel, st->nkernel, st->flags & STACK_OFFCPU);
	sk.tid = tid;
	s = hmap_get(&p->samples, &sk, sizeof(sk));
	if (!s) {
		s = calloc(1, sizeof(*s));
		if (!s || hmap_put(&p->samples, &sk, sizeof(sk), s)) {
			free(s);
			return NULL;
		}
		s->stack = st;
		s->kstack = sk.kstack;
		s->tid = tid;
	}
	return s;
}

void profile_add_count(struct profile *p, const struct stack_ref *ref, uint32_t tid,
		       uint64_t count)
{
	struct psample *s = sample_of(p, ref, tid);
	struct pproc *pp = hmap_get(&p->procs, &ref->pid, sizeof(ref->pid));

	if (!s || !pp) {
		p->unattributed += count;
		return;
	}
	s->count += count;
	pp->samples += count;
	p->total += count;
}

void profile_counts_to_heap(struct profile *p, int i)
{
	hmap_for_each(&p->samples, e) {
		struct psample *s = e->val;

		s->heap[i] = s->count;
		s->count = 0;
	}
	hmap_for_each(&p->procs, e)
		((struct pproc *)e->val)->samples = 0;
	p->total = 0;
}

void profile_add_heap(struct profile *p, const struct stack_ref *ref, uint32_t tid, int i,
		      uint64_t v)
{
	struct psample *s = sample_of(p, ref, tid);

	if (!s || i < 0 || i >= PROFILE_HEAP_N)
		return;
	if (i == PROFILE_HEAP_OLDEST_MS)
		s->heap[i] = v > s->heap[i] ? v : s->heap[i];
	else
		s->heap[i] += v;
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

static int by_pid_then_weight(const void *a, const void *b)
{
	const struct pthread_total *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->weight != y->weight)
		return x->weight > y->weight ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

struct pthread_total *profile_thread_totals(struct psample *const *v, size_t n, size_t *nt)
{
	struct pthread_total *t = malloc((n + 1) * sizeof(*t));
	size_t k = 0;

	*nt = 0;
	if (!t)
		return NULL;
	/* v runs by pid, then tid: one thread's samples are together */
	for (size_t i = 0; i < n; i++) {
		if (k && t[k - 1].pid == v[i]->stack->pid && t[k - 1].tid == v[i]->tid) {
			t[k - 1].weight += v[i]->count;
			continue;
		}
		t[k++] = (struct pthread_total){ v[i]->stack->pid, v[i]->tid, v[i]->count };
	}
	qsort(t, k, sizeof(*t), by_pid_then_weight);
	*nt = k;
	return t;
}

const char *profile_thread_name(const struct profile *p, uint32_t tid)
{
	const struct pthread *t = hmap_get(&p->threads, &tid, sizeof(tid));

	return !t ? "?" : t->py ? t->py : t->os[0] ? t->os : "?";
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
	hmap_free(&p->threads, free_thread);
	memset(&p->samples, 0, sizeof(p->samples));
	memset(&p->kstacks, 0, sizeof(p->kstacks));
	memset(&p->threads, 0, sizeof(p->threads));
	hmap_for_each(&p->procs, s)
		((struct pproc *)s->val)->samples = 0;
	p->total = p->unattributed = p->unresolved_frames = 0;
	p->interval++;
	p->forgets++; /* the threads' names */
	/* the kernel's names, kept across intervals so that each is looked
	 * up once, now held by no kernel stack: a run that sees new kernel
	 * addresses all the time (modules, other tools' BPF programs loaded
	 * anew) starts them again past KNAMES_KEPT */
	if (p->knames.len > KNAMES_KEPT)
		hmap_free(&p->knames, free);
}

/* ptr into the set *s (NULL: nothing); false when out of memory */
static bool hold(struct hmap *s, const void *ptr)
{
	return !ptr || hmap_get(s, &ptr, sizeof(ptr)) || !hmap_put(s, &ptr, sizeof(ptr), (void *)ptr);
}

/* pp without its stacks idle for more than `idle` intervals and what only
 * they held; the stacks freed, 0 when out of memory (nothing changed) */
static size_t trim_proc(struct profile *p, struct pproc *pp, uint32_t idle)
{
	struct hmap mine = { 0 }, keep = { 0 }, stacks = { 0 }, code = { 0 };
	size_t k = 0, freed = 0, stale = 0;
	bool ok = true;

	hmap_for_each(&pp->stacks, e)
		stale += p->interval - ((const struct pstack *)e->val)->used > idle;
	/* nothing idle, and nothing owned beyond what the maps hold (a stack
	 * replaced under its key, an unreadable code object named once) */
	if (!stale && pp->nowned <= 3 * pp->stacks.len + 4 * pp->code.len)
		return 0;
	for (size_t i = 0; i < pp->nowned && ok; i++)
		ok = hold(&mine, pp->owned[i]);
	/* what the stacks kept hold: themselves, their kernel frames and
	 * idents, and the functions of theirs that pp owns, with their strings
	 * and line tables */
	hmap_for_each(&pp->stacks, e) {
		struct pstack *st = e->val;

		if (!ok || p->interval - st->used > idle)
			continue;
		ok = !hmap_put(&stacks, e->key, e->klen, st) && hold(&keep, st) &&
		     hold(&keep, st->kernel) && hold(&keep, st->ident);
		for (uint32_t j = 0; j < st->nframes && ok; j++) {
			struct func *fn = st->frames[j].fn;

			if (hmap_get(&mine, &fn, sizeof(fn)))
				ok = hold(&keep, fn) && hold(&keep, fn->name) && hold(&keep, fn->file) &&
				     hold(&keep, fn->lt);
		}
	}
	hmap_for_each(&pp->code, e)
		if (ok && hmap_get(&keep, &e->val, sizeof(e->val)))
			ok = !hmap_put(&code, e->key, e->klen, e->val);
	if (!ok) {
		hmap_free(&mine, NULL);
		hmap_free(&keep, NULL);
		hmap_free(&stacks, NULL);
		hmap_free(&code, NULL);
		return 0;
	}
	for (size_t i = 0; i < pp->nowned; i++) {
		void *x = pp->owned[i];

		if (x && hmap_get(&keep, &x, sizeof(x)))
			pp->owned[k++] = x;
		else
			free(x);
	}
	freed = pp->stacks.len - stacks.len;
	pp->nowned = k;
	hmap_free(&pp->stacks, NULL);
	hmap_free(&pp->code, NULL);
	pp->stacks = stacks;
	pp->code = code;
	hmap_free(&mine, NULL);
	hmap_free(&keep, NULL);
	return freed;
}

size_t profile_trim(struct profile *p, uint32_t idle)
{
	size_t freed = 0;

	if (p->samples.len)
		return 0; /* samples point at stacks: only right after a reset */
	hmap_for_each(&p->procs, e)
		freed += trim_proc(p, e->val, idle);
	p->forgets += freed > 0;
	return freed;
}

void profile_kept(const struct profile *p, size_t *stacks, size_t *code)
{
	*stacks = *code = 0;
	hmap_for_each(&p->procs, e) {
		const struct pproc *pp = e->val;

		*stacks += pp->stacks.len;
		*code += pp->code.len;
	}
}

static void mark_stack(const struct pstack *st, uint32_t mark)
{
	for (uint32_t i = 0; i < st->nframes; i++)
		if (st->frames[i].fn->kind != FN_MARK) /* markers may be read-only */
			st->frames[i].fn->seen = mark;
}

void profile_mark_funcs(const struct profile *p, uint32_t mark)
{
	/* a stack a key named before its code objects were replaced is held
	 * by its samples only */
	hmap_for_each(&p->procs, e) {
		const struct pproc *pp = e->val;

		hmap_for_each(&pp->stacks, s)
			mark_stack(s->val, mark);
	}
	hmap_for_each(&p->samples, e)
		mark_stack(((const struct psample *)e->val)->stack, mark);
}

int profile_forget_proc(struct profile *p, int pid)
{
	struct pproc *pp = hmap_get(&p->procs, &pid, sizeof(pid));

	if (!pp || pp->samples)
		return -1; /* samples point at its stacks */
	free_proc(hmap_del(&p->procs, &pid, sizeof(pid)));
	p->forgets++;
	return 0;
}
