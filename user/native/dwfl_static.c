/* dwfl_static.c - in the static build, libdwfl's own debuginfod client is
 * left out.
 *
 * libdw.a's debuginfod-client.o loads libdebuginfod.so.1 with dlopen the
 * first time a debug file is not found on disk.  In a static program that
 * would bring the host's shared C library in beside the linked one.  These
 * definitions of the four functions that object provides (elfutils 0.188's
 * names; the link fails on a duplicate if a later libdw.a has them
 * elsewhere) keep the linker from taking it: libdwfl finds no debug file
 * online, which is what the dynamic build also sees, since DEBUGINFOD_URLS
 * is taken out of the environment before libdwfl runs (dbgfetch.h); our
 * helper fetches instead.  Makefile checks that the static link warns of no
 * dlopen. */
#ifdef PYPERF_STATIC
#include <stddef.h>

typedef struct Dwfl Dwfl;
typedef struct debuginfod_client debuginfod_client;

debuginfod_client *dwfl_get_debuginfod_client(Dwfl *dwfl);
int __libdwfl_debuginfod_find_executable(Dwfl *dwfl, const unsigned char *id, size_t len);
int __libdwfl_debuginfod_find_debuginfo(Dwfl *dwfl, const unsigned char *id, size_t len);
void __libdwfl_debuginfod_end(debuginfod_client *c);

debuginfod_client *dwfl_get_debuginfod_client(Dwfl *dwfl)
{
	return NULL;
}

int __libdwfl_debuginfod_find_executable(Dwfl *dwfl, const unsigned char *id, size_t len)
{
	return -1;
}

int __libdwfl_debuginfod_find_debuginfo(Dwfl *dwfl, const unsigned char *id, size_t len)
{
	return -1;
}

void __libdwfl_debuginfod_end(debuginfod_client *c)
{
}
#else
typedef int dwfl_static_unused; /* ISO C: a translation unit declares something */
#endif
