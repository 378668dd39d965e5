/* out_report.c - the hotspot report: a header (samples, duration, rate,
 * processes, losses) and the top functions by own and by total share, with the
 * columns of `py-spy top`, counted by fncount.c. */
#include "out_common.h"
#include "fncount.h"

#include <stdlib.h>
#include <string.h>

static int by_own(const void *a, const void *b)
{
	const struct fn_count *x = *(struct fn_count *const *)a, *y = *(struct fn_count *const *)b;

	if (x->own != y->own)
		return x->own > y->own ? -1 : 1;
	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	return strcmp(x->fn->name, y->fn->name);
}

static int by_total(const void *a, const void *b)
{
	const struct fn_count *x = *(struct fn_count *const *)a, *y = *(struct fn_count *const *)b;

	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	return by_own(a, b);
}

/* seconds per count (a sample's period, or a nanosecond), or MiB per
 * count (a byte) */
static double per_count(const struct out_ctx *c)
{
	return mode_per_count(c->mode, c->freq);
}

/* the unit per_count gives, after a number */
static const char *count_unit(const struct out_ctx *c)
{
	return mode_is_bytes(c->mode) ? "M" : "s";
}

static void print_table(FILE *f, const struct out_ctx *c, struct fn_count **rows, size_t n,
			uint64_t shown, const char *title)
{
	double total = shown ? (double)shown : 1.0;
	double per = per_count(c);
	/* on- and off-CPU side by side: a mode that samples the CPU and
	 * counts off-CPU time */
	bool split = mode_is_time(c->mode) && mode_desc(c->mode)->periodic;

	fprintf(f, "\n%s\n", title);
	if (split)
		fprintf(f, "  %%Own   %%Total  OwnTime (on-CPU  off-CPU)  TotalTime (on-CPU  "
			"off-CPU)  Function (filename:line)\n");
	else
		fprintf(f, "  %%Own   %%Total  %s  Function (filename:line)\n",
			mode_is_bytes(c->mode) ? "  OwnMiB TotalMiB" : "OwnTime  TotalTime");
	for (size_t i = 0; i < n && i < c->top; i++) {
		const struct fn_count *r = rows[i];
		const struct func *fn = r->fn;

		if (split)
			fprintf(f, "%6.2f%% %6.2f%% %7.2fs (%6.2fs %7.2fs) %9.2fs (%6.2fs %7.2fs)  %s",
				100.0 * r->own / total, 100.0 * r->total / total, r->own * per,
				(r->own - r->own_off) * per, r->own_off * per, r->total * per,
				(r->total - r->total_off) * per, r->total_off * per, fn->name);
		else
			fprintf(f, "%6.2f%% %6.2f%% %7.2f%s %9.2f%s  %s", 100.0 * r->own / total,
				100.0 * r->total / total, r->own * per, count_unit(c), r->total * per,
				count_unit(c), fn->name);
		if (fn->kind == FN_PYTHON)
			fprintf(f, " (%s:%d)\n", fn->file, fn->firstlineno);
		else if (fn->kind == FN_MARK)
			fputc('\n', f);
		else
			fprintf(f, " (%s)\n", fn->file);
	}
}

