/* out_timeline.c - samples and markers in time as a Chrome trace-event file
 * (-f timeline, -o run.trace.json, -o run.json.gz).
 *
 * Why this format rather than the Firefox Profiler's: more viewers read it
 * (Perfetto's UI and trace processor, chrome://tracing, the Firefox
 * Profiler's own importer, speedscope), and one of them, speedscope's
 * importer, can be run here by the tests.  The file is one JSON object:
 *   traceEvents  process and thread names ("M"), and the markers as
 *                complete events ("X") on their thread: GC pauses and
 *                imports (--events), off-CPU blocks (--mode wall|offcpu);
 *                events of one thread nest, as the format wants, because
 *                they are true intervals of one thread on one clock
 *   stackFrames  the stacks as a tree: id -> name, category, parent
 *   samples      one per counted sample: pid, tid, ts, sf (its leaf's id),
 *                weight (what it added: 1 sample, or ns in --mode wall);
 *                an off-CPU block's sample is at the block's start
 * Times are CLOCK_MONOTONIC in microseconds (time.monotonic() * 1e6 in the
 * profiled program), the format's unit.  Only the newest --timeline-minutes
 * are written; otherData says what was left out and why. */
#include "out_common.h"
#include "hmap.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* a frame of the tree: its parent, its category and its label */
struct node_key {
	uint32_t parent;
	char cat;
	char label[];
};

struct writer {
	struct sbuf b;
	struct hmap nodes;           /* struct node_key -> id (uintptr_t) */
	struct sbuf frames;          /* the "stackFrames" members so far */
	uint32_t next_id;
	struct sbuf label;
	char *key;
	size_t keycap;
};

static const char *category(char c)
{
	return c == 'p' ? "python" : c == 'n' ? "native" : c == 'k' ? "kernel" : "marker";
}

/* the id of (parent, cat, label), made if new; 0 when out of memory */
static uint32_t node(struct writer *w, uint32_t parent, char cat, const char *label)
{
	/* the key's bytes end with the label's NUL: no padding after it */
	size_t n = offsetof(struct node_key, label) + strlen(label) + 1;
	struct node_key *k;
	void *v;

	if (n > w->keycap) {
		char *p = realloc(w->key, n * 2);

		if (!p)
			return 0;
		w->key = p;
		w->keycap = n * 2;
	}
	k = (struct node_key *)w->key;
	memset(k, 0, offsetof(struct node_key, label));
	k->parent = parent;
	k->cat = cat;
	strcpy(k->label, label);
	v = hmap_get(&w->nodes, k, n);
	if (v)
		return (uint32_t)(uintptr_t)v;
	if (hmap_put(&w->nodes, k, n, (void *)(uintptr_t)++w->next_id))
		return 0;
	sb_printf(&w->frames, "%s\"%u\":{\"name\":", w->next_id == 1 ? "" : ",", w->next_id);
	out_json_str(&w->frames, label);
	sb_printf(&w->frames, ",\"category\":\"%s\"", category(cat));
	if (parent)
		sb_printf(&w->frames, ",\"parent\":\"%u\"", parent);
	sb_putc(&w->frames, '}');
	return w->next_id;
}

static uint32_t mark(struct writer *w, uint32_t parent, const char *label)
{
	return node(w, parent, 'm', label);
}

/* the leaf id of a named stack, root first: [incomplete]/[truncated]
 * marks, then its frames */
static uint32_t stack_node(struct writer *w, const struct out_ctx *c, const struct pstack *st)
{
	uint32_t id = 0;

	if (st->flags & STACK_TRUNCATED)
		id = mark(w, id, "[truncated]");
	if (st->flags & STACK_BAD_READ)
		id = mark(w, id, "[incomplete]");
	for (uint32_t j = st->nframes; j-- > 0;) {
		const struct pframe *f = &st->frames[j];
		char cat = f->fn->kind == FN_PYTHON ? 'p' : f->fn->kind == FN_MARK ? 'm' : 'n';

		sb_reset(&w->label);
		out_frame_label(&w->label, f, c->lines);
		id = node(w, id, cat, sb_str(&w->label));
		if (!id)
			return 0;
	}
	return id ? id : mark(w, 0, "[no frames]");
}

