/* leaks.c - the `leaks` command: record in alloc mode, keeping each sampled
 * allocation in the kernel until it is freed (session.c), and write the
 * ones still live at the end, grouped by the stack that allocated them,
 * with their bytes, count and age (outputs: MODE_LEAKS). */
#include "record.h"
#include "cmdline.h"

#include <stdio.h>
#include <string.h>

static const char usage_text[] =
	"usage: pyperf-bpf leaks -p PID [-d SECONDS] [--min-age SECONDS] [-o FILE]... [options]\n"
	"       pyperf-bpf leaks [options] -- COMMAND [ARGS...]\n"
	"\n"
	"Find memory a Python process allocates and keeps: allocations from the C\n"
	"library (malloc & co.) are sampled by bytes (one byte in --interval, default\n"
	"512K), each sampled one is kept in the kernel until it is freed, and those\n"
	"still live at the end (-d, Ctrl-C or the command's exit) are written, grouped\n"
	"by the merged stack that allocated them: bytes and objects still live (the\n"
	"sample scaled up), the oldest one's age, and what the stack allocated in all.\n"
	"\n"
	"  -p, --pid PID            the process (or a command after --)\n"
	"  -d, --duration SECONDS   stop after this long (default: Ctrl-C or exit)\n"
	"      --min-age SECONDS    only allocations at least this old at the end\n"
	"      --interval BYTES     sample one allocated byte in BYTES (default 512K)\n"
	"  -o, --output FILE        report (.txt), folded, svg, pprof (.pb.gz: the sample\n"
	"                           types inuse_space, inuse_objects, alloc_space and\n"
	"                           alloc_objects of Go's heap profiles), speedscope\n"
	"  other options as `pyperf-bpf --help` (-f, --top, --threads, --no-lines,\n"
	"  --python-only, -v)\n";

int leaks_main(int argc, char **argv)
{
	struct record_opts o = { .s = { .freq = 19, .mode = MODE_ALLOC, .leaks = true }, .top = 20 };
	int rc;

	for (int i = 1; i < argc && strcmp(argv[i], "--"); i++)
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			fputs(usage_text, stdout);
			return 0;
		}
	rc = record_parse(argc, argv, &o);
	if (rc)
		return rc;
	if (o.s.mode != MODE_ALLOC)
		return cmdline_fail("leaks: --mode is alloc, always%s", "");
	if (!o.s.npids && !o.s.cmd)
		return cmdline_fail("leaks: give -p PID or a command after --%s", "");
	if ((rc = cmdline_env(&o.s)))
		return rc;
	return record_run(&o);
}
