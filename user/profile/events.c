/* events.c - see events.h. */
#include "events.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void free_proc(void *v)
{
	struct proc_events *pe = v;

	for (size_t i = 0; pe && i < pe->nimports; i++)
		free(pe->imports[i].name);
	if (pe)
		free(pe->imports);
	free(pe);
}

void events_free(struct events *e)
{
	hmap_free(&e->procs, free_proc);
}

static struct proc_events *proc_of(struct events *e, int pid)
{
	struct proc_events *pe = hmap_get(&e->procs, &pid, sizeof(pid));

	if (pe)
		return pe;
	if (!(pe = calloc(1, sizeof(*pe))))
		return NULL;
	if (hmap_put(&e->procs, &pid, sizeof(pid), pe)) {
		free(pe);
		return NULL;
	}
	return pe;
}

/* the bucket of ns: 8 per power of two, exact below 8 ns */
static unsigned bucket(uint64_t ns)
{
	unsigned lg;

	if (ns < EVENTS_SUB)
		return (unsigned)ns;
	lg = 63u - (unsigned)__builtin_clzll(ns);       /* 2^lg <= ns */
	/* the 3 bits below the top one pick the sub-bucket */
	return lg * EVENTS_SUB + (unsigned)((ns >> (lg - 3)) & (EVENTS_SUB - 1));
}

/* the bounds [lo, hi) of bucket b */
static void bucket_bounds(unsigned b, double *lo, double *hi)
{
	unsigned lg = b / EVENTS_SUB, sub = b % EVENTS_SUB;

	if (b < EVENTS_SUB) {
		*lo = b;
		*hi = b + 1;
		return;
	}
	*lo = ldexp(1.0 + sub / (double)EVENTS_SUB, (int)lg);
	*hi = ldexp(1.0 + (sub + 1) / (double)EVENTS_SUB, (int)lg);
}

int events_add_gc(struct events *e, int pid, int gen, uint64_t ns)
{
	struct proc_events *pe = proc_of(e, pid);
	struct gc_generation_stats *g;

	if (!pe)
		return -1;
	if (gen < 0 || gen >= EVENTS_GENERATIONS)
		gen = EVENTS_GENERATIONS - 1;
	g = &pe->gc[gen];
	g->count++;
	g->total_ns += ns;
	if (ns > g->max_ns)
		g->max_ns = ns;
	g->hist[bucket(ns)]++;
	return 0;
}

int events_add_import(struct events *e, int pid, const char *name, uint64_t ns, uint32_t depth)
{
	struct proc_events *pe = proc_of(e, pid);
	struct import_time *t;

	if (!pe)
		return -1;
	if (pe->nimports >= EVENTS_MAX_IMPORTS) {
		pe->imports_dropped++;
		return 0;
	}
	if (pe->nimports == pe->capimports) {
		size_t cap = pe->capimports ? pe->capimports * 2 : 64;

		if (!(t = realloc(pe->imports, cap * sizeof(*t))))
			return -1;
		pe->imports = t;
		pe->capimports = cap;
	}
	t = &pe->imports[pe->nimports];
	if (!(t->name = strdup(name[0] ? name : "?")))
		return -1;
	t->ns = ns;
	t->depth = depth;
	pe->nimports++;
	return 0;
}

const struct proc_events *events_of(const struct events *e, int pid)
{
	return hmap_get(&e->procs, &pid, sizeof(pid));
}

uint64_t events_gc_quantile(const struct gc_generation_stats *g, double q)
{
	uint64_t want, seen = 0;
	double lo, hi, mid;

	if (!g->count)
		return 0;
	want = (uint64_t)ceil(q * (double)g->count);
	if (want < 1)
		want = 1;
	for (unsigned b = 0; b < EVENTS_BUCKETS; b++) {
		seen += g->hist[b];
		if (seen < want)
			continue;
		bucket_bounds(b, &lo, &hi);
		mid = b < EVENTS_SUB ? lo : sqrt(lo * hi);
		return mid > (double)g->max_ns ? g->max_ns : (uint64_t)mid;
	}
	return g->max_ns;
}

static int slower_first(const void *a, const void *b)
{
	const struct import_time *x = a, *y = b;

	return x->ns < y->ns ? 1 : x->ns > y->ns ? -1 : strcmp(x->name, y->name);
}

struct import_time *events_imports_by_time(const struct proc_events *pe)
{
	struct import_time *v;

	if (!pe->nimports || !(v = malloc(pe->nimports * sizeof(*v))))
		return NULL;
	memcpy(v, pe->imports, pe->nimports * sizeof(*v));
	qsort(v, pe->nimports, sizeof(*v), slower_first);
	return v;
}
