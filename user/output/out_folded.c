/* out_folded.c - folded stacks, the input of flamegraph.pl, speedscope, and
 * most flame graph tools: one line per distinct stack, root first, frames
 * joined by ';', a space, the sample count (in --mode wall and offcpu, the
 * time in microseconds).  Stacks that print the same (for
 * instance with --no-lines) are merged; lines are sorted so equal profiles give
 * equal files. */
#include "out_common.h"

#include <stdlib.h>
#include <string.h>

struct folded_line {
	const char *text;
	uint64_t count;
};

static int cmp_line(const void *a, const void *b)
{
	return strcmp(((const struct folded_line *)a)->text, ((const struct folded_line *)b)->text);
}

static void render(struct sbuf *b, const struct out_ctx *c, const struct psample *s)
{
	sb_reset(b);
	out_root_frames(b, c, s);
	for (uint32_t i = s->stack->nframes; i-- > 0;) {
		out_frame_label(b, &s->stack->frames[i], c->lines);
		if (i)
			sb_putc(b, ';');
	}
	/* kernel frames at the leaf end, outermost first, marked as flame graph
	 * tools expect */
	for (uint32_t i = s->kstack ? s->kstack->n : 0; i-- > 0;)
		sb_printf(b, ";%s_[k]", s->kstack->names[i]);
}

int out_folded(FILE *f, const struct out_ctx *c)
{
	size_t n, nlines = 0;
	struct psample **v = out_samples(c, &n);
	struct hmap merged = { 0 };
	struct folded_line *lines = NULL;
	struct sbuf b = { 0 };
	int rc = -1;

	if (!v)
		return -1;
	for (size_t i = 0; i < n; i++) {
		uint64_t *cnt;

		render(&b, c, v[i]);
		if (!sb_ok(&b))
			goto out;
		cnt = hmap_get(&merged, b.s, b.len);
		if (!cnt) {
			cnt = calloc(1, sizeof(*cnt));
			if (!cnt || hmap_put(&merged, b.s, b.len, cnt)) {
				free(cnt);
				goto out;
			}
		}
		*cnt += v[i]->count;
	}
	lines = malloc((merged.len + 1) * sizeof(*lines));
	if (!lines)
		goto out;
	hmap_for_each(&merged, s) {
		/* keys are copies without the terminating NUL: make one */
		char *text = malloc(s->klen + 1);

		if (!text)
			goto out;
		memcpy(text, s->key, s->klen);
		text[s->klen] = 0;
		lines[nlines].text = text;
		lines[nlines++].count = *(uint64_t *)s->val;
	}
	qsort(lines, nlines, sizeof(*lines), cmp_line);
	for (size_t i = 0; i < nlines; i++) {
		/* off-CPU modes count nanoseconds: lines are weighted in
		 * microseconds, rounded; one under half a microsecond goes.
		 * Samples and bytes are weighted as they are. */
		uint64_t w = !mode_is_time(c->mode) ? lines[i].count : (lines[i].count + 500) / 1000;

		if (w)
			fprintf(f, "%s %llu\n", lines[i].text, (unsigned long long)w);
	}
	rc = ferror(f) ? -1 : 0;
out:
	for (size_t i = 0; i < nlines; i++)
		free((char *)lines[i].text);
	free(lines);
	hmap_free(&merged, free);
	sb_free(&b);
	free(v);
	return rc;
}
