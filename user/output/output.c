/* output.c - what all formats share: frame labels, synthetic root frames and
 * the names of the formats. */
#include "output.h"

#include <string.h>

static void put_clean(struct sbuf *b, const char *s)
{
	for (; *s; s++)
		sb_putc(b, *s == ';' ? ':' : (*s == '\n' || *s == '\r') ? ' ' : *s);
}

void out_frame_label(struct sbuf *b, const struct pframe *f, bool lines)
{
	put_clean(b, f->fn->name);
	if (f->fn->kind == FN_MARK || !f->fn->file[0])
		return; /* markers, and native code of no known binary: "[unknown]" */
	sb_puts(b, " (");
	put_clean(b, f->fn->file);
	if (lines && f->fn->kind == FN_PYTHON)
		sb_printf(b, ":%d", func_line(f->fn, f->instr));
	sb_putc(b, ')');
}

void out_root_frames(struct sbuf *b, const struct out_ctx *c, const struct psample *s)
{
	if (c->containers) {
		const struct pproc *pp = hmap_get(&c->prof->procs, &s->stack->pid, sizeof(int));

		if (pp && pp->ctr.id[0])
			sb_printf(b, "container %s %.12s;", pp->ctr.engine, pp->ctr.id);
		else
			sb_puts(b, "host;");
	}
	if (c->proc_frames) {
		const struct pproc *pp = hmap_get(&c->prof->procs, &s->stack->pid, sizeof(int));

		sb_printf(b, "process %u ", s->stack->pid);
		put_clean(b, profile_proc_label(pp));
		sb_putc(b, ';');
	}
	if (c->threads) {
		sb_printf(b, "thread %u ", s->tid);
		put_clean(b, profile_thread_name(c->prof, s->tid));
		sb_putc(b, ';');
	}
	if (s->stack->flags & STACK_TRUNCATED)
		sb_puts(b, "[truncated];");   /* deeper than the sampler keeps */
	if (s->stack->flags & STACK_BAD_READ)
		sb_puts(b, "[incomplete];");  /* the walk met unreadable memory */
}

void out_json_str(struct sbuf *b, const char *str)
{
	const unsigned char *s = (const unsigned char *)str;

	sb_putc(b, '"');
	while (*s) {
		int len = out_utf8_len((const char *)s);

		if (!len) {
			sb_puts(b, "\xef\xbf\xbd");
			len = 1;
		} else if (*s == '"' || *s == '\\') {
			sb_putc(b, '\\');
			sb_putc(b, (char)*s);
		} else if (*s < 0x20) {
			sb_printf(b, "\\u%04x", *s);
		} else {
			for (int i = 0; i < len; i++)
				sb_putc(b, (char)s[i]);
		}
		s += len;
	}
	sb_putc(b, '"');
}

