/* native.c - see native.h.  A binary is keyed by the device and inode of the
 * file the process actually maps (opened through /proc/PID/map_files, so a
 * replaced or deleted file is still the right one); the vDSO is the kernel's
 * and the same in every process, so ours stands in for it. */
#include "native.h"
#include "elfsym.h"
#include "errmsg.h"
#include "nsym.h"
#include "procmaps.h"
#include "unwind_table.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_SEGS 16
#define ROW_TRAMPOLINE 1 /* reserved row: CPython's perf trampolines */

struct nseg {
	uint64_t vaddr, offset, filesz;
};

struct nbin {
	char *path;                  /* as the process mapped it */
	const char *base;            /* its last component */
	int fd;
	struct nseg segs[MAX_SEGS];  /* PT_LOAD segments */
	int nsegs;
	uint32_t rows_start, rows_len;
	struct nsym_bin *sym;        /* opened on first use */
	bool sym_failed;
	struct pybin info;           /* what pprof says of the binary */
};

struct nmap {
	uint64_t start, end, bias;
	struct nbin *bin;            /* NULL: anonymous code */
};

struct jit_sym {
	uint64_t start, end;
	char *name;
};

struct nproc {
	int pid;
	size_t n;
	struct nmap *v;
	struct jit_sym *jit;         /* from /tmp/perf-PID.map, sorted */
	size_t njit;
	uint64_t jit_size;           /* bytes of the map file read */
};

struct bin_key {
	uint64_t dev, ino;
};

