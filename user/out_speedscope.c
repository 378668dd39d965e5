/* out_speedscope.c - the profile in speedscope's file format
 * (https://www.speedscope.app/file-format-schema.json), which speedscope
 * opens with its time-ordered, left-heavy and sandwich views.
 *
 * Frames are shared by all profiles: Python frames as {name, file, line}
 * (one frame per line, or per function with --no-lines, line being the
 * function's first), native frames as {name: symbol, file: binary}, kernel
 * frames as {name: "SYM_[k]", file: "[kernel]"}, and the "[truncated]" /
 * "[incomplete]" markers as root-side frames, so that every stack has the
 * frames of the folded output.  One "sampled" profile per thread (process
 * and thread in its name), ordered by pid and tid; its samples are frame
 * indices root first, each with a weight in nanoseconds of CPU (count x
 * period), so speedscope shows times; identical stacks of a thread are one
 * sample.  Strings are valid JSON whatever bytes the names hold: invalid
 * UTF-8 becomes U+FFFD. */
#include "output.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define VERSION "0.1.0"

/* JSON string of s: escapes, and U+FFFD for bytes that are not UTF-8 */
static void put_json(FILE *f, const char *str)
{
	const unsigned char *s = (const unsigned char *)str;

	fputc('"', f);
	while (*s) {
		unsigned char c = *s;
		int len = out_utf8_len((const char *)s);

		if (!len) {
			fputs("\xef\xbf\xbd", f);
			s++;
		} else if (c == '"' || c == '\\') {
			fprintf(f, "\\%c", c);
			s++;
		} else if (c < 0x20) {
			fprintf(f, "\\u%04x", c);
			s++;
		} else {
			fwrite(s, 1, (size_t)len, f);
			s += len;
		}
	}
	fputc('"', f);
}

enum { FK_FUNC, FK_KERNEL, FK_MARK };

struct frame_key {
	const void *id;              /* struct pyfunc *, a kernel name, or a marker */
	int kind;                    /* FK_* */
	int line;
};

struct frames {
	struct hmap index;           /* struct frame_key -> index + 1 */
	struct frame_key *v;
	size_t n, cap;
};

static long frame_index(struct frames *fr, int kind, const void *id, int line)
{
	struct frame_key k;
	uintptr_t i;

	memset(&k, 0, sizeof(k));
	k.id = id;
	k.kind = kind;
	k.line = line;
	i = (uintptr_t)hmap_get(&fr->index, &k, sizeof(k));
	if (i)
		return (long)i - 1;
	if (fr->n == fr->cap) {
		size_t cap = fr->cap ? fr->cap * 2 : 256;
		struct frame_key *v = realloc(fr->v, cap * sizeof(*v));

		if (!v)
			return -1;
		fr->v = v;
		fr->cap = cap;
	}
	fr->v[fr->n] = k;
	if (hmap_put(&fr->index, &k, sizeof(k), (void *)(uintptr_t)(fr->n + 1)))
		return -1;
	return (long)fr->n++;
}

/* Frame indices of s, root first, into out; returns how many or -1. */
static long stack_indices(struct frames *fr, const struct out_ctx *c, const struct psample *s,
			  long *out, size_t cap)
{
	size_t n = 0;

	if ((s->stack->flags & STACK_TRUNCATED) && n < cap)
		out[n++] = frame_index(fr, FK_MARK, "[truncated]", 0);
	if ((s->stack->flags & STACK_BAD_READ) && n < cap)
		out[n++] = frame_index(fr, FK_MARK, "[incomplete]", 0);
	for (uint32_t j = s->stack->nframes; j-- > 0 && n < cap;) {
		const struct pframe *pf = &s->stack->frames[j];
		int line = 0;

		if (pf->fn->kind == FN_PYTHON)
			line = c->lines ? pyfunc_line(pf->fn, pf->instr) : pf->fn->firstlineno;
		out[n++] = frame_index(fr, FK_FUNC, pf->fn, line);
	}
	/* kernel names are interned per profile: the pointer stands for the name */
	for (uint32_t j = s->kstack ? s->kstack->n : 0; j-- > 0 && n < cap;)
		out[n++] = frame_index(fr, FK_KERNEL, s->kstack->names[j], 0);
	for (size_t k = 0; k < n; k++)
		if (out[k] < 0)
			return -1;
	return (long)n;
}

static void put_frame(FILE *f, const struct frame_key *k)
{
	const struct pyfunc *fn;

	if (k->kind == FK_MARK) {
		fputs("{\"name\":", f);
		put_json(f, k->id);
		fputc('}', f);
		return;
	}
	if (k->kind == FK_KERNEL) {
		char name[512];

		snprintf(name, sizeof(name), "%s_[k]", (const char *)k->id);
		fputs("{\"name\":", f);
		put_json(f, name);
		fputs(",\"file\":\"[kernel]\"}", f);
		return;
	}
	fn = k->id;
	fputs("{\"name\":", f);
	put_json(f, fn->name);
	if (fn->file[0]) {
		fputs(",\"file\":", f);
		put_json(f, fn->file);
	}
	if (fn->kind == FN_PYTHON)
		fprintf(f, ",\"line\":%d", k->line);
	fputc('}', f);
}

