/* sbuf.h - a growable string.  Allocation failure is sticky: the string stops
 * growing and sb_ok() says so, so callers check once at the end. */
#ifndef PYPERF_SBUF_H
#define PYPERF_SBUF_H

#include <stdbool.h>
#include <stddef.h>

struct sbuf {
	char *s;
	size_t len, cap;
	bool failed;
};

void sb_putc(struct sbuf *b, char c);
void sb_puts(struct sbuf *b, const char *s);
void sb_printf(struct sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sb_reset(struct sbuf *b);   /* empty, keep memory */
void sb_free(struct sbuf *b);
static inline bool sb_ok(const struct sbuf *b) { return !b->failed; }
static inline const char *sb_str(const struct sbuf *b) { return b->s ? b->s : ""; }

#endif
