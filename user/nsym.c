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
	/* at one address prefer the sized, then the longer symbol */
	return x->end > y->end ? -1 : x->end < y->end;
}

static const char *demangled(struct nsym_bin *b, const char *name)
{
	char *d, **v;
	int status = -1;

	if (strncmp(name, "_Z", 2))
		return name;
	d = __cxa_demangle(name, NULL, NULL, &status);
	if (!d || status)
		return free(d), name;
	v = realloc(b->owned, (b->nowned + 1) * sizeof(*v));
	if (!v)
		return free(d), name;
	b->owned = v;
	v[b->nowned++] = d;
	return d;
}

/* copy the function symbols, sorted, once */
static void load(struct nsym_bin *b)
{
	GElf_Addr bias = 0;
	int n;
	size_t k = 0;

	b->loaded = true;
	if (!dwfl_module_getelf(b->mod, &bias))
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
	b->v = calloc((size_t)n, sizeof(*b->v));
	if (!b->v)
		return;
	for (int i = 1; i < n; i++) {
		GElf_Sym sym;
		GElf_Addr addr;
		GElf_Word shndx;
		const char *name = dwfl_module_getsym_info(b->mod, i, &sym, &addr, &shndx, NULL,
							   NULL);
		int type = GELF_ST_TYPE(sym.st_info);

		if (!name || !*name || sym.st_shndx == SHN_UNDEF || shndx == SHN_UNDEF ||
		    (type != STT_FUNC && type != STT_GNU_IFUNC))
			continue;
		b->v[k].start = addr - bias;
		b->v[k].end = addr - bias + sym.st_size;
		b->v[k].name = name;
		k++;
	}
	qsort(b->v, k, sizeof(*b->v), cmp_fsym);
	b->n = k;
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
	/* "name@VERSION" (symbol versions in .dynsym) names the same function */
	snprintf(buf, len, "%.*s", (int)strcspn(s->name, "@"), demangled(b, s->name));
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
