/* dynlib.c - see dynlib.h.  Not in the static build (PYPERF_STATIC),
 * which links what it uses and must not dlopen the host's libraries. */
#include "dynlib.h"

#ifndef PYPERF_STATIC
#include "errmsg.h"

#include <dlfcn.h>
#include <string.h>

void *dynlib_open(const char *soname, const char *const *names, void **slots, size_t n,
		  char *err, size_t errlen)
{
	void *lib = dlopen(soname, RTLD_NOW | RTLD_LOCAL);

	if (!lib) {
		set_err(err, errlen, "%s", dlerror());
		return NULL;
	}
	for (size_t i = 0; i < n; i++) {
		/* POSIX: a data pointer from dlsym may be used as a function pointer */
		slots[i] = dlsym(lib, names[i]);
		if (!slots[i]) {
			set_err(err, errlen, "%s lacks %s", soname, names[i]);
			memset(slots, 0, n * sizeof(*slots));
			dlclose(lib);
			return NULL;
		}
	}
	return lib;
}
#endif
