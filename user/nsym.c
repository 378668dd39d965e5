/* nsym.c - see nsym.h.  libdwfl finds and reads the symbol tables (and the
 * separate debug file); we copy the function symbols into one sorted array
 * once, so a lookup is a binary search with an exact size check. */
#include "nsym.h"

#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *nsym_debuginfo_path;

/* libstdc++'s demangler; extern "C" */
char *__cxa_demangle(const char *mangled, char *out, size_t *len, int *status);

struct fsym {
	uint64_t start, end;
	const char *name;            /* in libdwfl's tables, or `owned` */
	int rank;                    /* among aliases, lower is the better name */
};

struct nsym_bin {
	Dwfl *dwfl;
	Dwfl_Module *mod;
	char *path;
	const char *base;
	bool loaded, debug_file;
	struct fsym *v;
	size_t n;
	char **owned;                /* demangled names */
	size_t nowned;
};

struct nsym_bin *nsym_open(int fd, const char *path, char *err, size_t errlen)
{
	static char *debuginfo_path;
	static Dwfl_Callbacks cb = {
		.find_elf = dwfl_build_id_find_elf,
		.find_debuginfo = dwfl_standard_find_debuginfo,
		.section_address = dwfl_offline_section_address,
	};
	struct nsym_bin *b = calloc(1, sizeof(*b));
	const char *slash;
	int dfd = dup(fd);

	if (nsym_debuginfo_path && !debuginfo_path)
		debuginfo_path = strdup(nsym_debuginfo_path);
	cb.debuginfo_path = debuginfo_path ? &debuginfo_path : NULL;
	if (!b || dfd < 0 || !(b->path = strdup(path)) || !(b->dwfl = dwfl_begin(&cb))) {
		snprintf(err, errlen, "%s: out of memory", path);
		goto fail;
	}
	slash = strrchr(b->path, '/');
	b->base = slash ? slash + 1 : b->path;
	/* base 0, add_p_vaddr false: module addresses are the ELF's own */
	b->mod = dwfl_report_elf(b->dwfl, b->base, path, dfd, 0, false);
	dfd = -1; /* libdwfl owns it now (closes it even on failure) */
	if (!b->mod) {
		snprintf(err, errlen, "%s: not an ELF file (%s)", path, dwfl_errmsg(-1));
		goto fail;
	}
	dwfl_report_end(b->dwfl, NULL, NULL);
	return b;
fail:
	if (dfd >= 0)
		close(dfd);
	nsym_close(b);
	return NULL;
}

void nsym_close(struct nsym_bin *b)
{
	if (!b)
		return;
	if (b->dwfl)
		dwfl_end(b->dwfl);
	for (size_t i = 0; i < b->nowned; i++)
		free(b->owned[i]);
	free(b->owned);
	free(b->v);
	free(b->path);
	free(b);
}

static int cmp_fsym(const void *a, const void *c)
{
	const struct fsym *x = a, *y = c;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	/* at one address prefer the sized, then the longer symbol, then the
	 * better-known alias (getpid over __getpid) */
	if (x->end != y->end)
		return x->end > y->end ? -1 : 1;
	return x->rank - y->rank;
}

/* keep s until close; false (s freed) when out of memory */
static bool own(struct nsym_bin *b, char *s)
{
	char **v = realloc(b->owned, (b->nowned + 1) * sizeof(*v));

	if (!v) {
		free(s);
		return false;
	}
	b->owned = v;
	v[b->nowned++] = s;
	return true;
}

static const char *demangled(struct nsym_bin *b, const char *name)
{
	char *d;
	int status = -1;

	if (strncmp(name, "_Z", 2))
		return name;
	d = __cxa_demangle(name, NULL, NULL, &status);
	if (!d || status)
		return free(d), name;
	return own(b, d) ? d : name;
}

static bool add_sym(struct nsym_bin *b, size_t *k, size_t *cap, uint64_t start, uint64_t end,
		    const char *name, int rank)
{
	if (*k == *cap) {
		size_t ncap = *cap ? *cap * 2 : 256;
		struct fsym *v = realloc(b->v, ncap * sizeof(*v));

		if (!v)
			return false;
		b->v = v;
		*cap = ncap;
	}
	b->v[*k].start = start;
	b->v[*k].end = end;
	b->v[*k].name = name;
	b->v[*k].rank = rank;
	(*k)++;
	return true;
}

/* PLT stubs have no symbols; name them "target@plt" as perf and gdb do:
 * stub i of .plt.sec (or i + 1 of .plt, after the resolver stub) jumps
 * through the GOT slot that .rela.plt entry i relocates. */
