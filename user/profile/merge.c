/* merge.c - see merge.h. */
#include "merge.h"

#include <stdbool.h>

#define MARK(ident, text) \
	const struct func ident = { .name = (char *)(text), .file = (char *)"", \
				      .firstlineno = 0, .kind = FN_MARK }

MARK(merge_mark_truncated, "[native truncated]");
MARK(merge_mark_incomplete, "[native incomplete]");
MARK(merge_mark_pending, "[native pending]");
MARK(merge_mark_unmerged, "[unmerged native]");

static uint32_t count_segments(const uint8_t *entry, uint32_t np)
{
	uint32_t s = 0;

	for (uint32_t i = 0; i < np; i++)
		if (entry[i] || i == np - 1)
			s++;
	return s;
}

static void put_native(struct pframe *out, uint32_t *k, const struct func *fn)
{
	out[*k].fn = (struct func *)fn;
	out[*k].instr = UINT32_MAX;
	(*k)++;
}

uint32_t merge_frames(const struct pframe *py, const uint8_t *entry, uint32_t np,
		      const struct func *const *nat, uint32_t nn, uint32_t flags,
		      struct pframe *out)
{
	uint32_t evals = 0, segs = count_segments(entry, np), k = 0, p = 0;
	bool partial = flags & (STACK_NATIVE_TRUNCATED | STACK_NATIVE_INCOMPLETE);

	for (uint32_t i = 0; i < nn; i++)
		evals += nat[i]->kind == FN_EVAL;
	if (evals == segs || (partial && evals < segs)) {
		for (uint32_t i = 0; i < nn; i++) {
			if (nat[i]->kind != FN_EVAL) {
				put_native(out, &k, nat[i]);
				continue;
			}
			/* the Python frames this eval call ran, leaf first */
			while (p < np) {
				bool last = entry[p];

				out[k++] = py[p++];
				if (last)
					break;
			}
		}
		if (p < np || partial)
			put_native(out, &k, flags & STACK_NATIVE_TRUNCATED ? &merge_mark_truncated
					    : flags & STACK_NATIVE_PENDING ? &merge_mark_pending
									    : &merge_mark_incomplete);
		while (p < np)
			out[k++] = py[p++];
		return k;
	}
	for (uint32_t i = 0; i < nn; i++)
		put_native(out, &k, nat[i]);
	put_native(out, &k, &merge_mark_unmerged);
	for (uint32_t i = 0; i < np; i++)
		out[k++] = py[i];
	return k;
}
