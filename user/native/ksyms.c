/* ksyms.c - name kernel addresses with /proc/kallsyms.  A kernel has ~100k
 * text symbols; a profile needs a few hundred.  The file is read once (the
 * kernel formats all of it on every pass: ~50 ms of system time), its text
 * symbols kept for the moment (address and name, ~4 MB), and each wanted
 * address takes the greatest symbol address at or below it.  Only text
 * symbols (t, T, w, W) count: stack addresses are code. */
#include "ksyms.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "ffffffff81000000 T _stext [module]" -> address and name of a text symbol */
static int parse_text_symbol(char *line, uint64_t *addr, char **name, size_t *len)
{
	char *end;

	*addr = strtoull(line, &end, 16);
	if (end == line || end[0] != ' ' || !end[1] || end[2] != ' ' || !strchr("tTwW", end[1]))
		return -1;
	*name = end + 3;
	*len = strcspn(*name, " \t\n");
	return *addr && *len ? 0 : -1;
}

struct ksym {
	uint64_t addr;
	size_t name;                 /* offset in the names arena */
};

static int cmp_ksym(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* index of the greatest v[i].addr <= key, or -1 */
static ptrdiff_t floor_index(const struct ksym *v, size_t n, uint64_t key)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (v[mid].addr <= key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (ptrdiff_t)lo - 1;
}

static bool grow(void **v, size_t *cap, size_t need, size_t size, size_t first)
{
	void *nv;
	size_t ncap = *cap ? *cap : first;

	if (need <= *cap)
		return true;
	while (ncap < need)
		ncap *= 2;
	if (!(nv = realloc(*v, ncap * size)))
		return false;
	*v = nv;
	*cap = ncap;
	return true;
}

int ksyms_resolve(const char *path, const uint64_t *addrs, size_t n, char **names)
{
	FILE *f = fopen(path, "r");
	struct ksym *syms = NULL;
	char *arena = NULL, line[512], *name;
	size_t nsyms = 0, cap = 0, used = 0, acap = 0, len;
	uint64_t addr;
	int rc = -1;

	for (size_t i = 0; i < n; i++)
		names[i] = NULL;
	if (!f)
		return -1;
	/* one pass with a large buffer: the kernel formats the whole file for
	 * every read, and each read() of a small buffer re-finds its place */
	setvbuf(f, NULL, _IOFBF, 1 << 18);
	while (fgets(line, sizeof(line), f)) {
		if (parse_text_symbol(line, &addr, &name, &len))
			continue;
		if (!grow((void **)&syms, &cap, nsyms + 1, sizeof(*syms), 65536) ||
		    !grow((void **)&arena, &acap, used + len + 1, 1, 1 << 20))
			goto out;
		memcpy(arena + used, name, len);
		arena[used + len] = 0;
		syms[nsyms].addr = addr;
		syms[nsyms++].name = used;
		used += len + 1;
	}
	if (nsyms)
		qsort(syms, nsyms, sizeof(*syms), cmp_ksym);
	for (size_t i = 0; i < n; i++) {
		ptrdiff_t j = floor_index(syms, nsyms, addrs[i]);

		if (j >= 0)
			names[i] = strdup(arena + syms[j].name);
	}
	rc = 0;
out:
	free(syms);
	free(arena);
	fclose(f);
	return rc;
}

int ksyms_lookup(const char *path, const char *const *names, size_t n, uint64_t *addrs)
{
	FILE *f = fopen(path, "r");
	char line[512], *name;
	size_t left = n, len;
	uint64_t addr;

	for (size_t i = 0; i < n; i++)
		addrs[i] = 0;
	if (!f)
		return -1;
	setvbuf(f, NULL, _IOFBF, 1 << 18);
	while (left && fgets(line, sizeof(line), f)) {
		if (parse_text_symbol(line, &addr, &name, &len))
			continue;
		for (size_t i = 0; i < n; i++)
			if (!addrs[i] && strlen(names[i]) == len && !memcmp(names[i], name, len)) {
				addrs[i] = addr;
				left--;
			}
	}
	fclose(f);
	return 0;
}
