/* errmsg.h - library code reports errors as one line in a caller's buffer. */
#ifndef PYPERF_ERRMSG_H
#define PYPERF_ERRMSG_H

#include <stddef.h>

/* printf into err (if err and errlen are set); always NUL-terminated. */
void set_err(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
