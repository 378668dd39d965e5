/* ksyms.c - name kernel addresses with /proc/kallsyms, keeping only what is
 * asked for.  A kernel has ~100k text symbols; a profile needs a few hundred.
 * Pass one keeps just the symbol addresses (8 bytes each), sorted, and picks
 * for each wanted address the greatest symbol address at or below it; pass two
 * copies the names of the picked symbols.  Only text symbols (t, T, w, W)
 * count: stack addresses are code. */
#include "ksyms.h"

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

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* index of the greatest v[i] <= key, or -1 */
static ptrdiff_t floor_index(const uint64_t *v, size_t n, uint64_t key)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (v[mid] <= key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (ptrdiff_t)lo - 1;
}

static uint64_t *symbol_addresses(FILE *f, size_t *n)
{
	uint64_t *v = NULL, addr;
	size_t cap = 0, len;
	char line[512], *name;

	*n = 0;
	while (fgets(line, sizeof(line), f)) {
		if (parse_text_symbol(line, &addr, &name, &len))
			continue;
		if (*n == cap) {
			uint64_t *nv = realloc(v, (cap = cap ? cap * 2 : 65536) * sizeof(*v));

			if (!nv) {
				free(v);
				return NULL;
			}
			v = nv;
		}
		v[(*n)++] = addr;
	}
	qsort(v, *n, sizeof(*v), cmp_u64);
	return v;
}

int ksyms_resolve(const char *path, const uint64_t *addrs, size_t n, char **names)
{
	FILE *f = fopen(path, "r");
	uint64_t *syms, *want, addr;
	size_t nsyms, len;
	char line[512], *name;

	for (size_t i = 0; i < n; i++)
		names[i] = NULL;
	if (!f)
		return -1;
	syms = symbol_addresses(f, &nsyms);
	want = malloc((n + 1) * sizeof(*want)); /* the symbol chosen for each address */
	if (!syms || !want) {
		free(syms);
		free(want);
		fclose(f);
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		ptrdiff_t j = floor_index(syms, nsyms, addrs[i]);

		want[i] = j >= 0 ? syms[j] : 0;
	}
	free(syms);
	rewind(f);
	while (fgets(line, sizeof(line), f)) {
		ptrdiff_t j;

		if (parse_text_symbol(line, &addr, &name, &len))
			continue;
		/* want[] is sorted like addrs[]: find every address that chose addr */
		j = floor_index(want, n, addr);
		for (; j >= 0 && want[j] == addr; j--)
			if (!names[j])
				names[j] = strndup(name, len);
	}
	free(want);
	fclose(f);
	return 0;
}
