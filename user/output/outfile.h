/* outfile.h - an output file that appears whole or not at all.
 *
 * The data goes to a temporary file in the destination's directory, created
 * with mode 0644 and close-on-exec; outfile_commit renames it into place, and
 * outfile_discard removes it.  A reader never sees half a profile, and an
 * error or a crash leaves the previous file (if any) untouched.  A path that
 * is a symbolic link gets its target replaced, the link kept.  A path that
 * exists and is no regular file (/dev/null, a FIFO, a terminal) is written
 * directly: renaming over it would replace a device node with a file.  A
 * NULL path means stdout, which is only flushed. */
#ifndef PYPERF_OUTFILE_H
#define PYPERF_OUTFILE_H

#include <limits.h>
#include <stdio.h>
#include <sys/types.h>

struct outfile {
	const char *path;            /* destination, NULL: stdout */
	char real[PATH_MAX];         /* where the temporary file is renamed to */
	char tmp[PATH_MAX];          /* the temporary file, "" when none */
	int direct;                  /* written in place (not a regular file) */
	FILE *f;
};

/* Open for path (NULL: stdout); 0, or -1 with "cannot write PATH: why".
 * A new file gets mode 0644, as a shell's redirection would make it. */
int outfile_open(struct outfile *o, const char *path, char *err, size_t errlen);
/* The same with the new file's mode: 0600 for what only root should read */
int outfile_open_mode(struct outfile *o, const char *path, mode_t mode, char *err,
		      size_t errlen);
/* Close and rename into place; 0, or -1 with a message (the temporary file
 * is then removed). */
int outfile_commit(struct outfile *o, char *err, size_t errlen);
/* Close and remove the temporary file; safe to call more than once. */
void outfile_discard(struct outfile *o);

#endif
