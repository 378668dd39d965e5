/* main.c - the pyperf-bpf command line.  Parses and checks options, then hands
 * over to the command (record.c).  Every bad input ends here with one line on
 * stderr and exit status 2, before anything is loaded or written. */
#include "daemon.h"
#include "dump.h"
#include "output.h"
#include "env.h"
#include "record.h"
#include "top.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_FREQ 10000
#define VERSION "0.1.0"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: pyperf-bpf [record] [options] [-- COMMAND [ARGS...]]\n"
		"       pyperf-bpf dump -p PID [--native]      every thread's stack, once\n"
		"       pyperf-bpf top [-p PID] [-- COMMAND]   live view of the hot functions\n"
		"       pyperf-bpf daemon [--config FILE] ...  continuous profiling\n"
		"       (each command has its own --help)\n"
		"\n"
		"Sample the CPU stacks of CPython processes with eBPF.  Without -p or a\n"
		"command, every CPython process on the host is profiled, including ones\n"
		"started during the run.\n"
		"\n"
		"  -p, --pid PID[,PID...]   profile these processes (repeatable)\n"
		"  -d, --duration SECONDS   stop after this long (default: until the command\n"
		"                           exits or Ctrl-C)\n"
		"  -F, --frequency HZ       samples per second per CPU (default 99, 1 to %d)\n"
		"  -o, --output FILE        write the profile to FILE (default: stdout);\n"
		"                           repeat to write several formats of one recording\n"
		"  -f, --format FORMAT      report (hotspots), folded (flame graph input), svg\n"
		"                           (flame graph), pprof (gzipped profile.proto) or\n"
		"                           speedscope; default from -o's extension (.txt,\n"
		"                           .folded, .svg, .pb.gz, .pprof, .speedscope.json),\n"
		"                           else report\n"
		"      --icicle             svg: root at the top, stacks growing down\n"
		"      --threads            start each stack with a frame naming its thread\n"
		"      --no-lines           one frame per function instead of per line\n"
		"      --no-kernel          leave out kernel frames (leaf end, NAME_[k])\n"
		"      --python-only        Python frames only (no native or kernel frames)\n"
		"      --top N              rows in each report table (default 20)\n"
		"      --stats-json FILE    write run statistics (for benchmarks)\n"
		"      --unwind-mb N        memory the native unwind tables may take (default %d;\n"
		"                           beyond it the least recently used are evicted)\n"
		"  -v, --verbose            say what is happening\n"
		"  -h, --help               this help\n",
		MAX_FREQ, PYPERF_UNWIND_MB);
}