struct func_key {
	struct nbin *bin;
	uint64_t addr;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static struct pyfunc *new_func(const char *name, const char *file, uint8_t kind)
{
	struct pyfunc *f = calloc(1, sizeof(*f));

	if (!f)
		return NULL;
	f->name = strdup(name);
	f->file = strdup(file);
	f->kind = kind;
	if (!f->name || !f->file) {
		pyfunc_free(f);
		return NULL;
	}
	return f;
}

void native_init(struct native *n, native_write_fn write, void *ctx, size_t cap)
{
	struct unwind_row fixed[ROW_TRAMPOLINE + 1];

	memset(n, 0, sizeof(*n));
	memset(fixed, 0, sizeof(fixed)); /* row 0: pc 0, CFA_NONE */
	fixed[ROW_TRAMPOLINE].cfa_kind = CFA_RSP;
	fixed[ROW_TRAMPOLINE].cfa_off = 16;
	fixed[ROW_TRAMPOLINE].rbp_kind = RBP_SAME;
	if (write && cap > ROW_TRAMPOLINE && write(ctx, 0, fixed, ROW_TRAMPOLINE + 1) == 0) {
		n->write = write;
		n->write_ctx = ctx;
		n->cap = cap;
		n->used = ROW_TRAMPOLINE + 1;
	}
	n->unknown = new_func("[unknown]", "", FN_NATIVE);
}

static void free_bin(void *v)
{
	struct nbin *b = v;

	nsym_close(b->sym);
	if (b->fd >= 0)
		close(b->fd);
	free(b->path);
	free(b);
}

static void free_jit(struct nproc *p)
{
	for (size_t i = 0; i < p->njit; i++)
		free(p->jit[i].name);
	free(p->jit);
	p->jit = NULL;
	p->njit = 0;
	p->jit_size = 0;
}

static void free_proc(void *v)
{
	struct nproc *p = v;

	free(p->v);
	free_jit(p);
	free(p);
}

static int cmp_jit(const void *a, const void *b)
{
	const struct jit_sym *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* (Re)read the perf map a JIT writes for perf (CPython's -X perf, and others):
 * lines "START SIZE NAME" in hex.  Only when it grew since the last read. */
static void read_perf_map(struct nproc *p)
{
	char path[128], line[1024];
	struct stat st;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/root/tmp/perf-%d.map", p->pid, p->pid);
	if (stat(path, &st) || (uint64_t)st.st_size == p->jit_size || !(f = fopen(path, "re")))
		return;
	free_jit(p);
	p->jit_size = (uint64_t)st.st_size;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long start, size;
		int off = 0;
		struct jit_sym *v;

		if (sscanf(line, "%llx %llx %n", &start, &size, &off) != 2 || !off)
			continue;
		line[strcspn(line, "\n")] = 0;
		v = realloc(p->jit, (p->njit + 1) * sizeof(*v));
		if (!v)
			break;
		p->jit = v;
		v[p->njit].start = start;
		v[p->njit].end = start + size;
		v[p->njit].name = strdup(line + off);
		if (v[p->njit].name)
			p->njit++;
	}
	fclose(f);
	qsort(p->jit, p->njit, sizeof(*p->jit), cmp_jit);
}

static const struct jit_sym *find_jit(const struct nproc *p, uint64_t pc)
{
	size_t lo = 0, hi = p->njit;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (p->jit[mid].start <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo && pc < p->jit[lo - 1].end ? &p->jit[lo - 1] : NULL;
}

static void free_func(void *v)
{
	pyfunc_free(v);
}

void native_free(struct native *n)
{
	hmap_free(&n->procs, free_proc);
	hmap_free(&n->funcs, free_func);
	hmap_free(&n->bins, free_bin);
	pyfunc_free(n->unknown);
	memset(n, 0, sizeof(*n));
}

/* PT_LOAD segments of the ELF file on fd; 0, or -1 if it is not ELF */
static int read_segments(struct nbin *b)
{
	Elf *e = elf_begin(b->fd, ELF_C_READ_MMAP, NULL);
	size_t nph = 0;
	int rc = -1;

	if (!e)
		return -1;
	if (elf_kind(e) != ELF_K_ELF || elf_getphdrnum(e, &nph))
		goto out;
	for (size_t i = 0; i < nph && b->nsegs < MAX_SEGS; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		b->segs[b->nsegs].vaddr = ph.p_vaddr;
		b->segs[b->nsegs].offset = ph.p_offset;
		b->segs[b->nsegs].filesz = ph.p_filesz;
		b->nsegs++;
		if ((ph.p_flags & PF_X) && (!b->info.hi || ph.p_vaddr < b->info.lo)) {
			b->info.lo = ph.p_vaddr;
			b->info.offset = ph.p_offset;
		}
		if ((ph.p_flags & PF_X) && ph.p_vaddr + ph.p_memsz > b->info.hi)
			b->info.hi = ph.p_vaddr + ph.p_memsz;
	}
	rc = b->nsegs ? 0 : -1;
out:
	elf_end(e);
	return rc;
}

/* Build b's unwind table into the shared rows. */
static void build_table(struct native *n, struct nbin *b)
{
	struct unwind_table t = { 0 };
	char err[256];
	uint64_t t0 = now_ns();

	b->rows_start = b->rows_len = 0;
	if (!n->cap)
		return;
	if (unwind_table_build(b->fd, b->path, &t, err, sizeof(err)) == 0 && t.n) {
		if (n->used + t.n <= n->cap && t.n <= UINT32_MAX &&
		    n->write(n->write_ctx, n->used, t.rows, t.n) == 0) {
			b->rows_start = (uint32_t)n->used;
			b->rows_len = (uint32_t)t.n;
			n->used += t.n;
			n->st.rows = n->used;
			n->st.tables++;
		} else {
			/* no room: row 0 says "no CFI", so unwinding stops here
			 * rather than trusting frame pointers that are not there */
			b->rows_start = 0;
			b->rows_len = 1;
			n->st.no_room++;
		}
	}
	unwind_table_free(&t);
	n->st.build_ns += now_ns() - t0;
}

static struct nbin *new_bin(struct native *n, int fd, const char *path, const struct bin_key *k)
{
	struct nbin *b = calloc(1, sizeof(*b));
	const char *slash;

	if (!b)
		return NULL;
	b->fd = fd;
	b->path = strdup(path);
	if (!b->path || read_segments(b) || hmap_put(&n->bins, k, sizeof(*k), b)) {
		b->fd = -1; /* the caller closes it */
		free_bin(b);
		return NULL;
	}
	slash = strrchr(b->path, '/');
	b->base = slash ? slash + 1 : b->path;
	b->info.path = b->path;
	{
		char self[64];

		snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
		if (elf_read_build_id(self, b->info.build_id, sizeof(b->info.build_id)))
			b->info.build_id[0] = 0;
	}
	n->st.binaries++;
	build_table(n, b);
	return b;
}

/* the binary mapped at m in pid, opened and tabled on first sight */
static struct nbin *file_bin(struct native *n, int pid, const struct proc_map *m)
{
	char p[PATH_MAX];
	struct stat st;
	struct bin_key k;
	struct nbin *b;
	int fd;

	snprintf(p, sizeof(p), "/proc/%d/map_files/%llx-%llx", pid, (unsigned long long)m->start,
		 (unsigned long long)m->end);
	fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0 && procmaps_host_path(pid, m->path, p, sizeof(p)))
		fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st)) {
		close(fd);
		return NULL;
	}
	memset(&k, 0, sizeof(k));
	k.dev = st.st_dev;
	k.ino = st.st_ino;
	b = hmap_get(&n->bins, &k, sizeof(k));
	if (b) {
		close(fd);
		return b;
	}
	b = new_bin(n, fd, m->path, &k);
	if (!b)
		close(fd);
	return b;
}

