/* timeline.c - the samples and markers of -f timeline, bounded (timeline.h). */
#include "timeline.h"

#include <stdlib.h>
#include <string.h>

int timeline_init(struct timeline *t, size_t cap, uint64_t keep_ns)
{
	memset(t, 0, sizeof(*t));
	t->cap = cap ? cap : TIMELINE_CAP_DEFAULT;
	t->mcap = TIMELINE_MARKERS_CAP;
	t->keep_ns = keep_ns;
	t->s = malloc(t->cap * sizeof(*t->s));
	t->m = malloc(t->mcap * sizeof(*t->m));
	if (!t->s || !t->m) {
		timeline_free(t);
		return -1;
	}
	return 0;
}

void timeline_free(struct timeline *t)
{
	for (size_t i = 0; t->m && i < t->mn; i++)
		free(t->m[(t->mhead + i) % t->mcap].name);
	free(t->s);
	free(t->m);
	memset(t, 0, sizeof(*t));
}

static void saw(struct timeline *t, uint64_t end)
{
	if (end > t->last_ns)
		t->last_ns = end;
}

void timeline_add_sample(struct timeline *t, const struct tl_sample *s)
{
	if (!t->s)
		return;
	if (t->n < t->cap) {
		t->s[(t->head + t->n++) % t->cap] = *s;
	} else {
		t->s[t->head] = *s;
		t->head = (t->head + 1) % t->cap;
		t->overwritten++;
	}
	saw(t, s->ts + s->dur);
}

void timeline_add_marker(struct timeline *t, const struct tl_marker *m)
{
	if (!t->m) {
		free(m->name);
		return;
	}
	if (t->mn < t->mcap) {
		t->m[(t->mhead + t->mn++) % t->mcap] = *m;
	} else {
		free(t->m[t->mhead].name);
		t->m[t->mhead] = *m;
		t->mhead = (t->mhead + 1) % t->mcap;
		t->m_overwritten++;
	}
	saw(t, m->ts + m->dur);
}

static uint64_t window_start(const struct timeline *t)
{
	return t->keep_ns && t->last_ns > t->keep_ns ? t->last_ns - t->keep_ns : 0;
}

static int by_thread_time(const void *a, const void *b)
{
	const struct tl_sample *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return x->ts < y->ts ? -1 : x->ts > y->ts;
}

struct tl_sample *timeline_samples(const struct timeline *t, size_t *n, uint64_t *cut)
{
	uint64_t from = window_start(t);
	struct tl_sample *v;
	size_t k = 0;

	*n = 0;
	*cut = 0;
	if (!t->n || !(v = malloc(t->n * sizeof(*v))))
		return NULL;
	for (size_t i = 0; i < t->n; i++) {
		const struct tl_sample *s = &t->s[(t->head + i) % t->cap];

		if (s->ts + s->dur < from)
			(*cut)++;
		else
			v[k++] = *s;
	}
	qsort(v, k, sizeof(*v), by_thread_time);
	*n = k;
	return v;
}

static int by_marker(const void *a, const void *b)
{
	const struct tl_marker *x = *(const struct tl_marker *const *)a;
	const struct tl_marker *y = *(const struct tl_marker *const *)b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->dur > y->dur ? -1 : x->dur < y->dur; /* the outer one first */
}

const struct tl_marker **timeline_markers(const struct timeline *t, size_t *n)
{
	uint64_t from = window_start(t);
	const struct tl_marker **v;
	size_t k = 0;

	*n = 0;
	if (!t->mn || !(v = malloc(t->mn * sizeof(*v))))
		return NULL;
	for (size_t i = 0; i < t->mn; i++) {
		const struct tl_marker *m = &t->m[(t->mhead + i) % t->mcap];

		if (m->ts + m->dur >= from)
			v[k++] = m;
	}
	qsort(v, k, sizeof(*v), by_marker);
	*n = k;
	return v;
}
