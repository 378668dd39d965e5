/* dump.h - the `dump` command: every thread's current stack, printed once. */
#ifndef PYPERF_DUMP_H
#define PYPERF_DUMP_H

#include <stdbool.h>

struct dump_opts {
	int pid;
	bool native;                 /* --native: merged native frames too */
	bool no_lines;               /* --no-lines */
	bool async_tasks;            /* --async: every asyncio task, as a tree of awaiting */
	bool subprocesses;           /* --subprocesses: the CPython processes under it too */
	bool quiet_not_python;       /* one of those: nothing said if it is not CPython */
	bool json;                   /* --json: py-spy dump --json's array of threads */
	bool locals;                 /* --locals: each Python frame's variables */
	const char *debuginfo_path;  /* PYPERF_DEBUGINFO_PATH (see struct native) */
};

/* `pyperf-bpf dump ...`: parse, then dump_run; returns the exit status. */
int dump_main(int argc, char **argv);
/* Returns the process exit status (0, or 1 with one line on stderr). */
int dump_run(const struct dump_opts *o);

#endif
