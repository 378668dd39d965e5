/* blocked.c - threads already off the CPU when their process is adopted
 * (see blocked.h). */
#include "blocked.h"
#include "clock.h"
#include "ksyms.h"
#include "naming.h"
#include "profile.h"
#include "pyobj.h"
#include "pyproc.h"
#include "pywalk.h"
#include "sampler.h"

#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* the keys of the stacks walked here: this tag and a sequence number (the
 * sampler's hashes are spread over all 64 bits; a clash is as likely as
 * between two of its own) */
#define BLOCKED_TAG 0xb10c0000000000ffull
/* threads of one process looked at */
#define BLOCKED_MAX 1024

struct sleeper {
	struct stack_key key;        /* its claimed block's */
	uint64_t pc;                 /* where its system call was made, 0: unknown */
	char wchan[64];              /* the kernel function it waits in, "": unknown */
	char comm[PYPERF_COMM_LEN + 1];
	uint64_t mine[PYPERF_MAX_NEST], mine_ids[PYPERF_MAX_NEST]; /* its thread states */
	uint32_t nmine;
	bool taken;                  /* walked and named */
};

/* the first line of a small /proc file into buf ("" when unreadable) */
static void read_line(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t got = fd >= 0 ? read(fd, buf, len - 1) : -1;

	if (fd >= 0)
		close(fd);
	buf[got > 0 ? got : 0] = 0;
	buf[strcspn(buf, "\n")] = 0;
}

/* Thread tid of pid into out: its name, and if it is asleep (S, D) where
 * it waits.  Is it asleep? */
static bool look_at(int pid, uint32_t tid, struct sleeper *out)
{
	char path[96], buf[512], *p;
	unsigned long long pc;

	out->pc = 0;
	out->wchan[0] = 0;
	snprintf(path, sizeof(path), "/proc/%d/task/%u/comm", pid, tid);
	read_line(path, out->comm, sizeof(out->comm));
	snprintf(path, sizeof(path), "/proc/%d/task/%u/stat", pid, tid);
	read_line(path, buf, sizeof(buf));
	p = strrchr(buf, ')'); /* the name may hold anything */
	if (!p || (p[1] != ' ') || (p[2] != 'S' && p[2] != 'D'))
		return false;
	/* "NR ARG1..ARG6 SP PC", "-1 SP PC" (blocked outside a system call),
	 * or "running" (it woke meanwhile) */
	snprintf(path, sizeof(path), "/proc/%d/task/%u/syscall", pid, tid);
	read_line(path, buf, sizeof(buf));
	if (!strncmp(buf, "running", 7))
		return false;
	p = strrchr(buf, ' ');
	if (p && sscanf(p, " %llx", &pc) == 1)
		out->pc = pc;
	snprintf(path, sizeof(path), "/proc/%d/task/%u/wchan", pid, tid);
	read_line(path, out->wchan, sizeof(out->wchan));
	if (!strcmp(out->wchan, "0"))
		out->wchan[0] = 0;
	return true;
}

/* the kernel function name's address (0: unknown), from the names looked
 * up so far */
static uint64_t kernel_addr(const struct blocked *b, const char *name)
{
	for (unsigned i = 0; i < b->nk; i++)
		if (!strcmp(b->knames[i], name))
			return b->kaddrs[i];
	return 0;
}

/* Look up the names of v[0..n) not looked up yet, in one pass over the
 * symbols (the kernel formats all of /proc/kallsyms for each: ~50 ms). */
static void lookup_kernel(struct blocked *b, const struct sleeper *v, int n)
{
	const char *want[16];
	uint64_t got[16];
	size_t nw = 0;

	for (int i = 0; i < n && nw < 16; i++) {
		bool known = !v[i].wchan[0];

		for (unsigned j = 0; j < b->nk && !known; j++)
			known = !strcmp(b->knames[j], v[i].wchan);
		for (size_t j = 0; j < nw && !known; j++)
			known = !strcmp(want[j], v[i].wchan);
		if (!known)
			want[nw++] = v[i].wchan;
	}
	if (!nw || b->nk + nw > sizeof(b->knames) / sizeof(b->knames[0]) ||
	    ksyms_lookup("/proc/kallsyms", want, nw, got))
		return;
	for (size_t j = 0; j < nw; j++) {
		if (!(b->knames[b->nk] = strdup(want[j])))
			return;
		b->kaddrs[b->nk++] = got[j];
	}
}

/* the threads of pid into tids (at most cap); how many */
static uint32_t list_threads(int pid, uint32_t *tids, uint32_t cap)
{
	char path[64];
	DIR *d;
	struct dirent *e;
	uint32_t n = 0;

	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	if (!(d = opendir(path)))
		return 0;
	while ((e = readdir(d)) && n < cap)
		if (e->d_name[0] >= '1' && e->d_name[0] <= '9')
			tids[n++] = (uint32_t)strtoul(e->d_name, NULL, 10);
	closedir(d);
	return n;
}

int blocked_claim(struct blocked *b, struct sampler *s, int pid, uint32_t gen)
{
	static uint32_t tids[BLOCKED_MAX];
	uint64_t since = clock_mono_ns(); /* the thread listed next was asleep from here on */
	uint32_t n = list_threads(pid, tids, BLOCKED_MAX);
	int claimed = 0;

	if (b->nclaims + n > b->cap) {
		size_t cap = b->nclaims + n + BLOCKED_MAX;
		struct stack_key *c = realloc(b->claims, cap * sizeof(*c));

		if (!c)
			return -1;
		b->claims = c;
		b->cap = cap;
	}
	for (uint32_t i = 0; i < n; i++) {
		struct stack_key *k = &b->claims[b->nclaims];

		*k = (struct stack_key){ .pid = (uint32_t)pid, .tid = tids[i], .gen = gen,
					 .hash = BLOCKED_TAG ^ (++b->seq << 8) };
		/* 1: a slot already (the sampler saw it leave the CPU: its
		 * block is walked) */
		if (sampler_block_in_flight(s, k, since) == 0) {
			b->nclaims++;
			claimed++;
		}
	}
	return claimed;
}