static void ts_us(struct sbuf *b, uint64_t ns)
{
	sb_printf(b, "%llu.%03llu", (unsigned long long)(ns / 1000), (unsigned long long)(ns % 1000));
}

static void metadata(struct writer *w, const struct out_ctx *c, const struct tl_sample *v,
		     size_t n, const struct tl_marker **m, size_t nm)
{
	struct hmap seen = { 0 };
	bool first = true;

	/* every process and thread that has a sample or a marker */
	for (size_t i = 0; i < n + nm; i++) {
		uint32_t pid = i < n ? v[i].pid : m[i - n]->pid, tid = i < n ? v[i].tid : m[i - n]->tid;
		uint64_t pk = (uint64_t)pid << 32, tk = pk | tid;

		if (!hmap_get(&seen, &pk, sizeof(pk))) {
			const struct pproc *pp = hmap_get(&c->prof->procs, &pid, sizeof(int));

			hmap_put(&seen, &pk, sizeof(pk), (void *)1);
			sb_printf(&w->b, "%s\n{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%u,"
				  "\"tid\":0,\"args\":{\"name\":", first ? "" : ",", pid);
			out_json_str(&w->b, pp ? profile_proc_label(pp) : "?");
			sb_puts(&w->b, "}}");
			first = false;
		}
		if (!hmap_get(&seen, &tk, sizeof(tk))) {
			hmap_put(&seen, &tk, sizeof(tk), (void *)1);
			sb_printf(&w->b, ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%u,"
				  "\"tid\":%u,\"args\":{\"name\":", pid, tid);
			out_json_str(&w->b, profile_thread_name(c->prof, tid));
			sb_puts(&w->b, "}}");
		}
	}
	if (first) /* readers want at least one event */
		sb_puts(&w->b, "\n{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":0,\"tid\":0,"
			"\"args\":{\"name\":\"no samples\"}}");
	hmap_free(&seen, NULL);
}

static void complete_event(struct writer *w, const char *cat, const char *name, uint32_t pid,
			   uint32_t tid, uint64_t ts, uint64_t dur)
{
	sb_printf(&w->b, ",\n{\"ph\":\"X\",\"cat\":\"%s\",\"name\":", cat);
	out_json_str(&w->b, name);
	sb_printf(&w->b, ",\"pid\":%u,\"tid\":%u,\"ts\":", pid, tid);
	ts_us(&w->b, ts);
	sb_puts(&w->b, ",\"dur\":");
	ts_us(&w->b, dur);
}

static void markers(struct writer *w, const struct out_ctx *c, const struct tl_sample *v,
		    size_t n, const struct tl_marker **m, size_t nm)
{
	char name[160];

	for (size_t i = 0; i < nm; i++) {
		if (m[i]->kind == TL_GC) {
			snprintf(name, sizeof(name), "GC (generation %d)", m[i]->arg);
			complete_event(w, "gc", name, m[i]->pid, m[i]->tid, m[i]->ts, m[i]->dur);
			sb_printf(&w->b, ",\"args\":{\"generation\":%d,\"collected\":%lld}}",
				  m[i]->arg, (long long)m[i]->collected);
		} else {
			snprintf(name, sizeof(name), "import %s", m[i]->name ? m[i]->name : "?");
			complete_event(w, "import", name, m[i]->pid, m[i]->tid, m[i]->ts, m[i]->dur);
			sb_puts(&w->b, ",\"args\":{\"module\":");
			out_json_str(&w->b, m[i]->name ? m[i]->name : "?");
			sb_printf(&w->b, ",\"depth\":%d}}", m[i]->arg);
		}
	}
	/* off-CPU blocks: with where the thread waited (its stack's leaf, and its
	 * innermost Python frame) */
	for (size_t i = 0; i < n; i++) {
		const struct stack_ref ref = { .pid = v[i].pid, .gen = v[i].gen, .hash = v[i].hash };
		const struct pstack *st;

		if (!(v[i].flags & STACK_OFFCPU) || !v[i].dur)
			continue;
		st = profile_find_stack(c->prof, &ref);
		complete_event(w, "offcpu", "off-CPU", v[i].pid, v[i].tid, v[i].ts, v[i].dur);
		sb_puts(&w->b, ",\"args\":{\"waiting in\":");
		sb_reset(&w->label);
		if (st && st->nframes)
			out_frame_label(&w->label, &st->frames[0], c->lines);
		out_json_str(&w->b, st && st->nframes ? sb_str(&w->label) : "?");
		sb_reset(&w->label);
		for (uint32_t j = 0; st && j < st->nframes; j++)
			if (st->frames[j].fn->kind == FN_PYTHON) {
				out_frame_label(&w->label, &st->frames[j], c->lines);
				break;
			}
		if (w->label.len) {
			sb_puts(&w->b, ",\"python\":");
			out_json_str(&w->b, sb_str(&w->label));
		}
		sb_puts(&w->b, "}}");
	}
}