int out_utf8_len(const char *str)
{
	const unsigned char *s = (const unsigned char *)str;
	unsigned char c = s[0];
	int len = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 :
		  (c & 0xf8) == 0xf0 ? 4 : 0;

	if ((len == 2 && c < 0xc2) || (len == 4 && c > 0xf4))
		return 0; /* overlong, or beyond U+10FFFF */
	for (int i = 1; i < len; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	return len;
}

void out_utf8_clean(char *o, const char *s)
{
	while (*s) {
		int len = out_utf8_len(s);

		if (len) {
			memcpy(o, s, (size_t)len);
			o += len;
			s += len;
		} else {
			memcpy(o, "\xef\xbf\xbd", 3);
			o += 3;
			s++;
		}
	}
	*o = 0;
}

size_t out_sample_locs(const struct out_ctx *c, const struct psample *s, struct out_loc *out,
		       size_t max)
{
	size_t k = 0;

	for (uint32_t j = 0; s->kstack && j < s->kstack->n && k < max - 2; j++)
		out[k++] = (struct out_loc){ .kind = OUT_LOC_KERNEL, .name = s->kstack->names[j],
					     .file = "[kernel.kallsyms]" };
	for (uint32_t j = 0; j < s->stack->nframes && k < max - 2; j++) {
		const struct pframe *f = &s->stack->frames[j];
		const struct func *fn = f->fn;

		if (fn->kind == FN_PYTHON)
			out[k++] = (struct out_loc){ .kind = OUT_LOC_PYTHON, .name = fn->name,
						     .file = fn->file, .firstline = fn->firstlineno,
						     .line = c->lines ? func_line(fn, f->instr) : 0 };
		else if (fn->kind == FN_MARK)
			out[k++] = (struct out_loc){ .kind = OUT_LOC_MARK, .name = fn->name, .file = "" };
		else
			out[k++] = (struct out_loc){ .kind = OUT_LOC_NATIVE, .name = fn->name,
						     .file = fn->bin ? fn->bin->path : fn->file,
						     .bin = fn->bin, .addr = fn->bin ? fn->addr : 0 };
	}
	if (s->stack->flags & STACK_BAD_READ)
		out[k++] = (struct out_loc){ .kind = OUT_LOC_MARK, .name = "[incomplete]", .file = "" };
	if (s->stack->flags & STACK_TRUNCATED)
		out[k++] = (struct out_loc){ .kind = OUT_LOC_MARK, .name = "[truncated]", .file = "" };
	return k;
}

size_t out_func_key_len(const struct out_loc *l)
{
	return 1 + sizeof(int) + strlen(l->name) + 1 + strlen(l->file);
}

size_t out_func_key(char *key, const struct out_loc *l)
{
	size_t nl = strlen(l->name), fl = strlen(l->file);

	key[0] = (char)('a' + l->kind);
	memcpy(key + 1, &l->firstline, sizeof(int));
	memcpy(key + 1 + sizeof(int), l->name, nl + 1);
	memcpy(key + 1 + sizeof(int) + nl + 1, l->file, fl);
	return 1 + sizeof(int) + nl + 1 + fl;
}

struct psample **out_samples(const struct out_ctx *c, size_t *n)
{
	struct psample **v = profile_samples(c->prof, n);
	size_t k = 0;

	if (!v || !c->pid)
		return v;
	for (size_t i = 0; i < *n; i++)
		if (v[i]->stack->pid == (uint32_t)c->pid && (!c->gen || v[i]->stack->gen == c->gen))
			v[k++] = v[i];
	*n = k;
	return v;
}

const char out_format_names[] = "report, folded, svg, pprof, speedscope, otlp, timeline";

int out_format_parse(const char *name)
{
	static const struct { const char *name; int fmt; } names[] = {
		{ "report", FMT_REPORT }, { "folded", FMT_FOLDED }, { "collapsed", FMT_FOLDED },
		{ "svg", FMT_SVG }, { "flamegraph", FMT_SVG }, { "pprof", FMT_PPROF },
		{ "speedscope", FMT_SPEEDSCOPE }, { "otlp", FMT_OTLP }, { "timeline", FMT_TIMELINE },
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(name, names[i].name))
			return names[i].fmt;
	return -1;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);

	return n > k && !strcmp(s + n - k, suffix);
}

int out_format_from_path(const char *path)
{
	static const struct { const char *suffix; int fmt; } suffixes[] = {
		{ ".folded", FMT_FOLDED }, { ".collapsed", FMT_FOLDED }, { ".txt", FMT_REPORT },
		{ ".svg", FMT_SVG }, { ".pb.gz", FMT_PPROF }, { ".pprof", FMT_PPROF },
		{ ".speedscope.json", FMT_SPEEDSCOPE }, { ".speedscope", FMT_SPEEDSCOPE },
		{ ".otlp", FMT_OTLP }, { ".trace.json", FMT_TIMELINE }, { ".json.gz", FMT_TIMELINE_GZ },
	};

	for (size_t i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++)
		if (ends_with(path, suffixes[i].suffix))
			return suffixes[i].fmt;
	return -1;
}

int out_write(FILE *f, const struct out_ctx *c, int fmt)
{
	switch (fmt) {
	case FMT_FOLDED:
		return out_folded(f, c);
	case FMT_SVG:
		return out_svg(f, c);
	case FMT_PPROF:
		return out_pprof(f, c);
	case FMT_SPEEDSCOPE:
		return out_speedscope(f, c);
	case FMT_OTLP:
		return out_otlp(f, c);
	case FMT_TIMELINE:
	case FMT_TIMELINE_GZ:
		return out_timeline(f, c, fmt == FMT_TIMELINE_GZ);
	default:
		return out_report(f, c);
	}
}
