/* size.c - see size.h. */
#include "size.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>

bool size_parse(const char *s, uint64_t *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || v < 0 || !isfinite(v))
		return false;
	switch (toupper((unsigned char)*end)) {
	case 'K': v *= 1024; end++; break;
	case 'M': v *= 1024 * 1024; end++; break;
	case 'G': v *= 1024.0 * 1024 * 1024; end++; break;
	default: break;
	}
	if (toupper((unsigned char)*end) == 'B')
		end++;
	if (*end || v > 1e15)
		return false;
	*out = (uint64_t)v;
	return true;
}
