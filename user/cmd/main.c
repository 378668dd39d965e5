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

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "record"))
		return record_main(argc - 1, argv + 1);
	if (argc > 1 && !strcmp(argv[1], "dump"))
		return dump_main(argc - 1, argv + 1);
	if (argc > 1 && !strcmp(argv[1], "top"))
		return top_main(argc - 1, argv + 1);
	if (argc > 1 && !strcmp(argv[1], "daemon"))
		return daemon_main(argc - 1, argv + 1);
	if (argc > 1 && !strcmp(argv[1], "leaks"))
		return leaks_main(argc - 1, argv + 1);
	if (argc > 1 && !strcmp(argv[1], "diff"))
		return diff_main(argc - 1, argv + 1);
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
		fprintf(stderr, "pyperf-bpf: '%s' is not a command: record, dump, top, leaks, daemon or diff "
			"(a program to profile goes after --: pyperf-bpf -- %s ...)\n", argv[1],
			argv[1]);
		return 2;
	}
	return record_main(argc, argv); /* record is the default command */
}
