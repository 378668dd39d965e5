/* main.c - the pyperf-bpf command line: which command runs.  Each command
 * parses its own options (cmdline.c has what they share); every bad input
 * ends there with one line on stderr and exit status 2, before anything is
 * loaded or written. */
#include "daemon.h"
#include "dbgfetch.h"
#include "diff.h"
#include "dump.h"
#include "record.h"
#include "top.h"
#include "version.h"

#include <stdio.h>
#include <string.h>

/* the commands, in the order the help and the error line name them */
static const struct command {
	const char *name;
	int (*run)(int argc, char **argv); /* argv[0] is the command's name */
} commands[] = {
	{ "record", record_main }, { "dump", dump_main },     { "top", top_main },
	{ "leaks", leaks_main },   { "daemon", daemon_main }, { "diff", diff_main },
};
#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

int main(int argc, char **argv)
{
	for (size_t i = 0; argc > 1 && i < NCOMMANDS; i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].run(argc - 1, argv + 1);
	/* internal: the helper that fetches a debug file (dbgfetch.h) */
	if (argc == 3 && !strcmp(argv[1], "debuginfod-fetch"))
		return dbgfetch_helper(argv[2]);
	if (argc > 1 && !strcmp(argv[1], "--version")) {
		printf("pyperf-bpf %s\n", PYPERF_VERSION);
		return 0;
	}
	/* the first word is ours: a program to profile follows "--" (a word
	 * taken for a program ran the system's `diff` for `pyperf-bpf diff`) */
	if (argc > 1 && argv[1][0] && argv[1][0] != '-') {
		fprintf(stderr, "pyperf-bpf: '%s' is not a command: ", argv[1]);
		for (size_t i = 0; i < NCOMMANDS; i++)
			fprintf(stderr, "%s%s", commands[i].name,
				i + 2 < NCOMMANDS ? ", " : i + 2 == NCOMMANDS ? " or " : "");
		fprintf(stderr, " (a program to profile goes after --: pyperf-bpf -- %s ...)\n",
			argv[1]);
		return 2;
	}
	return record_main(argc, argv); /* record is the default command */
}
