/* demangle.h - C++ symbol names as people read them.
 *
 * The demangler is libstdc++'s (__cxa_demangle).  The static build links it
 * (libstdc++.a's demangler alone); the dynamic one opens libstdc++ the first
 * time a mangled name is shown: linked, every run loaded it and relocated
 * it (~0.9 ms of each start-up here), and a run of Python processes alone
 * never meets a C++ name.
 *
 * Library code: nothing here prints or exits. */
#ifndef PYPERF_DEMANGLE_H
#define PYPERF_DEMANGLE_H

/* The readable form of a mangled name ("_Z..."), malloc'd; NULL when name
 * is not mangled, cannot be demangled, or no demangler can be had. */
char *demangle(const char *name);

/* Has the demangler been looked up (at the first mangled name, never
 * before: a test's question)?  1 with one found, else 0. */
int demangle_loaded(void);

#endif
