/* leaks.c - the `leaks` command: record in alloc mode, keeping each sampled
 * allocation in the kernel until it is freed (session.c), and write the
 * ones still live at the end, grouped by the stack that allocated them,
 * with their bytes, count and age (outputs: MODE_LEAKS). */
#include "record.h"
#include "cmdline.h"
#include "options.h"

#include <stdio.h>
#include <string.h>

static void usage(const struct record_opts *defaults)
{
	printf("usage: pyperf-bpf leaks -p PID [-d SECONDS] [--min-age SECONDS] [-o FILE]... "
	       "[options]\n"
	       "       pyperf-bpf leaks [options] -- COMMAND [ARGS...]\n"
	       "\n"
	       "Find memory a Python process allocates and keeps: allocations from the C\n"
	       "library (malloc & co.) are sampled by bytes (one byte in --interval, default\n"
	       "512K), each sampled one is kept in the kernel until it is freed, and those\n"
	       "still live at the end (-d, Ctrl-C or the command's exit) are written, grouped\n"
	       "by the merged stack that allocated them: bytes and objects still live (the\n"
	       "sample scaled up), the oldest one's age, and what the stack allocated in all.\n"
	       "The pprof output (.pb.gz) has the sample types inuse_space, inuse_objects,\n"
	       "alloc_space and alloc_objects of Go's heap profiles.\n"
	       "\n");
	opt_usage(OPT_LEAKS, defaults);
}

int leaks_main(int argc, char **argv)
{
	struct record_opts o = { .s = { .freq = 19, .mode = MODE_ALLOC, .leaks = true,
				       .unwind_bytes = (uint64_t)PYPERF_UNWIND_MB << 20 },
				 .top = 20 };
	int rc;

	rc = record_parse_as(OPT_LEAKS, argc, argv, &o, usage);
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