static int fail_usage(const char *fmt, const char *arg)
{
	fprintf(stderr, "pyperf-bpf: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, " (see pyperf-bpf --help)\n");
	return 2;
}

/* The PYPERF_* variables, read and checked once, into a recording's options
 * (PYPERF_UNWIND_BYTES overrides --unwind-mb); 0, or 2 after a message. */
static int apply_env(struct record_opts *o)
{
	struct env e;
	char err[256];

	if (env_read(&e, err, sizeof(err))) {
		fprintf(stderr, "pyperf-bpf: %s\n", err);
		return 2;
	}
	if (e.counts_entries)
		o->s.counts_entries = e.counts_entries;
	if (e.unwind_bytes)
		o->s.unwind_bytes = e.unwind_bytes;
	o->s.debuginfo_path = e.debuginfo_path;
	return 0;
}

static int parse_pids(const char *arg, struct record_opts *o)
{
	char *copy = strdup(arg), *rest = copy, *t;

	if (!copy)
		return -1;
	while ((t = strsep(&rest, ","))) {
		char *end;
		long v;
		int *pids;

		errno = 0;
		v = strtol(t, &end, 10);
		if (errno || *end || end == t || v <= 0 || v > INT_MAX) {
			free(copy);
			return -1;
		}
		pids = realloc(o->s.pids, (o->s.npids + 1) * sizeof(*pids));
		if (!pids) {
			free(copy);
			return -1;
		}
		o->s.pids = pids;
		o->s.pids[o->s.npids++] = (int)v;
	}
	free(copy);
	return o->s.npids ? 0 : -1;
}

static bool parse_long(const char *s, long lo, long hi, long *out)
{
	char *end;

	errno = 0;
	*out = strtol(s, &end, 10);
	return !errno && end != s && !*end && *out >= lo && *out <= hi;
}

enum { OPT_THREADS = 256, OPT_NO_LINES, OPT_TOP, OPT_STATS_JSON, OPT_NO_KERNEL, OPT_PY_ONLY,
       OPT_ICICLE, OPT_UNWIND_MB };

static const struct option long_opts[] = {
	{ "pid", required_argument, NULL, 'p' },
	{ "duration", required_argument, NULL, 'd' },
	{ "frequency", required_argument, NULL, 'F' },
	{ "output", required_argument, NULL, 'o' },
	{ "format", required_argument, NULL, 'f' },
	{ "threads", no_argument, NULL, OPT_THREADS },
	{ "no-lines", no_argument, NULL, OPT_NO_LINES },
	{ "no-kernel", no_argument, NULL, OPT_NO_KERNEL },
	{ "python-only", no_argument, NULL, OPT_PY_ONLY },
	{ "top", required_argument, NULL, OPT_TOP },
	{ "icicle", no_argument, NULL, OPT_ICICLE },
	{ "stats-json", required_argument, NULL, OPT_STATS_JSON },
	{ "unwind-mb", required_argument, NULL, OPT_UNWIND_MB },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static int parse_record(int argc, char **argv, struct record_opts *o)
{
	const char *format = NULL;
	long v;
	int c;
	char *end;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "+p:d:F:o:f:vh", long_opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			if (parse_pids(optarg, o))
				return fail_usage("-p: not a process id: '%s'", optarg);
			break;
		case 'd':
			errno = 0;
			o->s.duration = strtod(optarg, &end);
			if (errno || end == optarg || *end || !isfinite(o->s.duration) ||
			    o->s.duration <= 0 || o->s.duration > 1e8)
				return fail_usage("-d: the duration must be a positive number of seconds, "
						  "not '%s'", optarg);
			break;
		case 'F':
			if (!parse_long(optarg, 1, MAX_FREQ, &v))
				return fail_usage("-F: the frequency must be a whole number of Hz from 1 "
						  "to " "10000, not '%s'", optarg);
			o->s.freq = (int)v;
			break;
		case 'o':
			if (!*optarg)
				return fail_usage("-o: empty file name%s", "");
			if (o->noutputs == RECORD_MAX_OUTPUTS)
				return fail_usage("-o: at most 8 output files, not more ('%s')", optarg);
			o->outputs[o->noutputs++].path = optarg;
			break;
		case 'f':
			format = optarg;
			break;
		case OPT_THREADS:
			o->threads = true;
			break;
		case OPT_NO_LINES:
			o->no_lines = true;
			break;
		case OPT_NO_KERNEL:
			o->s.no_kernel = true;
			break;
		case OPT_PY_ONLY:
			o->s.no_kernel = o->s.no_native = true;
			break;
		case OPT_ICICLE:
			o->icicle = true;
			break;
		case OPT_TOP:
			if (!parse_long(optarg, 1, 1000000, &v))
				return fail_usage("--top: not a positive number: '%s'", optarg);
			o->top = (size_t)v;
			break;
		case OPT_STATS_JSON:
			o->s.stats_json = optarg;
			break;
		case OPT_UNWIND_MB:
			if (!parse_long(optarg, 1, 1 << 20, &v))
				return fail_usage("--unwind-mb: not a number from 1 to 1048576: '%s'",
						  optarg);
			o->s.unwind_bytes = (uint64_t)v << 20;
			break;
		case 'v':
			o->s.verbose = true;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		case '?':
		default:
			if (optopt)
				fprintf(stderr, "pyperf-bpf: option -%c: %s (see pyperf-bpf --help)\n",
					optopt, strchr("pdFof", optopt) ? "needs a value" : "unknown option");
			else
				fprintf(stderr, "pyperf-bpf: unknown or incomplete option '%s' (see "
					"pyperf-bpf --help)\n", argv[optind - 1]);
			return 2;
		}
	}
	if (optind < argc)
		o->s.cmd = &argv[optind];
	if (o->s.cmd && o->s.npids)
		return fail_usage("give either -p or a command, not both%s", "");
	if (!o->noutputs)
		o->noutputs = 1; /* stdout */
	if (format && o->noutputs > 1)
		return fail_usage("-f goes with one -o; with several, each file's extension "
				  "names its format%s", "");
	for (size_t i = 0; i < o->noutputs; i++) {
		struct record_output *ro = &o->outputs[i];

		for (size_t j = 0; j < i; j++)
			if (!strcmp(ro->path, o->outputs[j].path))
				return fail_usage("-o %s: given twice", ro->path);
		if (format)
			ro->format = out_format_parse(format);
		else if (ro->path)
			ro->format = out_format_from_path(ro->path);
		else
			ro->format = FMT_REPORT;
		if (format && ro->format < 0)
			return fail_usage("-f: unknown format '%s'", format);
		if (ro->format < 0)
			return fail_usage(o->noutputs > 1 ? "-o %s: cannot tell the format from the "
				"file name (.txt, .folded, .svg, .pb.gz, .pprof, .speedscope.json)" :
				"-o %s: cannot tell the format from the file name; use -f", ro->path);
	}
	return 0;
}

static int parse_pid(const char *s)
{
	long v;

	return parse_long(s, 1, INT_MAX, &v) ? (int)v : -1;
}

