/* execlibc.h - which C library a command will map, guessed before it runs.
 *
 * The dynamic loader a program names (PT_INTERP) sits beside the C library
 * it loads in every common layout (Debian's /lib/x86_64-linux-gnu, Fedora's
 * /lib64, a relocated prefix with its own loader), so the guess is
 * libc.so.6 in the loader's directory, symlinks resolved.  A script is
 * followed to its #! interpreter (and through `/usr/bin/env NAME`), twice at
 * most.  Only a guess: whoever uses it checks the library the process did
 * map. */
#ifndef PYPERF_EXECLIBC_H
#define PYPERF_EXECLIBC_H

#include <stddef.h>

/* cmd as execvp would find it (a name without '/' searched in $PATH); the
 * C library's path into out.  0, or -1 where there is no guess (not
 * found, static, no libc.so.6 beside the loader). */
int exec_libc_guess(const char *cmd, char *out, size_t outlen);

#endif
