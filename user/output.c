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
		sb_printf(b, ":%d", pyfunc_line(f->fn, f->instr));
	sb_putc(b, ')');
}

void out_root_frames(struct sbuf *b, const struct out_ctx *c, const struct psample *s)
{
	if (c->proc_frames) {
		const struct pproc *pp = hmap_get(&c->prof->procs, &s->stack->pid, sizeof(int));

		sb_printf(b, "process %u ", s->stack->pid);
		put_clean(b, pp && pp->cmdline[0] ? pp->cmdline : pp ? pp->comm : "?");
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

int out_format_parse(const char *name)
{
	if (!strcmp(name, "report"))
		return FMT_REPORT;
	if (!strcmp(name, "folded") || !strcmp(name, "collapsed"))
		return FMT_FOLDED;
	return -1;
}

int out_format_from_path(const char *path)
{
	const char *dot = strrchr(path, '.');

	if (!dot)
		return -1;
	if (!strcmp(dot, ".folded") || !strcmp(dot, ".collapsed"))
		return FMT_FOLDED;
	if (!strcmp(dot, ".txt"))
		return FMT_REPORT;
	return -1;
}