static int by_samples(const void *a, const void *b)
{
	const struct pproc *x = *(const struct pproc *const *)a, *y = *(const struct pproc *const *)b;

	if (x->samples != y->samples)
		return x->samples > y->samples ? -1 : 1;
	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

/* --containers: samples per container (the host's processes as "host"),
 * most first, each with its processes; procs is sorted by samples */
static void print_containers(FILE *f, const struct out_ctx *c, const struct pproc **procs,
			     size_t n, double per, const char *unit)
{
	bool *done = calloc(n + 1, sizeof(*done));
	uint64_t all = 0;

	if (!done)
		return;
	for (size_t i = 0; i < n; i++)
		all += procs[i]->samples;
	fprintf(f, "Containers:\n");
	for (;;) {
		const struct pproc *best = NULL;
		uint64_t most = 0, sum;
		size_t nprocs;

		/* the container with the most samples not printed yet */
		for (size_t i = 0; i < n; i++) {
			if (done[i])
				continue;
			sum = 0;
			for (size_t j = i; j < n; j++)
				if (!done[j] && !strcmp(procs[j]->ctr.id, procs[i]->ctr.id))
					sum += procs[j]->samples;
			if (!best || sum > most) {
				best = procs[i];
				most = sum;
			}
		}
		if (!best)
			break;
		nprocs = 0;
		for (size_t i = 0; i < n; i++)
			nprocs += !done[i] && !strcmp(procs[i]->ctr.id, best->ctr.id);
		if (best->ctr.id[0])
			fprintf(f, "  %s %.12s%s%s", best->ctr.engine, best->ctr.id,
				best->ctr.pod[0] ? " pod " : "", best->ctr.pod);
		else
			fprintf(f, "  host");
		fprintf(f, ": %.*f %s (%.1f%%), %zu processes:", mode_total_decimals(c->mode),
			most * per, unit,
			all ? 100.0 * most / all : 0.0, nprocs);
		for (size_t i = 0; i < n; i++)
			if (!done[i] && !strcmp(procs[i]->ctr.id, best->ctr.id)) {
				done[i] = true;
				if (procs[i]->ns_pid && procs[i]->ns_pid != procs[i]->pid)
					fprintf(f, " %d (%d in it)", procs[i]->pid, procs[i]->ns_pid);
				else
					fprintf(f, " %d", procs[i]->pid);
			}
		fputc('\n', f);
	}
	free(done);
}

/* Processes found but not profiled (a CPython build it cannot read): which,
 * why, and what their samples weighed, beside the shown ones */
static void print_refused(FILE *f, const struct out_ctx *c, uint64_t shown, double per,
			  const char *unit)
{
	const struct hmap *h = &c->prof->refused;
	uint64_t sum = 0;
	size_t n = 0;

	hmap_for_each(h, e) {
		const struct prefused *x = e->val;

		if (!c->pid || x->pid == c->pid) {
			sum += x->weight;
			n++;
		}
	}
	if (!n)
		return;
	fprintf(f, "Not profiled: %zu processes, %.*f %s (%.1f%% beside those profiled):\n", n,
		mode_total_decimals(c->mode), sum * per, unit,
		shown + sum ? 100.0 * sum / (shown + sum) : 0.0);
	hmap_for_each(h, e) {
		const struct prefused *x = e->val;

		if (!c->pid || x->pid == c->pid)
			fprintf(f, "  %d %s: %.*f %s: %s\n", x->pid, x->comm[0] ? x->comm : "?",
				mode_total_decimals(c->mode), x->weight * per, unit, x->why);
	}
}

/* shown: the samples (or ns) the report counts (c->pid's alone when set),
 * off: of those, off the CPU; native_only: samples of threads that ran no
 * Python frame, in the profile with their native and kernel stacks; heap:
 * the samples' heap values summed (leaks) */
#define REPORT_THREADS 8 /* thread lines under a process */

/* under process proc's line: its busiest threads by name, then how many
 * others and their share (threads t[0..nt), by profile_thread_totals) */
static void print_threads(FILE *f, const struct out_ctx *c, const struct pproc *proc,
			  const struct pthread_total *t, size_t nt, double per, const char *unit)
{
	uint64_t rest = 0;
	size_t shown = 0, others = 0;

	for (size_t i = 0; i < nt; i++) {
		if (t[i].pid != (uint32_t)proc->pid)
			continue;
		if (shown == REPORT_THREADS) {
			rest += t[i].weight;
			others++;
			continue;
		}
		fprintf(f, "    thread %u \"", t[i].tid);
		/* a name set by the program: one line whatever it holds */
		for (const char *ch = profile_thread_name(c->prof, t[i].tid); *ch; ch++)
			fputc((unsigned char)*ch < 0x20 || *ch == 0x7f ? '?' : *ch, f);
		fprintf(f, "\": %.*f %s (%.1f%%)\n", mode_total_decimals(c->mode), t[i].weight * per,
			unit, proc->samples ? 100.0 * t[i].weight / proc->samples : 0);
		shown++;
	}
	if (others)
		fprintf(f, "    %zu other thread%s: %.*f %s (%.1f%%)\n", others, others == 1 ? "" : "s",
			mode_total_decimals(c->mode), rest * per, unit,
			proc->samples ? 100.0 * rest / proc->samples : 0);
}

static void print_header(FILE *f, const struct out_ctx *c, uint64_t shown, uint64_t off,
			 uint64_t native_only, const uint64_t heap[PROFILE_HEAP_N],
			 const struct pthread_total *threads, size_t nthreads)
{
	const struct profile *p = c->prof;
	const uint64_t *st = c->stats;
	const struct mode_desc *md = mode_desc(c->mode);
	uint64_t lost = st[STAT_MAP_FULL] + st[STAT_RINGBUF_FULL] + p->unattributed;
	const char *unit = mode_total_unit(c->mode);
	/* totals: samples counted as they are, the others scaled */
	double per = md->quantity == MQ_SAMPLES ? 1 : per_count(c);

	/* the headline: what the mode counted, in its row's words */
	switch (md->report) {
	case MR_SAMPLES:
		fprintf(f, "pyperf-bpf: %llu samples in %.2f s at %d Hz per CPU (%d CPUs): "
			"%.1f samples/s\n", (unsigned long long)shown, c->duration_s, c->freq,
			c->ncpus, c->duration_s > 0 ? shown / c->duration_s : 0.0);
		break;
	case MR_BYTES:
		fprintf(f, "pyperf-bpf: %s mode: %.2f MiB %s, in %.2f s (%llu %s, %llu %s)\n",
			md->name, shown * per, md->report_amount, c->duration_s,
			(unsigned long long)st[md->events_stat], md->events,
			(unsigned long long)st[md->walked_stat], md->walked);
		break;
	case MR_LIVE:
		fprintf(f, "pyperf-bpf: %s: %.2f MiB in about %llu allocations still live at "
			"the end (at least %.1f s old; estimated from sampled bytes), of %.2f MiB "
			"allocated in %.2f s (%llu allocator calls, %llu sampled; %llu sampled ones "
			"not tracked, the map was full)\n", md->name, shown * per,
			(unsigned long long)heap[PROFILE_HEAP_INUSE_OBJECTS], c->min_age,
			heap[PROFILE_HEAP_ALLOC_BYTES] * per, c->duration_s,
			(unsigned long long)st[STAT_ALLOCS], (unsigned long long)st[STAT_ALLOC_WALKS],
			(unsigned long long)st[STAT_LIVE_FULL]);
		break;
	case MR_THREAD_TIME:
	default:
		fprintf(f, "pyperf-bpf: %s mode: %.2f s of thread time in %.2f s (on-CPU %.2f s, "
			"sampled at %d Hz per CPU; off-CPU %.2f s, from %llu of %llu blocks "
			"walked)\n", md->name, shown * 1e-9,
			c->duration_s, (shown - off) * 1e-9, c->freq, off * 1e-9,
			(unsigned long long)st[STAT_OFFCPU_WALKS],
			(unsigned long long)st[STAT_SWITCHES]);
	}
	if (st[STAT_OFFCPU_LOST])
		fprintf(f, "Off-CPU blocks lost: %llu walked blocks whose time was not counted "
			"(the table of threads was full)\n", (unsigned long long)st[STAT_OFFCPU_LOST]);
	size_t n = 0;
	const struct pproc **procs = malloc((p->procs.len + 1) * sizeof(*procs));

	fprintf(f, "Processes seen: %zu\n", profile_nprocs_seen(p));
	hmap_for_each(&p->procs, s)
		if (procs && ((const struct pproc *)s->val)->samples &&
		    (!c->pid || ((const struct pproc *)s->val)->pid == c->pid))
			procs[n++] = s->val;
	if (procs)
		qsort(procs, n, sizeof(*procs), by_samples);
	for (size_t i = 0; i < n; i++) {
		char where[128] = "";

		/* a container's process: where, and its own pid there */
		if (procs[i]->ctr.id[0])
			snprintf(where, sizeof(where), "; %s %.12s, pid %d in it",
				 procs[i]->ctr.engine, procs[i]->ctr.id, procs[i]->ns_pid);
		fprintf(f, "  %d %s (Python %d.%d%s): %.*f %s\n", procs[i]->pid,
			profile_proc_label(procs[i]), procs[i]->py_major, procs[i]->py_minor,
			where, mode_total_decimals(c->mode), procs[i]->samples * per, unit);
		print_threads(f, c, procs[i], threads, nthreads, per, unit);
	}
	if (c->containers)
		print_containers(f, c, procs, n, per, unit);
	free(procs);
	print_refused(f, c, shown, per, unit);
	fprintf(f, "Lost samples: %llu (counts map full %llu, ring buffer full %llu, "
		"unattributed %llu); truncated stacks %llu; unreadable frames %llu; "
		"samples in threads without Python frames %llu (%.*f%s of them in the profile "
		"with native stacks)\n",
		(unsigned long long)lost, (unsigned long long)st[STAT_MAP_FULL],
		(unsigned long long)st[STAT_RINGBUF_FULL], (unsigned long long)p->unattributed,
		(unsigned long long)st[STAT_TRUNCATED], (unsigned long long)st[STAT_BAD_READ],
		(unsigned long long)(st[STAT_NO_TSTATE] + st[STAT_NO_FRAMES]),
		mode_total_decimals(c->mode), native_only * per,
		mode_desc(c->mode)->quantity == MQ_SAMPLES ? "" : mode_is_bytes(c->mode) ? " MiB"
											 : " s");
	if (st[STAT_NO_GIL])
		fprintf(f, "--gil: %llu samples of threads not holding the GIL left out\n",
			(unsigned long long)st[STAT_NO_GIL]);
	if (st[STAT_NATIVE_INCOMPLETE] || st[STAT_NATIVE_TRUNCATED])
		fprintf(f, "Native stacks cut short: %llu incomplete (code the unwinder could not "
			"follow; %llu of them pending: taken before the binary's unwind table "
			"was built), %llu deeper than %d frames\n",
			(unsigned long long)st[STAT_NATIVE_INCOMPLETE],
			(unsigned long long)st[STAT_NATIVE_PENDING],
			(unsigned long long)st[STAT_NATIVE_TRUNCATED], PYPERF_MAX_NATIVE);
	if (st[STAT_NATIVE_SCANNED])
		fprintf(f, "Native stacks that went on by a stack scan: %llu (code with neither CFI "
			"nor a frame pointer, such as JIT kernels; the caller found is marked "
			"[stack scan])\n", (unsigned long long)st[STAT_NATIVE_SCANNED]);
}

static int by_count(const void *a, const void *b)
{
	const struct psample *x = *(struct psample *const *)a, *y = *(struct psample *const *)b;

	return x->count != y->count ? (x->count > y->count ? -1 : 1) : 0;
}

/* leaks: the stacks holding the most live bytes, leaf first */
static void print_leak_stacks(FILE *f, const struct out_ctx *c, struct psample **v, size_t n)
{
	qsort(v, n, sizeof(*v), by_count);
	fprintf(f, "\nTop stacks by bytes still live\n");
	for (size_t i = 0; i < n && i < c->top && v[i]->count; i++) {
		const struct pstack *st = v[i]->stack;

		fprintf(f, "\n%.2f MiB in about %llu allocations still live, the oldest %.1f s old "
			"(%.2f MiB in %llu allocated here)\n", v[i]->count / 1048576.0,
			(unsigned long long)v[i]->heap[PROFILE_HEAP_INUSE_OBJECTS],
			v[i]->heap[PROFILE_HEAP_OLDEST_MS] / 1000.0,
			v[i]->heap[PROFILE_HEAP_ALLOC_BYTES] / 1048576.0,
			(unsigned long long)v[i]->heap[PROFILE_HEAP_ALLOC_OBJECTS]);
		for (uint32_t j = 0; j < st->nframes && j < 24; j++) {
			const struct func *fn = st->frames[j].fn;

			if (fn->kind == FN_PYTHON)
				fprintf(f, "    %s (%s:%d)\n", fn->name, fn->file,
					c->lines ? func_line(fn, st->frames[j].instr) : fn->firstlineno);
			else if (fn->kind == FN_MARK)
				fprintf(f, "    %s\n", fn->name);
			else
				fprintf(f, "    %s (%s)\n", fn->name, fn->file);
		}
		if (st->nframes > 24)
			fprintf(f, "    ... %u frames more\n", st->nframes - 24);
	}
}

static int by_pid(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

/* the processes --events told of (c->pid's alone if set), by pid; NULL
 * when none */
static int *event_pids(const struct out_ctx *c, size_t *n)
{
	const struct hmap *m = &c->prof->events.procs;
	int *pids = m->len ? calloc(m->len, sizeof(*pids)) : NULL;

	*n = 0;
	if (!pids)
		return NULL;
	hmap_for_each(m, e) {
		int pid = *(const int *)e->key;

		if (!c->pid || c->pid == pid)
			pids[(*n)++] = pid;
	}
	qsort(pids, *n, sizeof(*pids), by_pid);
	return pids;
}

static void print_proc_line(FILE *f, const struct out_ctx *c, int pid)
{
	const struct pproc *pp = hmap_get(&c->prof->procs, &pid, sizeof(pid));

	fprintf(f, "  pid %d (%s)\n", pid, profile_proc_comm(pp));
}

/* --events: each process's collections by generation (count, total, p50,
 * p99, max) and its slowest imports, as the interpreter's markers timed
 * them */
static void print_events(FILE *f, const struct out_ctx *c)
{
	size_t n;
	int *pids = event_pids(c, &n);
	bool any = false;

	for (size_t i = 0; i < n; i++) {
		const struct proc_events *pe = events_of(&c->prof->events, pids[i]);
		bool has = false;

		for (int g = 0; g < EVENTS_GENERATIONS; g++)
			has |= pe->gc[g].count > 0;
		if (!has)
			continue;
		if (!any)
			fprintf(f, "\nGC pauses (gc__start/gc__done markers)\n");
		any = true;
		print_proc_line(f, c, pids[i]);
		fprintf(f, "  Gen   Count      Total        p50        p99        Max\n");
		for (int g = 0; g < EVENTS_GENERATIONS; g++) {
			const struct gc_generation_stats *s = &pe->gc[g];

			if (!s->count)
				continue;
			fprintf(f, "  %3d %7llu %8.1fms %8.2fms %8.2fms %8.2fms\n", g,
				(unsigned long long)s->count, s->total_ns / 1e6,
				events_gc_quantile(s, 0.5) / 1e6, events_gc_quantile(s, 0.99) / 1e6,
				s->max_ns / 1e6);
		}
	}
	any = false;
	for (size_t i = 0; i < n; i++) {
		const struct proc_events *pe = events_of(&c->prof->events, pids[i]);
		struct import_time *v = events_imports_by_time(pe);
		size_t rows = pe->nimports < 10 ? pe->nimports : 10;

		if (!v)
			continue;
		if (!any)
			fprintf(f, "\nSlowest imports (import__find__load__start/done markers)\n");
		any = true;
		print_proc_line(f, c, pids[i]);
		fprintf(f, "       Time  Module\n");
		for (size_t k = 0; k < rows; k++)
			fprintf(f, "  %8.1fms  %s\n", v[k].ns / 1e6, v[k].name);
		if (pe->nimports > rows || pe->imports_dropped)
			fprintf(f, "  (%zu imports in all%s)\n", pe->nimports,
				pe->imports_dropped ? ", more not kept" : "");
		free(v);
	}
	free(pids);
}

int out_report(FILE *f, const struct out_ctx *c)
{
	size_t n, nrows = 0, nthreads = 0;
	struct psample **v = out_samples(c, &n);
	struct pthread_total *threads = NULL;
	struct fn_counts counts = { 0 };
	struct fn_count **list = NULL;
	uint64_t native_only = 0, shown = 0, off = 0, heap[PROFILE_HEAP_N] = { 0 };
	int rc = -1;

	if (!v)
		return -1;
	counts.skip_startup = !c->startup_frames;
	for (size_t i = 0; i < n; i++) {
		shown += v[i]->count;
		if (v[i]->stack->flags & STACK_OFFCPU)
			off += v[i]->count;
		if (v[i]->stack->flags & STACK_NO_PYTHON)
			native_only += v[i]->count;
		for (int k = 0; k < PROFILE_HEAP_N; k++)
			heap[k] += v[i]->heap[k];
		if (fn_counts_add(&counts, v[i]->stack, v[i]->count))
			goto out;
	}
	list = fn_counts_list(&counts, &nrows);
	if (!list)
		goto out;
	threads = profile_thread_totals(v, n, &nthreads);
	print_header(f, c, shown, off, native_only, heap, threads, nthreads);
	if (mode_desc(c->mode)->report == MR_LIVE) {
		print_leak_stacks(f, c, v, n);
		qsort(list, nrows, sizeof(*list), by_own);
		print_table(f, c, list, nrows, shown, "Functions by bytes still live");
		rc = ferror(f) ? -1 : 0;
		goto out;
	}
	qsort(list, nrows, sizeof(*list), by_own);
	print_table(f, c, list, nrows, shown, "Top functions by own time");
	qsort(list, nrows, sizeof(*list), by_total);
	print_table(f, c, list, nrows, shown, "Top functions by total time");
	print_events(f, c);
	rc = ferror(f) ? -1 : 0;
out:
	free(threads);
	free(list);
	fn_counts_free(&counts);
	free(v);
	return rc;
}