/* take pid's claims of generation gen out of b into out (at most cap);
 * how many.  Those of another generation (none but by a mistake) and those
 * past cap are dropped: none is left in flight unnamed. */
static int take_claims(struct blocked *b, struct sampler *s, int pid, uint32_t gen,
		       struct stack_key *out, int cap)
{
	size_t kept = 0;
	int n = 0;

	for (size_t i = 0; i < b->nclaims; i++) {
		const struct stack_key *k = &b->claims[i];

		if (k->pid != (uint32_t)pid)
			b->claims[kept++] = *k;
		else if (k->gen == gen && n < cap)
			out[n++] = *k;
		else
			(void)sampler_block_drop(s, k);
	}
	b->nclaims = kept;
	return n;
}

void blocked_forget(struct blocked *b, struct sampler *s, int pid)
{
	(void)take_claims(b, s, pid, 0, NULL, 0);
}

int blocked_walk(struct blocked *b, struct sampler *s, struct naming *names, struct profile *prof,
		 const struct pyproc *py, uint32_t gen)
{
	static uint32_t tids[BLOCKED_MAX], ttids[PYPERF_MAX_THREADS];
	static uint64_t ts[PYPERF_MAX_THREADS], ids[PYPERF_MAX_THREADS];
	static struct sleeper sl[BLOCKED_MAX];
	static struct stack_key keys[BLOCKED_MAX];
	static struct py_frame frames[PYPERF_MAX_FRAMES];
	int n = take_claims(b, s, py->pid, gen, keys, BLOCKED_MAX), nsl = 0, nts, taken = 0;

	/* a thread running now had no block in flight: dropped (unless it
	 * ended meanwhile, perhaps counted: named all the same, with the
	 * stack it has now) */
	for (int i = 0; i < n; i++) {
		sl[nsl].key = keys[i];
		if (look_at(py->pid, keys[i].tid, &sl[nsl]) || !sampler_block_drop(s, &keys[i]))
			nsl++;
	}
	if (!nsl)
		return 0;
	nts = pywalk_threads(py, ts, ids, PYPERF_MAX_THREADS);
	if (nts < 0)
		nts = 0;
	/* among all its threads (before 3.11 where the C library keeps a
	 * tid is found from all of them) */
	pywalk_thread_tids(py, ts, (uint32_t)nts, tids, list_threads(py->pid, tids, BLOCKED_MAX),
			   ttids);
	for (int i = 0; i < nsl; i++) {
		struct sleeper *t = &sl[i];

		t->nmine = 0;
		for (int j = 0; j < nts && t->nmine < PYPERF_MAX_NEST; j++)
			if (ttids[j] == t->key.tid) {
				t->mine[t->nmine] = ts[j];
				t->mine_ids[t->nmine++] = ids[j];
			}
		/* --gil: only a thread that holds its GIL, as the sampler */
		t->taken = !(b->gil_only && !(t->nmine && pywalk_holds_gil(py, t->mine[0]))) ||
			   !sampler_block_drop(s, &t->key);
	}
	if (b->kernel)
		lookup_kernel(b, sl, nsl);
	for (int i = 0; i < nsl; i++) {
		struct sleeper *t = &sl[i];
		__u64 kaddr;
		__u64 leaf = t->pc;
		uint32_t flags = STACK_OFFCPU, f = 0;
		struct raw_stack raw = { .pid = py->pid, .tid = (int)t->key.tid, .gen = gen,
					 .hash = t->key.hash, .thread_name = t->comm, .py = frames };
		char *pyname = NULL;

		if (!t->taken)
			continue;
		if (t->nmine) {
			raw.npy = pywalk_frames_nested(py, t->mine, t->mine_ids, t->nmine, frames, NULL,
						       PYPERF_MAX_FRAMES, &f);
			flags |= f;
			pyname = pyobj_thread_name(py->pid, &py->off, t->mine[0]);
		}
		if (b->native) { /* the leaf, and no registers to go on with */
			flags |= STACK_NATIVE | STACK_NATIVE_INCOMPLETE;
			raw.native = &leaf;
			raw.nnative = leaf ? 1 : 0;
		}
		if (b->kernel && t->wchan[0] && (kaddr = kernel_addr(b, t->wchan))) {
			raw.kernel = &kaddr;
			raw.nkernel = 1;
		}
		raw.flags = flags;
		if (naming_add_stack(names, prof, &raw) == 0) {
			profile_set_thread_name(prof, py->pid, t->key.tid, t->comm);
			profile_set_thread_pyname(prof, t->key.tid,
						  pyname ? pyname
						  : t->key.tid == (uint32_t)py->pid ? "MainThread" : NULL);
			taken++;
		} else {
			(void)sampler_block_drop(s, &t->key); /* out of memory: not counted */
		}
		free(pyname);
	}
	return taken;
}

void blocked_free(struct blocked *b)
{
	for (unsigned i = 0; i < b->nk; i++)
		free(b->knames[i]);
	b->nk = 0;
	free(b->claims);
	b->claims = NULL;
	b->nclaims = b->cap = 0;
}
