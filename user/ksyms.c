/* ksyms.c - /proc/kallsyms, sorted by address, searched by bisection.  Only
 * text symbols (t, T, w, W) are kept: kernel stacks hold code addresses. */
#include "ksyms.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int by_addr(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static int push(struct ksyms *k, size_t *cap, uint64_t addr, const char *name)
{
	if (k->n == *cap) {
		size_t c = *cap ? *cap * 2 : 65536;
		struct ksym *v = realloc(k->v, c * sizeof(*v));

		if (!v)
			return -1;
		k->v = v;
		*cap = c;
	}
	k->v[k->n].addr = addr;
	k->v[k->n].name = strdup(name);
	if (!k->v[k->n].name)
		return -1;
	k->n++;
	return 0;
}

int ksyms_load(struct ksyms *k, const char *path)
{
	FILE *f = fopen(path, "r");
	char line[512], name[256], type;
	unsigned long long addr;
	size_t cap = 0;

	memset(k, 0, sizeof(*k));
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%llx %c %255s", &addr, &type, name) != 3 || !addr)
			continue;
		if (!strchr("tTwW", type))
			continue;
		if (push(k, &cap, addr, name)) {
			fclose(f);
			ksyms_free(k);
			return -1;
		}
	}
	fclose(f);
	qsort(k->v, k->n, sizeof(*k->v), by_addr);
	return k->n ? 0 : -1;
}

const char *ksyms_name(const struct ksyms *k, uint64_t addr)
{
	size_t lo = 0, hi = k->n;

	if (!k->n || addr < k->v[0].addr)
		return NULL;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (k->v[mid].addr <= addr)
			lo = mid;
		else
			hi = mid;
	}
	return k->v[lo].name;
}

void ksyms_free(struct ksyms *k)
{
	for (size_t i = 0; i < k->n; i++)
		free(k->v[i].name);
	free(k->v);
	memset(k, 0, sizeof(*k));
}
