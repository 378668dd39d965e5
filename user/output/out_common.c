/* out_common.c - what the writers share (out_common.h). */
#include "out_common.h"

#include <errno.h>
#include <string.h>
#include <zlib.h>

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

int out_gzip(FILE *f, const uint8_t *data, size_t len)
{
	z_stream z;
	uint8_t out[16384];
	int rc;

	memset(&z, 0, sizeof(z));
	if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
		errno = ENOMEM;
		return -1;
	}
	z.next_in = (uint8_t *)data;
	z.avail_in = (uInt)len;
	errno = 0;
	do {
		size_t have;

		z.next_out = out;
		z.avail_out = sizeof(out);
		rc = deflate(&z, Z_FINISH);
		have = sizeof(out) - z.avail_out;
		if (rc == Z_STREAM_ERROR || fwrite(out, 1, have, f) != have)
			break;
	} while (rc != Z_STREAM_END);
	deflateEnd(&z);
	if (rc == Z_STREAM_END && !ferror(f))
		return 0;
	if (!errno)
		errno = rc == Z_STREAM_ERROR ? EINVAL : EIO;
	return -1;
}
