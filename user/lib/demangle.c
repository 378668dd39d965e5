/* demangle.c - see demangle.h.  PYPERF_STATIC: the static build links the
 * demangler and opens nothing. */
#include "demangle.h"

#include "dynlib.h"

#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* libstdc++'s demangler (extern "C") */
char *__cxa_demangle(const char *mangled, char *out, size_t *len, int *status);

typedef char *(*demangle_fn)(const char *, char *, size_t *, int *);

static demangle_fn fn;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void load(void)
{
#ifdef PYPERF_STATIC
	fn = __cxa_demangle;
#else
	static const char *const names[] = { "__cxa_demangle" };
	char why[256];

	/* NULL when the library is missing: names are then shown mangled */
	dynlib_open("libstdc++.so.6", names, (void **)&fn, 1, why, sizeof(why));
#endif
}

char *demangle(const char *name)
{
	int status = -1;
	char *d;

	if (!name || strncmp(name, "_Z", 2))
		return NULL;
	pthread_once(&once, load);
	if (!fn || !(d = fn(name, NULL, NULL, &status)))
		return NULL;
	if (status != 0) {
		free(d);
		return NULL;
	}
	return d;
}

int demangle_loaded(void)
{
	return fn != NULL;
}
