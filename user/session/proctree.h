/* proctree.h - the processes a command started, to end them with it.
 *
 * A command's workers (multiprocessing's fork, spawn and forkserver start
 * methods, a shell's jobs) are its descendants; one whose parent exited
 * would be re-parented to init and outlive the recording, so the profiler
 * makes itself their subreaper (PR_SET_CHILD_SUBREAPER): such orphans come
 * to it.  The tree is read from /proc (each process's parent in its stat). */
#ifndef PYPERF_PROCTREE_H
#define PYPERF_PROCTREE_H

#include <sys/types.h>

#define PROCTREE_MAX 4096        /* processes of one tree handled */

/* The live processes (zombies left out) of the command root's tree: root,
 * the orphans handed to self (children of self other than root and its
 * own debuginfod helpers), and their descendants; up to max into out.
 * Returns how many. */
int proctree_members(pid_t self, pid_t root, pid_t *out, int max);
/* Reap the zombies among self's children (orphans handed to it), except
 * root, whose status the caller waits for. */
void proctree_reap(pid_t self, pid_t root);

#endif