static void add_plt(struct nsym_bin *b, Elf *e, size_t *k, size_t *cap)
{
	Elf_Scn *scn = NULL, *rela = NULL, *plt = NULL, *plt_sec = NULL;
	GElf_Shdr sh, rsh, psh, dsh;
	size_t shstrndx;
	Elf_Data *rd, *dd;
	Elf_Scn *dynsym;

	if (elf_getshdrstrndx(e, &shstrndx))
		return;
	while ((scn = elf_nextscn(e, scn))) {
		const char *name;

		if (!gelf_getshdr(scn, &sh) || !(name = elf_strptr(e, shstrndx, sh.sh_name)))
			continue;
		if (!strcmp(name, ".rela.plt"))
			rela = scn;
		else if (!strcmp(name, ".plt"))
			plt = scn;
		else if (!strcmp(name, ".plt.sec"))
			plt_sec = scn;
	}
	if (!rela || !(plt || plt_sec) || !gelf_getshdr(rela, &rsh) || !rsh.sh_entsize ||
	    !(dynsym = elf_getscn(e, rsh.sh_link)) || !gelf_getshdr(dynsym, &dsh) ||
	    !(rd = elf_getdata(rela, NULL)) || !(dd = elf_getdata(dynsym, NULL)) ||
	    !gelf_getshdr(plt_sec ? plt_sec : plt, &psh))
		return;
	for (size_t i = 0; i < rsh.sh_size / rsh.sh_entsize; i++) {
		GElf_Rela r;
		GElf_Sym sym;
		const char *name;
		char *label;
		uint64_t at = psh.sh_addr + 16 * (i + (plt_sec ? 0 : 1));

		if (at + 16 > psh.sh_addr + psh.sh_size)
			break;
		if (!gelf_getrela(rd, (int)i, &r) || !gelf_getsym(dd, (int)GELF_R_SYM(r.r_info), &sym) ||
		    !(name = elf_strptr(e, dsh.sh_link, sym.st_name)) || !*name)
			continue;
		if (asprintf(&label, "%.*s@plt", (int)strcspn(name, "@"), name) < 0)
			continue;
		if (!own(b, label) || !add_sym(b, k, cap, at, at + 16, label, 63))
			return;
	}
}

/* copy the function symbols, sorted, once */
static void load(struct nsym_bin *b)
{
	GElf_Addr bias = 0;
	int n;
	size_t k = 0, cap = 0;
	Elf *elf;

	b->loaded = true;
	if (!(elf = dwfl_module_getelf(b->mod, &bias)))
		return;
	n = dwfl_module_getsymtab(b->mod);
	if (n <= 0)
		return;
	{
		Dwarf_Addr dbias;
		const char *debug = NULL;

		dwfl_module_info(b->mod, NULL, NULL, NULL, NULL, &dbias, NULL, &debug);
		b->debug_file = debug != NULL;
	}
	for (int i = 1; i < n; i++) {
		GElf_Sym sym;
		GElf_Addr addr;
		GElf_Word shndx;
		const char *name = dwfl_module_getsym_info(b->mod, i, &sym, &addr, &shndx, NULL,
							   NULL);
		int type = GELF_ST_TYPE(sym.st_info), rank;

		if (!name || !*name || sym.st_shndx == SHN_UNDEF || shndx == SHN_UNDEF ||
		    (type != STT_FUNC && type != STT_GNU_IFUNC))
			continue;
		/* fewer leading underscores (the public name), then global,
		 * weak, local */
		rank = (int)(strspn(name, "_") < 15 ? strspn(name, "_") : 15) * 4 +
		       (GELF_ST_BIND(sym.st_info) == STB_GLOBAL ? 0 :
			GELF_ST_BIND(sym.st_info) == STB_WEAK ? 1 : 2);
		if (!add_sym(b, &k, &cap, addr - bias, addr - bias + sym.st_size, name, rank))
			return;
	}
	add_plt(b, elf, &k, &cap);
	qsort(b->v, k, sizeof(*b->v), cmp_fsym);
	/* aliases: keep the best name of each (start, end) */
	b->n = 0;
	for (size_t i = 0; i < k; i++)
		if (!b->n || b->v[b->n - 1].start != b->v[i].start ||
		    b->v[b->n - 1].end != b->v[i].end)
			b->v[b->n++] = b->v[i];
}

/* the symbol covering vaddr, or NULL */
static const struct fsym *find(struct nsym_bin *b, uint64_t vaddr)
{
	size_t lo = 0, hi;

	if (!b->loaded)
		load(b);
	hi = b->n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (b->v[mid].start <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* nested or overlapping symbols: look back a little for one that covers */
	for (size_t i = lo, tries = 0; i > 0 && tries < 8; i--, tries++) {
		const struct fsym *s = &b->v[i - 1];

		if (vaddr < s->end || (s->start == s->end && vaddr == s->start))
			return s;
	}
	return NULL;
}

int nsym_name(struct nsym_bin *b, uint64_t vaddr, char *buf, size_t len, uint64_t *sym_start)
{
	const struct fsym *s = find(b, vaddr);

	if (!s) {
		snprintf(buf, len, "%s+0x%llx", b->base, (unsigned long long)vaddr);
		if (sym_start)
			*sym_start = vaddr;
		return 0;
	}
	/* "name@VERSION" (symbol versions in .dynsym) names the same function;
	 * "name@plt" is our own label of a PLT stub */
	const char *name = demangled(b, s->name);
	size_t n = strlen(name), at = strcspn(name, "@");

	if (n > 4 && !strcmp(name + n - 4, "@plt"))
		at = n;
	snprintf(buf, len, "%.*s", (int)at, name);
	if (sym_start)
		*sym_start = s->start;
	return 1;
}

int nsym_lookup(struct nsym_bin *b, const char *name, uint64_t *start, uint64_t *end)
{
	if (!b->loaded)
		load(b);
	for (size_t i = 0; i < b->n; i++)
		if (!strcmp(b->v[i].name, name)) {
			*start = b->v[i].start;
			*end = b->v[i].end;
			return 0;
		}
	return -1;
}

const char *nsym_module(const struct nsym_bin *b)
{
	return b->base;
}

int nsym_has_debug_file(struct nsym_bin *b)
{
	if (!b->loaded)
		load(b);
	return b->debug_file;
}
