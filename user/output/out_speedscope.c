/* out_speedscope.c - the profile in speedscope's file format
 * (https://www.speedscope.app/file-format-schema.json), which speedscope
 * opens with its time-ordered, left-heavy and sandwich views.
 *
 * The file is one JSON object: {"$schema", "shared": {"frames"}, "profiles",
 * "name", "activeProfileIndex", "exporter"}.  Frames are shared by all
 * profiles and written once per distinct content:
 *   Python   {name: function, file: source, line}: the current line, or with
 *            --no-lines the function's first line (one frame per function,
 *            and speedscope still points at its def);
 *   native   {name: symbol, file: binary} ("[unknown]" has no file);
 *   kernel   {name: "SYM_[k]", file: "[kernel]"}, named as in folded output;
 *   markers  {name: "[truncated]"} and the like: "[truncated]" and
 *            "[incomplete]" are root-side frames, as in folded output.
 * There is no process or thread frame: each thread is its own "sampled"
 * profile, named "PID COMMAND / thread TID NAME", in order of pid and tid;
 * the busiest one is the active profile.  A profile's samples are frame
 * indices root first, identical stacks merged in the order profile_samples
 * gives them, so every stack and count of the folded output is there.  A
 * recording without samples has no profiles, which the schema allows.
 *
 * Weights are nanoseconds of CPU (count x sampling period), so speedscope
 * shows times rather than bare counts; count = weight / period exactly, the
 * period being 1e9 / freq rounded down (without a frequency, unit "none"
 * and weights are counts).  Strings are valid JSON whatever
 * bytes the names hold: invalid UTF-8 becomes U+FFFD. */
#include "out_common.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define VERSION "0.1.0"

/* The shared frames: each distinct frame's JSON text, in first-use order. */
struct frames {
	struct hmap by_ref;          /* struct frame_ref -> index + 1 */
	struct hmap by_text;         /* frame JSON -> index + 1 */
	char **text;
	size_t n, cap;
	struct sbuf tmp;
};

/* A frame as the profile holds it: a function (or kernel name, or marker)
 * pointer and, for Python, its line.  Cheaper to look up than the text. */
struct frame_ref {
	const void *id;
	int kind;                    /* enum func_kind, or REF_KERNEL */
	int line;
};

#define REF_KERNEL 100

static void render_frame(struct sbuf *b, const struct frame_ref *r)
{
	const struct func *fn = r->id;

	sb_reset(b);
	sb_puts(b, "{\"name\":");
	if (r->kind == REF_KERNEL) {
		struct sbuf name = { 0 };

		sb_printf(&name, "%s_[k]", (const char *)r->id);
		out_json_str(b, sb_str(&name));
		b->failed |= !sb_ok(&name);
		sb_free(&name);
		sb_puts(b, ",\"file\":\"[kernel]\"}");
		return;
	}
	out_json_str(b, fn->name);
	if (fn->kind != FN_MARK && fn->file[0]) {
		sb_puts(b, ",\"file\":");
		out_json_str(b, fn->file);
	}
	if (fn->kind == FN_PYTHON)
		sb_printf(b, ",\"line\":%d", r->line);
	sb_putc(b, '}');
}

static int add_text(struct frames *fr, const char *text)
{
	char *copy = strdup(text);

	if (fr->n == fr->cap) {
		size_t cap = fr->cap ? fr->cap * 2 : 256;
		char **v = realloc(fr->text, cap * sizeof(*v));

		if (!v) {
			free(copy);
			return -1;
		}
		fr->text = v;
		fr->cap = cap;
	}
	if (!copy || hmap_put(&fr->by_text, text, strlen(text), (void *)(uintptr_t)(fr->n + 1))) {
		free(copy);
		return -1;
	}
	fr->text[fr->n++] = copy;
	return 0;
}

/* Index of the frame, added if new; -1 when out of memory. */
static long frame_index(struct frames *fr, int kind, const void *id, int line)
{
	struct frame_ref r;
	uintptr_t i;

	memset(&r, 0, sizeof(r)); /* the key is compared bytewise */
	r.id = id;
	r.kind = kind;
	r.line = line;
	i = (uintptr_t)hmap_get(&fr->by_ref, &r, sizeof(r));
	if (i)
		return (long)i - 1;
	/* the same frame can come from several pointers: the same function in
	 * two processes, a kernel symbol at two addresses */
	render_frame(&fr->tmp, &r);
	if (!sb_ok(&fr->tmp))
		return -1;
	i = (uintptr_t)hmap_get(&fr->by_text, fr->tmp.s, fr->tmp.len);
	if (!i) {
		if (add_text(fr, fr->tmp.s))
			return -1;
		i = fr->n;
	}
	if (hmap_put(&fr->by_ref, &r, sizeof(r), (void *)i))
		return -1;
	return (long)i - 1;
}