static int dump_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "native", no_argument, NULL, 'n' },
		{ "no-lines", no_argument, NULL, OPT_NO_LINES },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct dump_opts o = { 0 };
	int c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "+p:nh", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			if ((o.pid = parse_pid(optarg)) < 0)
				return fail_usage("dump -p: not a process id: '%s'", optarg);
			break;
		case 'n':
			o.native = true;
			break;
		case OPT_NO_LINES:
			o.no_lines = true;
			break;
		case 'h':
			printf("usage: pyperf-bpf dump -p PID [--native] [--no-lines]\n\n"
			       "Print the current stack of every thread of a CPython process once,\n"
			       "running or not.  The threads are stopped for a few milliseconds.\n\n"
			       "  -p, --pid PID     the process\n"
			       "  -n, --native      native frames too, merged with the Python ones\n"
			       "      --no-lines    functions without line numbers\n");
			return 0;
		default:
			return fail_usage("dump: unknown or incomplete option '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return fail_usage("dump: unexpected argument '%s'", argv[optind]);
	if (!o.pid)
		return fail_usage("dump: which process? give -p PID%s", "");
	{
		struct env e;
		char err[256];

		if (env_read(&e, err, sizeof(err))) {
			fprintf(stderr, "pyperf-bpf: %s\n", err);
			return 2;
		}
		o.debuginfo_path = e.debuginfo_path;
	}
	return dump_run(&o);
}

static int top_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "duration", required_argument, NULL, 'd' },
		{ "frequency", required_argument, NULL, 'F' },
		{ "native", no_argument, NULL, 'n' },
		{ "rows", required_argument, NULL, OPT_TOP },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct record_opts o = { .s = { .freq = 99, .no_native = true, .no_kernel = true }, .top = 100 };
	int c, rc;
	long v;
	char *end;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "+p:d:F:nh", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			if (parse_pids(optarg, &o))
				return fail_usage("top -p: not a process id: '%s'", optarg);
			break;
		case 'd':
			errno = 0;
			o.s.duration = strtod(optarg, &end);
			if (errno || end == optarg || *end || !isfinite(o.s.duration) ||
			    o.s.duration <= 0 || o.s.duration > 1e8)
				return fail_usage("top -d: not a positive number of seconds: '%s'", optarg);
			break;
		case 'F':
			if (!parse_long(optarg, 1, MAX_FREQ, &v))
				return fail_usage("top -F: the frequency must be a whole number of Hz from 1 "
						  "to 10000, not '%s'", optarg);
			o.s.freq = (int)v;
			break;
		case 'n':
			o.s.no_native = false;
			break;
		case OPT_TOP:
			if (!parse_long(optarg, 1, 100000, &v))
				return fail_usage("top --rows: not a positive number: '%s'", optarg);
			o.top = (size_t)v;
			break;
		case 'h':
			printf("usage: pyperf-bpf top [-p PID[,PID...]] [options] [-- COMMAND [ARGS...]]\n\n"
			       "A live view of the functions that use the CPU, refreshed every second:\n"
			       "own (leaf) and total shares over the last second, and times overall.\n"
			       "Without -p or a command, every CPython process.  q or Ctrl-C quits.\n\n"
			       "  -p, --pid PID[,PID...]   these processes\n"
			       "  -d, --duration SECONDS   stop after this long\n"
			       "  -F, --frequency HZ       samples per second per CPU (default 99)\n"
			       "  -n, --native             native functions too\n"
			       "      --rows N             rows at most (default: what fits)\n");
			return 0;
		default:
			return fail_usage("top: unknown or incomplete option '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		o.s.cmd = &argv[optind];
	if (o.s.cmd && o.s.npids)
		return fail_usage("top: give either -p or a command, not both%s", "");
	if ((rc = apply_env(&o)))
		return rc;
	rc = top_run(&o);
	free(o.s.pids);
	return rc;
}

int main(int argc, char **argv)
{
	struct record_opts o = { .s = { .freq = 99 }, .top = 20 };
	int rc;

	if (argc > 1 && !strcmp(argv[1], "record")) {
		argv[1] = argv[0];
		argc--;
		argv++;
	} else if (argc > 1 && !strcmp(argv[1], "dump")) {
		return dump_main(argc - 1, argv + 1);
	} else if (argc > 1 && !strcmp(argv[1], "top")) {
		return top_main(argc - 1, argv + 1);
	} else if (argc > 1 && !strcmp(argv[1], "daemon")) {
		return daemon_main(argc - 1, argv + 1);
	} else if (argc > 1 && !strcmp(argv[1], "--version")) {
		printf("pyperf-bpf %s\n", VERSION);
		return 0;
	}
	rc = parse_record(argc, argv, &o);
	if (rc)
		return rc;
	if ((rc = apply_env(&o)))
		return rc;
	rc = record_run(&o);
	free(o.s.pids);
	return rc;
}
