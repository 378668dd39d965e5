/* out_speedscope.c - placeholder, being written. */
#include "output.h"

#include <errno.h>

int out_speedscope(FILE *f, const struct out_ctx *c)
{
	errno = ENOSYS;
	return -1;
}
