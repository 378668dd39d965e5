/* frame.c - the few operations on the frame vocabulary (frame.h) that do not
 * read a process: placeholders, source lines from a line table, freeing. */
#include "frame.h"
#include "linetable.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct func *func_unknown_code(uint64_t code)
{
	struct func *f = calloc(1, sizeof(*f));
	char buf[48];

	if (!f)
		return NULL;
	snprintf(buf, sizeof(buf), "<unknown code 0x%llx>", (unsigned long long)code);
	f->name = strdup(buf);
	f->file = strdup("<unknown>");
	f->firstlineno = -1;
	if (!f->name || !f->file) {
		func_free(f);
		return NULL;
	}
	return f;
}

struct func *func_dup(const struct func *f)
{
	struct func *d = malloc(sizeof(*d));

	if (!d)
		return NULL;
	*d = *f;
	d->name = f->name ? strdup(f->name) : NULL;
	d->file = f->file ? strdup(f->file) : NULL;
	d->lt = f->lt_len ? malloc(f->lt_len) : NULL;
	if ((f->name && !d->name) || (f->file && !d->file) || (f->lt_len && !d->lt)) {
		func_free(d);
		return NULL;
	}
	if (f->lt_len)
		memcpy(d->lt, f->lt, f->lt_len);
	return d;
}

int func_line(const struct func *f, uint32_t instr)
{
	int line;

	if (f->line)
		return f->line;
	if (f->no_lines)
		return 0;
	if (!f->lt || instr == UINT32_MAX)
		return f->firstlineno;
	line = linetable_addr2line(f->lt_kind, f->lt, f->lt_len, f->firstlineno, (int)instr);
	/* a table that decodes to a line before the file's first (garbage in
	 * the target's code object) says nothing: line 0, not a made-up one */
	return line < -1 ? 0 : line;
}

void func_free(struct func *f)
{
	if (!f)
		return;
	free(f->name);
	free(f->file);
	free(f->lt);
	free(f);
}