struct thread_stack {
	long *idx;
	size_t n;
	uint64_t count;
};

/* one thread's samples v[0..n): identical stacks merged, in first-seen order */
static int put_profile(FILE *f, const struct out_ctx *c, struct frames *fr,
		       struct psample **v, size_t n, long *buf, size_t cap, uint64_t period)
{
	const struct pproc *pp = hmap_get(&c->prof->procs, &v[0]->stack->pid, sizeof(int));
	struct hmap seen = { 0 };
	struct thread_stack *st = calloc(n, sizeof(*st));
	size_t ns = 0;
	uint64_t total = 0;
	char name[512];
	int rc = -1;

	if (!st)
		return -1;
	for (size_t i = 0; i < n; i++) {
		long k = stack_indices(fr, c, v[i], buf, cap - 1);
		struct thread_stack *t;

		if (k < 0)
			goto out;
		buf[k] = -1; /* the key ends with it: an empty stack is a key too */
		t = hmap_get(&seen, buf, ((size_t)k + 1) * sizeof(*buf));
		if (!t) {
			t = &st[ns++];
			t->idx = malloc(((size_t)k + 1) * sizeof(*buf));
			if (!t->idx || hmap_put(&seen, buf, ((size_t)k + 1) * sizeof(*buf), t))
				goto out;
			memcpy(t->idx, buf, (size_t)k * sizeof(*buf));
			t->n = (size_t)k;
		}
		t->count += v[i]->count;
		total += v[i]->count * period;
	}
	snprintf(name, sizeof(name), "%u %s / thread %u %s", v[0]->stack->pid,
		 pp && pp->cmdline[0] ? pp->cmdline : pp ? pp->comm : "?", v[0]->tid,
		 profile_thread_name(c->prof, v[0]->tid));
	fputs("{\"type\":\"sampled\",\"name\":", f);
	put_json(f, name);
	fprintf(f, ",\"unit\":\"nanoseconds\",\"startValue\":0,\"endValue\":%llu,\"samples\":[",
		(unsigned long long)total);
	for (size_t i = 0; i < ns; i++) {
		fputs(i ? ",[" : "[", f);
		for (size_t j = 0; j < st[i].n; j++)
			fprintf(f, j ? ",%ld" : "%ld", st[i].idx[j]);
		fputc(']', f);
	}
	fputs("],\"weights\":[", f);
	for (size_t i = 0; i < ns; i++)
		fprintf(f, i ? ",%llu" : "%llu", (unsigned long long)(st[i].count * period));
	fputs("]}", f);
	rc = 0;
out:
	for (size_t i = 0; i < ns; i++)
		free(st[i].idx);
	free(st);
	hmap_free(&seen, NULL);
	return rc;
}

int out_speedscope(FILE *f, const struct out_ctx *c)
{
	size_t n, cap = PYPERF_MAX_FRAMES + PYPERF_MAX_NATIVE + PYPERF_KSTACK_DEPTH + 8;
	struct psample **v = out_samples(c, &n);
	uint64_t period = c->freq > 0 ? 1000000000ull / (uint64_t)c->freq : 1;
	struct frames fr;
	long *buf = malloc(cap * sizeof(*buf));
	char *profiles = NULL;
	size_t plen = 0;
	FILE *pf = NULL;
	int rc = -1, nprof = 0;

	memset(&fr, 0, sizeof(fr));
	if (!v || !buf || !(pf = open_memstream(&profiles, &plen)))
		goto out;
	/* the profiles first (into memory): they decide which frames exist */
	for (size_t i = 0; i < n;) {
		size_t j = i;

		/* profile_samples sorts by pid, then tid */
		while (j < n && v[j]->stack->pid == v[i]->stack->pid && v[j]->tid == v[i]->tid)
			j++;
		if (nprof++)
			fputc(',', pf);
		if (put_profile(pf, c, &fr, v + i, j - i, buf, cap, period))
			goto out;
		i = j;
	}
	if (fclose(pf)) {
		pf = NULL;
		goto out;
	}
	pf = NULL;
	fputs("{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\",\"shared\":"
	      "{\"frames\":[", f);
	for (size_t i = 0; i < fr.n; i++) {
		if (i)
			fputc(',', f);
		put_frame(f, &fr.v[i]);
	}
	fputs("]},\"profiles\":[", f);
	fwrite(profiles, 1, plen, f);
	fputs("],\"name\":", f);
	put_json(f, c->title ? c->title : "pyperf-bpf");
	fputs(",\"activeProfileIndex\":0,\"exporter\":\"pyperf-bpf " VERSION "\"}\n", f);
	rc = ferror(f) ? -1 : 0;
out:
	if (rc && !errno)
		errno = ENOMEM;
	if (pf)
		fclose(pf);
	free(profiles);
	free(buf);
	free(fr.v);
	hmap_free(&fr.index, NULL);
	free(v);
	return rc;
}
