/* pdict.c - see pdict.h. */
#include "pdict.h"

#include <stdlib.h>
#include <string.h>

/* room for one more of size bytes in *v after n (cap *cap); false: none */
static bool room(struct pdict *d, void **v, size_t *cap, size_t n, size_t size)
{
	size_t c = *cap ? *cap * 2 : 64;
	void *w;

	if (n < *cap)
		return true;
	if (!(w = realloc(*v, c * size))) {
		d->failed = true;
		return false;
	}
	*v = w;
	*cap = c;
	return true;
}

/* the index key has in ids, or -1 after it was made n, the next entry */
static int32_t known(struct pdict *d, struct hmap *ids, const void *key, size_t klen, size_t n)
{
	uintptr_t id = (uintptr_t)hmap_get(ids, key, klen);

	if (id)
		return (int32_t)(id - 1);
	if (hmap_put(ids, key, klen, (void *)(uintptr_t)(n + 1)))
		d->failed = true;
	return -1;
}

int32_t pdict_str(struct pdict *d, const char *s)
{
	size_t len = strlen(s) + 1; /* with the NUL: "" is a key too */
	int32_t i;
	char *copy;

	if (d->failed)
		return 0;
	if ((i = known(d, &d->str_ids, s, len, d->nstr)) >= 0)
		return i;
	if (d->failed || !room(d, (void **)&d->str, &d->capstr, d->nstr, sizeof(*d->str)) ||
	    !(copy = malloc(len * 3))) {
		d->failed = true;
		return 0;
	}
	out_utf8_clean(copy, s);
	d->str[d->nstr] = copy;
	return (int32_t)d->nstr++;
}

/* the function of l: kind, first line, name and file are its key */
static int32_t func_of(struct pdict *d, const struct out_loc *l)
{
	size_t nl = strlen(l->name), fl = strlen(l->file), klen = 1 + sizeof(int) + nl + 1 + fl;
	char *key = malloc(klen);
	int32_t i;

	if (!key) {
		d->failed = true;
		return 0;
	}
	key[0] = (char)('a' + l->kind);
	memcpy(key + 1, &l->firstline, sizeof(int));
	memcpy(key + 1 + sizeof(int), l->name, nl + 1);
	memcpy(key + 1 + sizeof(int) + nl + 1, l->file, fl);
	i = known(d, &d->func_ids, key, klen, d->nfunc);
	free(key);
	if (i >= 0 || d->failed ||
	    !room(d, (void **)&d->func, &d->capfunc, d->nfunc, sizeof(*d->func)))
		return i >= 0 ? i : 0;
	d->func[d->nfunc] = (struct pdict_func){ .start_line = l->firstline };
	i = (int32_t)d->nfunc++;
	d->func[i].name = pdict_str(d, l->name);
	d->func[i].file = pdict_str(d, l->file);
	return d->failed ? 0 : i;
}

int32_t pdict_map(struct pdict *d, const struct binary *bin)
{
	int32_t i;

	if (d->failed)
		return 0;
	if ((i = known(d, &d->map_ids, &bin, sizeof(bin), d->nmap)) >= 0)
		return i;
	if (d->failed || !room(d, (void **)&d->map, &d->capmap, d->nmap, sizeof(*d->map)))
		return 0;
	d->map[d->nmap] = (struct pdict_map){ .bin = bin };
	i = (int32_t)d->nmap++;
	d->map[i].file = pdict_str(d, bin->path);
	d->map[i].build_id = pdict_str(d, bin->build_id);
	return d->failed ? 0 : i;
}

int32_t pdict_loc(struct pdict *d, const struct out_loc *l)
{
	struct pdict_loc k;
	int32_t i;

	if (d->failed)
		return 0;
	memset(&k, 0, sizeof(k)); /* the padding too: the key is its bytes */
	k.func = func_of(d, l);
	k.map = l->bin ? pdict_map(d, l->bin) : 0;
	k.line = l->line;
	k.addr = l->addr;
	k.kind = l->kind;
	if (d->failed)
		return 0;
	if ((i = known(d, &d->loc_ids, &k, sizeof(k), d->nloc)) >= 0)
		return i;
	if (d->failed || !room(d, (void **)&d->loc, &d->caploc, d->nloc, sizeof(*d->loc)))
		return 0;
	d->loc[d->nloc] = k;
	return (int32_t)d->nloc++;
}

int pdict_init(struct pdict *d)
{
	memset(d, 0, sizeof(*d));
	/* the zero entries: "", and a function, mapping and location of nothing */
	if (pdict_str(d, "") != 0 ||
	    !room(d, (void **)&d->func, &d->capfunc, 0, sizeof(*d->func)) ||
	    !room(d, (void **)&d->map, &d->capmap, 0, sizeof(*d->map)) ||
	    !room(d, (void **)&d->loc, &d->caploc, 0, sizeof(*d->loc))) {
		pdict_free(d);
		return -1;
	}
	memset(&d->func[0], 0, sizeof(d->func[0]));
	memset(&d->map[0], 0, sizeof(d->map[0]));
	memset(&d->loc[0], 0, sizeof(d->loc[0]));
	d->nfunc = d->nmap = d->nloc = 1;
	return 0;
}

void pdict_free(struct pdict *d)
{
	for (size_t i = 0; i < d->nstr; i++)
		free(d->str[i]);
	free(d->str);
	free(d->func);
	free(d->map);
	free(d->loc);
	hmap_free(&d->str_ids, NULL);
	hmap_free(&d->func_ids, NULL);
	hmap_free(&d->map_ids, NULL);
	hmap_free(&d->loc_ids, NULL);
	memset(d, 0, sizeof(*d));
}