/* The vDSO: the kernel's, identical in every process; ours, copied to a
 * memfd so it reads like a file. */
static struct nbin *vdso_bin(struct native *n)
{
	struct bin_key k = { .dev = 0, .ino = 1 };
	struct nbin *b = hmap_get(&n->bins, &k, sizeof(k));
	const void *img = (const void *)getauxval(AT_SYSINFO_EHDR);
	struct proc_maps self = { 0 };
	char err[128];
	size_t len = 0;
	int fd;

	if (b || !img)
		return b;
	if (procmaps_read(getpid(), &self, err, sizeof(err)))
		return NULL;
	for (size_t i = 0; i < self.n; i++)
		if (self.v[i].start == (uint64_t)(uintptr_t)img)
			len = self.v[i].end - self.v[i].start;
	procmaps_free(&self);
	fd = len ? memfd_create("vdso", MFD_CLOEXEC) : -1;
	if (fd < 0)
		return NULL;
	if (write(fd, img, len) != (ssize_t)len) {
		close(fd);
		return NULL;
	}
	b = new_bin(n, fd, "[vdso]", &k);
	if (!b)
		close(fd);
	return b;
}

/* load bias of mapping m of binary b: runtime address - ELF address */
static bool mapping_bias(const struct nbin *b, const struct proc_map *m, uint64_t *bias)
{
	for (int i = 0; i < b->nsegs; i++) {
		const struct nseg *s = &b->segs[i];

		if ((s->offset & ~4095ull) <= m->offset && m->offset < s->offset + s->filesz) {
			*bias = m->start - m->offset - (s->vaddr - s->offset);
			return true;
		}
	}
	return false;
}

static struct nproc *get_proc(struct native *n, int pid)
{
	struct nproc *np = hmap_get(&n->procs, &pid, sizeof(pid));

	if (np)
		return np;
	np = calloc(1, sizeof(*np));
	if (!np)
		return NULL;
	np->pid = pid;
	if (hmap_put(&n->procs, &pid, sizeof(pid), np)) {
		free(np);
		return NULL;
	}
	return np;
}

/* Is [start, end) an arena of CPython's perf trampolines (-X perf, 3.12+)?
 * They are listed in the perf map as "py::...". */
static bool perf_trampolines(struct nproc *np, uint64_t start, uint64_t end)
{
	const struct jit_sym *j;

	read_perf_map(np);
	j = find_jit(np, start);
	for (size_t i = j ? (size_t)(j - np->jit) : 0; i < np->njit && np->jit[i].start < end; i++)
		if (np->jit[i].start >= start && !strncmp(np->jit[i].name, "py::", 4))
			return true;
	return false;
}

int native_proc_update(struct native *n, int pid, struct native_maps *out, char *err,
		       size_t errlen)
{
	struct proc_maps maps = { 0 };
	struct nproc *np = get_proc(n, pid);
	struct nmap *v;
	size_t k = 0;

	if (!np) {
		set_err(err, errlen, "out of memory");
		return -1;
	}
	if (procmaps_read(pid, &maps, err, errlen))
		return -1;
	v = calloc(maps.n + 1, sizeof(*v));
	if (!v) {
		procmaps_free(&maps);
		set_err(err, errlen, "out of memory");
		return -1;
	}
	memset(out, 0, sizeof(*out));
	for (size_t i = 0; i < maps.n; i++) {
		const struct proc_map *m = &maps.v[i];
		struct nmap nm = { .start = m->start, .end = m->end };
		uint32_t rows_start = 0, rows_len = 0;

		if (m->perms[2] != 'x')
			continue;
		if (!m->path) {
			nm.bin = NULL; /* JIT code: frame pointers, unless... */
			if (n->cap > ROW_TRAMPOLINE && perf_trampolines(np, m->start, m->end)) {
				/* each trampoline is "sub $8,%rsp; call *%rcx; add $8,%rsp;
				 * ret": one rule, at every return address, for the arena */
				nm.bias = m->start;
				rows_start = ROW_TRAMPOLINE;
				rows_len = 1;
			}
		} else if (!strcmp(m->path, "[vdso]")) {
			nm.bin = vdso_bin(n);
			if (!nm.bin || !mapping_bias(nm.bin, m, &nm.bias))
				continue;
		} else if (m->path[0] == '/') {
			nm.bin = file_bin(n, pid, m);
			if (!nm.bin || !mapping_bias(nm.bin, m, &nm.bias))
				continue;
		} else {
			continue; /* [vsyscall] and the like */
		}
		if (nm.bin) {
			rows_start = nm.bin->rows_start;
			rows_len = nm.bin->rows_len;
		}
		v[k] = nm;
		if (k < PYPERF_MAX_MAPPINGS) {
			out->m[k].start = nm.start;
			out->m[k].end = nm.end;
			out->m[k].bias = nm.bias;
			out->m[k].rows_start = rows_start;
			out->m[k].rows_len = rows_len;
		} else {
			n->st.mappings_dropped++;
		}
		k++;
	}
	procmaps_free(&maps);
	out->n = k < PYPERF_MAX_MAPPINGS ? (uint32_t)k : PYPERF_MAX_MAPPINGS;
	free(np->v);
	np->v = v;
	np->n = k;
	return 0;
}