static void frames_free(struct frames *fr)
{
	for (size_t i = 0; i < fr->n; i++)
		free(fr->text[i]);
	free(fr->text);
	hmap_free(&fr->by_ref, NULL);
	hmap_free(&fr->by_text, NULL);
	sb_free(&fr->tmp);
}

/* A stack as frame indices, root first. */
struct ivec {
	uint32_t *v;
	size_t n, cap;
};

static int ivec_push(struct ivec *iv, long long i)
{
	if (i < 0)
		return -1;
	if (iv->n == iv->cap) {
		size_t cap = iv->cap ? iv->cap * 2 : 256;
		uint32_t *v = realloc(iv->v, cap * sizeof(*v));

		if (!v)
			return -1;
		iv->v = v;
		iv->cap = cap;
	}
	iv->v[iv->n++] = (uint32_t)i;
	return 0;
}

/* The frame indices of sample s, root first, into iv (emptied first). */
static int stack_indices(struct frames *fr, const struct out_ctx *c, const struct psample *s,
			 struct ivec *iv)
{
	static struct func truncated = { .name = "[truncated]", .file = "", .kind = FN_MARK };
	static struct func incomplete = { .name = "[incomplete]", .file = "", .kind = FN_MARK };
	const struct kstack *ks = s->kstack;

	iv->n = 0;
	if ((s->stack->flags & STACK_TRUNCATED) &&
	    ivec_push(iv, frame_index(fr, FN_MARK, &truncated, 0)))
		return -1;
	if ((s->stack->flags & STACK_BAD_READ) &&
	    ivec_push(iv, frame_index(fr, FN_MARK, &incomplete, 0)))
		return -1;
	for (uint32_t j = s->stack->nframes; j-- > 0;) {
		const struct pframe *pf = &s->stack->frames[j];
		int line = 0;

		if (pf->fn->kind == FN_PYTHON)
			line = c->lines ? func_line(pf->fn, pf->instr) : pf->fn->firstlineno;
		if (ivec_push(iv, frame_index(fr, pf->fn->kind, pf->fn, line)))
			return -1;
	}
	for (uint32_t j = ks ? ks->n : 0; j-- > 0;) {
		const char *name = ks->names[j] ? ks->names[j] : "[unknown]";

		if (ivec_push(iv, frame_index(fr, REF_KERNEL, name, 0)))
			return -1;
	}
	return 0;
}

/* A distinct stack of a thread and its count. */
struct tstack {
	uint32_t *v;                 /* frame indices, root first */
	size_t n;
	uint64_t count;
};

/* One thread's distinct stacks, in first-seen order. */
struct thread_prof {
	struct hmap index;           /* frame indices + END -> struct tstack * */
	struct tstack *st;
	size_t n;
	uint64_t count;
};

#define END UINT32_MAX           /* ends each key: an empty stack is a key too */

static int thread_add(struct thread_prof *t, struct ivec *iv, uint64_t count)
{
	struct tstack *ts;
	size_t klen;

	if (ivec_push(iv, END))
		return -1;
	klen = iv->n * sizeof(*iv->v);
	ts = hmap_get(&t->index, iv->v, klen);
	if (!ts) {
		ts = &t->st[t->n];
		ts->v = malloc(klen);
		if (!ts->v || hmap_put(&t->index, iv->v, klen, ts)) {
			free(ts->v);
			return -1;
		}
		memcpy(ts->v, iv->v, klen);
		ts->n = iv->n - 1;
		ts->count = 0;
		t->n++;
	}
	ts->count += count;
	t->count += count;
	return 0;
}

static void thread_free(struct thread_prof *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->st[i].v);
	free(t->st);
	hmap_free(&t->index, NULL);
}

/* "PID COMMAND / thread TID NAME" */
static void profile_name(struct sbuf *b, const struct out_ctx *c, const struct psample *s)
{
	const struct pproc *pp = hmap_get(&c->prof->procs, &s->stack->pid, sizeof(int));
	struct sbuf name = { 0 };

	sb_printf(&name, "%u %s / thread %u %s", s->stack->pid,
		  profile_proc_label(pp), s->tid,
		  profile_thread_name(c->prof, s->tid));
	out_json_str(b, sb_str(&name));
	b->failed |= !sb_ok(&name);
	sb_free(&name);
}

