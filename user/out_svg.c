/* out_svg.c - placeholder, being written. */
#include "output.h"

#include <errno.h>

int out_svg(FILE *f, const struct out_ctx *c)
{
	errno = ENOSYS;
	return -1;
}
