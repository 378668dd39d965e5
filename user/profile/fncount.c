/* fncount.c - own and total samples per function (see fncount.h). */
#include "fncount.h"
#include "sbuf.h"

#include <stdlib.h>
#include <string.h>

/* functions are unique by content, not pointer */
static void fn_key(struct sbuf *k, const struct func *fn)
{
	sb_reset(k);
	sb_printf(k, "%s\n%s\n%d", fn->name, fn->file ? fn->file : "", fn->firstlineno);
}

static struct fn_count *count_for(struct fn_counts *c, struct sbuf *k, const struct func *fn)
{
	struct fn_count *r;

	fn_key(k, fn);
	if (!sb_ok(k))
		return NULL;
	r = hmap_get(&c->by_key, k->s, k->len);
	if (r)
		return r;
	r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->fn = fn;
	r->last = SIZE_MAX;
	if (hmap_put(&c->by_key, k->s, k->len, r)) {
		free(r);
		return NULL;
	}
	return r;
}

int fn_counts_add(struct fn_counts *c, const struct pstack *st, uint64_t count)
{
	struct sbuf k = { 0 };
	bool leaf = true, off = st->flags & STACK_OFFCPU;
	uint32_t upto = st->nframes;
	int rc = 0;

	if (c->skip_startup) { /* up to the outermost Python frame */
		uint32_t j = st->nframes;

		while (j > 0 && st->frames[j - 1].fn->kind != FN_PYTHON)
			j--;
		if (j > 0)
			upto = j;
	}
	for (uint32_t j = 0; j < st->nframes; j++) {
		const struct func *fn = st->frames[j].fn;
		struct fn_count *r;

		if (c->skip_marks && fn->kind == FN_MARK && !func_is_task(fn))
			continue;
		if (j >= upto && (fn->kind == FN_NATIVE || fn->kind == FN_EVAL))
			continue;
		if (!(r = count_for(c, &k, fn))) {
			rc = -1;
			break;
		}
		if (leaf) {
			r->own += count;
			if (off)
				r->own_off += count;
		}
		leaf = false;
		if (r->last != c->samples) { /* recursion counts once */
			r->total += count;
			if (off)
				r->total_off += count;
			r->last = c->samples;
		}
	}
	c->samples++;
	sb_free(&k);
	return rc;
}

const struct fn_count *fn_counts_get(const struct fn_counts *c, const struct func *fn)
{
	struct sbuf k = { 0 };
	const struct fn_count *r = NULL;

	fn_key(&k, fn);
	if (sb_ok(&k))
		r = hmap_get(&c->by_key, k.s, k.len);
	sb_free(&k);
	return r;
}

struct fn_count **fn_counts_list(const struct fn_counts *c, size_t *n)
{
	struct fn_count **v = malloc((c->by_key.len + 1) * sizeof(*v));

	*n = 0;
	if (!v)
		return NULL;
	hmap_for_each(&c->by_key, s)
		v[(*n)++] = s->val;
	return v;
}

void fn_counts_free(struct fn_counts *c)
{
	hmap_free(&c->by_key, free);
	memset(&c->by_key, 0, sizeof(c->by_key));
	c->samples = 0;
}
