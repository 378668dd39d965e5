/* merge.c - see merge.h. */
#include "merge.h"

#include <stdbool.h>
#include <string.h>

#define MARK(ident, text) \
	const struct func ident = { .name = (char *)(text), .file = (char *)"", \
				      .firstlineno = 0, .kind = FN_MARK }

MARK(merge_mark_truncated, "[native truncated]");
MARK(merge_mark_incomplete, "[native incomplete]");
MARK(merge_mark_pending, "[native pending]");
MARK(merge_mark_unmerged, "[unmerged native]");
MARK(merge_mark_gil_wait, "[GIL wait]");
MARK(merge_mark_awaiting, "[awaiting]");
MARK(merge_mark_scanned, "[stack scan]");
MARK(merge_mark_in_gc, "<GC>");

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

/* CPython's GIL hand-over, ceval_gil.c: take_gil waits for the GIL,
 * drop_gil releases it and, when asked to, waits for the next holder to
 * take it; compilers add suffixes (take_gil.lto_priv.0) */
static bool is_gil_handover(const struct func *fn)
{
	static const char *const names[] = { "take_gil", "drop_gil" };

	if (fn->kind != FN_NATIVE || !fn->name)
		return false;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		size_t n = strlen(names[i]);

		if (!strncmp(fn->name, names[i], n) && (fn->name[n] == 0 || fn->name[n] == '.'))
			return true;
	}
	return false;
}

uint32_t merge_mark_gil(struct pframe *s, uint32_t n)
{
	uint32_t i = 0, at;

	while (i < n && !is_gil_handover(s[i].fn))
		i++;
	if (i == n)
		return n;
	/* above the Python frame that waited, else above the hand-over's caller */
	for (at = i + 1; at < n && s[at].fn->kind != FN_PYTHON; at++)
		;
	if (at == n)
		at = i + 1 < n ? i + 2 : n;
	if (at > n)
		at = n;
	memmove(s + at + 1, s + at, (n - at) * sizeof(*s));
	s[at].fn = (struct func *)&merge_mark_gil_wait;
	s[at].instr = UINT32_MAX;
	return n + 1;
}

uint32_t merge_mark_gc(struct pframe *s, uint32_t n)
{
	uint32_t at = 0;

	while (at < n && s[at].fn->kind != FN_PYTHON)
		at++;
	if (at == n)
		at = 0;
	memmove(s + at + 1, s + at, (n - at) * sizeof(*s));
	s[at].fn = (struct func *)&merge_mark_in_gc;
	s[at].instr = UINT32_MAX;
	return n + 1;
}