static int write_all(struct writer *w, const struct out_ctx *c)
{
	const struct timeline *t = c->prof->timeline;
	struct tl_sample *v = NULL;
	const struct tl_marker **m = NULL;
	size_t n = 0, nm = 0, unnamed = 0;
	uint64_t cut = 0;
	struct sbuf samples = { 0 };

	if (t) {
		v = timeline_samples(t, &n, &cut);
		m = timeline_markers(t, &nm);
		if ((t->n && !v) || (t->mn && !m)) {
			free(v);
			free(m);
			errno = ENOMEM;
			return -1;
		}
	}
	sb_puts(&w->b, "{\"traceEvents\":[");
	metadata(w, c, v, n, m, nm);
	markers(w, c, v, n, m, nm);
	for (size_t i = 0; i < n; i++) {
		const struct stack_ref ref = { .pid = v[i].pid, .gen = v[i].gen, .hash = v[i].hash };
		const struct pstack *st = profile_find_stack(c->prof, &ref);
		uint32_t id = st ? stack_node(w, c, st) : mark(w, 0, "[unknown stack]");

		unnamed += !st;
		sb_printf(&samples, "%s\n{\"pid\":%u,\"tid\":%u,\"ts\":", i ? "," : "",
			  v[i].pid, v[i].tid);
		ts_us(&samples, v[i].ts);
		sb_printf(&samples, ",\"name\":\"%s\",\"sf\":\"%u\",\"weight\":%llu}",
			  v[i].flags & STACK_OFFCPU ? "off-cpu" : mode_name(c->mode), id,
			  (unsigned long long)v[i].weight);
	}
	sb_puts(&w->b, "\n],\n\"stackFrames\":{");
	sb_puts(&w->b, sb_str(&w->frames));
	sb_puts(&w->b, "},\n\"samples\":[");
	sb_puts(&w->b, sb_str(&samples));
	sb_puts(&w->b, "\n],\n\"displayTimeUnit\":\"ms\",\n\"otherData\":{\"producer\":\"pyperf-bpf\","
		"\"clock\":\"CLOCK_MONOTONIC, microseconds\",\"mode\":");
	out_json_str(&w->b, mode_name(c->mode));
	sb_printf(&w->b, ",\"frequency_hz\":\"%d\",\"weight_unit\":", c->freq);
	out_json_str(&w->b, mode_unit(c->mode));
	sb_printf(&w->b, ",\"samples\":\"%zu\",\"samples_older_than_the_window\":\"%llu\","
		  "\"samples_over_the_cap\":\"%llu\",\"samples_lost_ring_full\":\"%llu\","
		  "\"samples_of_unnamed_stacks\":\"%zu\",\"kernel_frames\":\"not in the timeline\"}}\n",
		  n, (unsigned long long)cut, (unsigned long long)(t ? t->overwritten : 0),
		  (unsigned long long)c->stats[STAT_TIMELINE_LOST], unnamed);
	free(v);
	free(m);
	if (!sb_ok(&w->b) || !sb_ok(&w->frames) || !sb_ok(&samples)) {
		sb_free(&samples);
		errno = ENOMEM;
		return -1;
	}
	sb_free(&samples);
	return 0;
}

int out_timeline(FILE *f, const struct out_ctx *c, bool gz)
{
	struct writer w = { 0 };
	int rc = write_all(&w, c);

	if (!rc)
		rc = gz ? out_gzip(f, (const uint8_t *)w.b.s, w.b.len)
			: (fwrite(w.b.s, 1, w.b.len, f) == w.b.len ? 0 : -1);
	sb_free(&w.b);
	sb_free(&w.frames);
	sb_free(&w.label);
	hmap_free(&w.nodes, NULL);
	free(w.key);
	return rc;
}