static void put_thread(struct sbuf *b, const struct out_ctx *c, const struct psample *first,
		       const struct thread_prof *t, uint64_t period)
{
	sb_puts(b, "{\"type\":\"sampled\",\"name\":");
	profile_name(b, c, first);
	sb_printf(b, ",\"unit\":\"%s\",\"startValue\":0,\"endValue\":%llu,\"samples\":[",
		  mode_is_bytes(c->mode) ? "bytes"
		  : c->freq > 0 || mode_desc(c->mode)->quantity != MQ_SAMPLES ? "nanoseconds" : "none",
		  (unsigned long long)(t->count * period));
	for (size_t i = 0; i < t->n; i++) {
		sb_puts(b, i ? ",[" : "[");
		for (size_t j = 0; j < t->st[i].n; j++)
			sb_printf(b, j ? ",%u" : "%u", t->st[i].v[j]);
		sb_putc(b, ']');
	}
	sb_puts(b, "],\"weights\":[");
	for (size_t i = 0; i < t->n; i++)
		sb_printf(b, i ? ",%llu" : "%llu", (unsigned long long)(t->st[i].count * period));
	sb_puts(b, "]}");
}

/* The profile of one thread's samples v[0..n) appended to b; its total
 * count in *count. */
static int thread_profile(struct sbuf *b, const struct out_ctx *c, struct frames *fr,
			  struct psample **v, size_t n, uint64_t period, uint64_t *count)
{
	struct thread_prof t = { .st = calloc(n, sizeof(*t.st)) };
	struct ivec iv = { 0 };
	int rc = -1;

	if (!t.st)
		return -1;
	for (size_t i = 0; i < n; i++)
		if (stack_indices(fr, c, v[i], &iv) || thread_add(&t, &iv, v[i]->count))
			goto out;
	put_thread(b, c, v[0], &t, period);
	*count = t.count;
	rc = sb_ok(b) ? 0 : -1;
out:
	free(iv.v);
	thread_free(&t);
	return rc;
}

/* All profiles, comma separated, into b; *active is the busiest one. */
static int all_profiles(struct sbuf *b, const struct out_ctx *c, struct frames *fr,
			struct psample **v, size_t n, uint64_t period, size_t *active)
{
	uint64_t best = 0;
	size_t nprof = 0;

	*active = 0;
	/* profile_samples sorts by pid, then tid: a thread's samples are a run */
	for (size_t i = 0, j; i < n; i = j) {
		uint64_t count = 0;

		for (j = i; j < n && v[j]->stack->pid == v[i]->stack->pid && v[j]->tid == v[i]->tid;)
			j++;
		if (nprof)
			sb_putc(b, ',');
		if (thread_profile(b, c, fr, v + i, j - i, period, &count))
			return -1;
		if (count > best) {
			best = count;
			*active = nprof;
		}
		nprof++;
	}
	return 0;
}

static void put_file(FILE *f, const struct out_ctx *c, const struct frames *fr,
		     const struct sbuf *profiles, size_t active, struct sbuf *tmp)
{
	fputs("{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\","
	      "\"shared\":{\"frames\":[", f);
	for (size_t i = 0; i < fr->n; i++) {
		if (i)
			fputc(',', f);
		fputs(fr->text[i], f);
	}
	fputs("]},\"profiles\":[", f);
	fwrite(sb_str(profiles), 1, profiles->len, f);
	fputs("],\"name\":", f);
	/* never empty: speedscope would fall back to profiles[0].name, and an
	 * empty recording has no profiles */
	sb_reset(tmp);
	out_json_str(tmp, c->title && c->title[0] ? c->title : "pyperf-bpf");
	fputs(sb_str(tmp), f);
	fprintf(f, ",\"activeProfileIndex\":%zu,\"exporter\":\"pyperf-bpf " VERSION "\"}\n",
		active);
}

int out_speedscope(FILE *f, const struct out_ctx *c)
{
	size_t n = 0, active = 0;
	struct psample **v = out_samples(c, &n);
	/* no frequency: weights are counts, unit "none"; off-CPU modes count
	 * nanoseconds already, faults bytes */
	uint64_t period = mode_desc(c->mode)->quantity != MQ_SAMPLES ? 1
			  : c->freq > 0 ? 1000000000ull / (uint64_t)c->freq : 1;
	struct frames fr;
	struct sbuf profiles = { 0 };
	int rc = -1;

	memset(&fr, 0, sizeof(fr));
	/* the profiles first, in memory: they decide which frames exist */
	if (!v || all_profiles(&profiles, c, &fr, v, n, period, &active)) {
		errno = ENOMEM;
		goto out;
	}
	errno = 0;
	put_file(f, c, &fr, &profiles, active, &fr.tmp);
	if (!sb_ok(&fr.tmp)) {
		errno = ENOMEM;
		goto out;
	}
	rc = ferror(f) ? -1 : 0;
	if (rc && !errno)
		errno = EIO; /* stdio sets errno on a failed write; keep that */
out:
	sb_free(&profiles);
	frames_free(&fr);
	free(v);
	return rc;
}