void native_proc_forget(struct native *n, int pid)
{
	struct nproc *np = hmap_get(&n->procs, &pid, sizeof(pid));

	if (np) { /* hmap has no delete: empty it */
		free(np->v);
		np->v = NULL;
		np->n = 0;
		free_jit(np);
	}
}

static const struct nmap *find_map(const struct nproc *np, uint64_t pc)
{
	size_t lo = 0, hi = np->n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (np->v[mid].start <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo && pc < np->v[lo - 1].end ? &np->v[lo - 1] : NULL;
}

static bool is_eval_loop(const char *name)
{
	static const char eval[] = "_PyEval_EvalFrameDefault";
	size_t len = sizeof(eval) - 1;

	/* gcc may split off parts such as _PyEval_EvalFrameDefault.cold */
	return !strncmp(name, eval, len) && (!name[len] || name[len] == '.');
}

static struct pyfunc *intern(struct native *n, struct nbin *bin, const struct pybin *info,
			     uint64_t addr, const char *name, const char *file)
{
	struct func_key k;
	struct pyfunc *f;

	memset(&k, 0, sizeof(k));
	k.bin = bin;
	k.addr = addr;
	f = hmap_get(&n->funcs, &k, sizeof(k));
	if (f)
		return f;
	f = new_func(name, file, is_eval_loop(name) ? FN_EVAL : FN_NATIVE);
	if (!f)
		return n->unknown;
	f->bin = info;
	f->addr = addr;
	if (hmap_put(&n->funcs, &k, sizeof(k), f)) {
		pyfunc_free(f);
		return n->unknown;
	}
	return f;
}

/* code without a file (JIT): named from the perf map if the JIT wrote one */
static const struct pyfunc *jit_func(struct native *n, struct nproc *np, uint64_t pc)
{
	const struct jit_sym *j = find_jit(np, pc);

	if (!j) {
		read_perf_map(np);
		j = find_jit(np, pc);
	}
	if (!j)
		return n->unknown;
	/* keyed by the process's own entry: addresses of JIT code are per process */
	return intern(n, (struct nbin *)np, NULL, j->start, j->name, "[jit]");
}

const struct pyfunc *native_func(struct native *n, int pid, uint64_t pc, bool leaf)
{
	struct nproc *np = hmap_get(&n->procs, &pid, sizeof(pid));
	const struct nmap *m = np ? find_map(np, pc) : NULL;
	uint64_t vaddr, start;
	char name[512], err[256];
	int named = 0;

	if (m && !m->bin)
		return jit_func(n, np, pc - (leaf ? 0 : 1));
	if (!m)
		return n->unknown;
	vaddr = pc - m->bias - (leaf ? 0 : 1);
	if (!m->bin->sym && !m->bin->sym_failed) {
		m->bin->sym = nsym_open(m->bin->fd, m->bin->path, err, sizeof(err));
		m->bin->sym_failed = !m->bin->sym;
	}
	if (m->bin->sym) {
		named = nsym_name(m->bin->sym, vaddr, name, sizeof(name), &start);
	} else {
		snprintf(name, sizeof(name), "%s+0x%llx", m->bin->base, (unsigned long long)vaddr);
	}
	return intern(n, m->bin, &m->bin->info, named ? start : vaddr, name, m->bin->base);
}
