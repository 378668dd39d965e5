/* sbuf.c - see sbuf.h. */
#include "sbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool reserve(struct sbuf *b, size_t more)
{
	size_t cap;
	char *s;

	if (b->failed)
		return false;
	if (b->len + more + 1 <= b->cap)
		return true;
	cap = b->cap ? b->cap : 64;
	while (cap < b->len + more + 1)
		cap *= 2;
	s = realloc(b->s, cap);
	if (!s) {
		b->failed = true;
		return false;
	}
	b->s = s;
	b->cap = cap;
	return true;
}

void sb_putc(struct sbuf *b, char c)
{
	if (!reserve(b, 1))
		return;
	b->s[b->len++] = c;
	b->s[b->len] = 0;
}

void sb_puts(struct sbuf *b, const char *s)
{
	size_t n = strlen(s);

	if (!reserve(b, n))
		return;
	memcpy(b->s + b->len, s, n + 1);
	b->len += n;
}

void sb_printf(struct sbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || !reserve(b, (size_t)n))
		return;
	va_start(ap, fmt);
	vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += n;
}

void sb_reset(struct sbuf *b)
{
	b->len = 0;
	if (b->s)
		b->s[0] = 0;
}

void sb_free(struct sbuf *b)
{
	free(b->s);
	memset(b, 0, sizeof(*b));
}
