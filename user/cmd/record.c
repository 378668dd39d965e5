/* record.c - the `record` command: a sampling session (session.c) whose
 * profile is written to every output at the end.  The files are created
 * before sampling starts (an unwritable path fails at once), written under
 * temporary names and renamed into place only when all are complete;
 * anything that fails leaves none behind. */
#include "record.h"
#include "cmdline.h"
#include "errmsg.h"
#include "outfile.h"
#include "output.h"
#include "profile.h"
#include "sampler.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

struct recorder {
	const struct record_opts *o;
	struct outfile out[RECORD_MAX_OUTPUTS];
	bool empty;                  /* nothing was sampled */
	bool status;                 /* a status line on stderr (a terminal) */
	bool drawn;                  /* it is on the screen */
	size_t tables_pending;       /* native unwind tables not built yet */
};

/* The status line while recording, on a terminal: redrawn at each drain of
 * the counts (once a second), erased when sampling stops and before any
 * message. */
static void status_erase(struct recorder *r)
{
	if (r->drawn)
		fputs("\r\033[K", stderr);
	r->drawn = false;
}

static void on_drain(void *ctx, struct profile *prof, const uint64_t *st, double elapsed,
		     bool final)
{
	struct recorder *r = ctx;
	char total[32] = "";

	if (!r->status)
		return;
	status_erase(r);
	if (final)
		return;
	if (r->o->s.duration > 0)
		snprintf(total, sizeof(total), "/%g", r->o->s.duration);
	fprintf(stderr, "pyperf-bpf: %.0f%s s, %llu samples, %zu processes, %zu threads, %llu lost, "
		"%zu tables pending", elapsed, total, (unsigned long long)prof->total,
		profile_nprocs_seen(prof), prof->threads.len,
		(unsigned long long)(st[STAT_MAP_FULL] + st[STAT_RINGBUF_FULL]), r->tables_pending);
	fflush(stderr);
	r->drawn = true;
}

static void on_stopping(void *ctx)
{
	status_erase(ctx);
	fflush(stderr);
}

static void on_tables(void *ctx, size_t pending)
{
	((struct recorder *)ctx)->tables_pending = pending;
}

static void on_message(void *ctx, const char *msg)
{
	struct recorder *r = ctx;

	status_erase(r);
	fprintf(stderr, "pyperf-bpf: %s\n", msg);
}

static int open_outputs(struct recorder *r, char *err, size_t errlen)
{
	for (size_t i = 0; i < r->o->noutputs; i++)
		if (outfile_open(&r->out[i], r->o->outputs[i].path, err, errlen))
			return -1;
	return 0;
}

static void discard_outputs(struct recorder *r)
{
	for (size_t i = 0; i < r->o->noutputs; i++)
		outfile_discard(&r->out[i]);
}

/* What the profile is of, for titles: the command, the pids, or the host. */
static void make_title(const struct session_opts *o, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = 0;
	if (o->cmd) {
		for (char **a = o->cmd; *a && n + 1 < len; a++)
			n += snprintf(buf + n, len - n, "%s%s", a == o->cmd ? "" : " ", *a);
	} else if (o->npids) {
		n = snprintf(buf, len, "pid");
		for (size_t i = 0; i < o->npids && n + 1 < len; i++)
			n += snprintf(buf + n, len - n, "%s%d", i ? "," : " ", o->pids[i]);
	} else {
		char host[256] = "this host";

		gethostname(host, sizeof(host) - 1);
		snprintf(buf, len, "all CPython processes on %s", host);
	}
}

static int on_end(void *ctx, struct profile *prof, const struct session_end *end, char *err,
		  size_t errlen)
{
	struct recorder *r = ctx;
	struct out_ctx c;
	char title[512];
	int rc;

	make_title(&r->o->s, title, sizeof(title));
	memset(&c, 0, sizeof(c));
	c.prof = prof;
	c.lines = !r->o->no_lines;
	c.threads = r->o->threads;
	c.containers = r->o->containers;
	/* one process: no process frames; whole-host mode, several -p, or a
	 * command or -p process that started children: one root frame each */
	c.proc_frames = (!r->o->s.cmd && r->o->s.npids != 1) || profile_nprocs_seen(prof) > 1;
	c.duration_s = end->secs;
	c.freq = r->o->s.freq;
	c.mode = r->o->s.leaks ? MODE_LEAKS : r->o->s.mode;
	c.min_age = r->o->s.min_age;
	c.ncpus = (int)sysconf(_SC_NPROCESSORS_ONLN);
	c.top = r->o->top;
	memcpy(c.stats, end->stats, sizeof(c.stats));
	c.title = title;
	c.start_unix_ns = end->start_unix_ns;
	c.icicle = r->o->icicle;
	c.startup_frames = r->o->startup_frames;
	/* every file is complete before any is renamed into place */
	for (size_t i = 0; i < r->o->noutputs; i++) {
		const struct record_output *ro = &r->o->outputs[i];

		rc = out_write(r->out[i].f, &c, ro->format);
		if (rc || ferror(r->out[i].f)) {
			set_err(err, errlen, "cannot write %s: %s", ro->path ? ro->path : "stdout",
				 strerror(errno ? errno : EIO));
			return -1;
		}
	}
	for (size_t i = 0; i < r->o->noutputs; i++)
		if (outfile_commit(&r->out[i], err, errlen))
			return -1;
	/* `leaks` finding nothing live is an answer, and so is a recording
	 * whose only samples are of processes it could not profile (the report
	 * lists them); one without any sample is not (record_run says so) */
	r->empty = !prof->total && !r->o->s.leaks && !prof->refused.len;
	return 0;
}

int record_run(const struct record_opts *o)
{
	struct recorder r = { .o = o, .status = !o->quiet && isatty(STDERR_FILENO) };
	struct session_hooks h = { .on_end = on_end, .on_drain = on_drain, .on_tables = on_tables,
				   .on_stopping = on_stopping, .on_message = on_message, .message_on_stderr = true, .ctx = &r };
	char err[1024];
	int rc;

	session_install_signals(&h);
	if (session_check(err, sizeof(err)) || open_outputs(&r, err, sizeof(err))) {
		fprintf(stderr, "pyperf-bpf: %s\n", err);
		discard_outputs(&r);
		return 1;
	}
	rc = session_run(&o->s, &h);
	discard_outputs(&r); /* none left after a commit; all if it failed */
	if (rc == 0 && r.empty && !o->allow_empty) {
		fprintf(stderr, "pyperf-bpf: nothing was sampled: no CPython process %s while recording "
			"(the output is written, empty; --allow-empty exits 0)\n",
			mode_desc(o->s.mode)->did);
		return 1;
	}
	return rc;
}

/* ---- the command line ---- */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: pyperf-bpf [record] [options] [-- COMMAND [ARGS...]]\n"
		"       pyperf-bpf dump -p PID [--native]      every thread's stack, once\n"
		"       pyperf-bpf top [-p PID] [-- COMMAND]   live view of the hot functions\n"
		"       pyperf-bpf leaks [-p PID | -- COMMAND]  allocations still live\n"
		"       pyperf-bpf daemon [--config FILE] ...  continuous profiling\n"
		"       pyperf-bpf diff BASE NEW [-o FILE]     what changed between two recordings\n"
		"       (each command has its own --help)\n"
		"\n"
		"The first word is a command or an option: a program to profile goes\n"
		"after -- (pyperf-bpf -- python3 app.py).\n"
		"\n"
		"Sample the stacks of CPython processes with eBPF.  Without -p or a\n"
		"command, every CPython process on the host is profiled, including ones\n"
		"started during the run.  record and top never stop or pause a process:\n"
		"each sample is taken in the kernel while its thread is interrupted, so\n"
		"the stack is read whole (py-spy pauses the process for that unless told\n"
		"--nonblocking); only dump stops threads, for milliseconds.  py-spy's\n"
		"--idle is --mode wall.\n"
		"\n"
		"  -p, --pid PID[,PID...]   profile these processes (repeatable)\n"
		"  -d, --duration SECONDS   stop after this long (default: until the command\n"
		"                           exits or Ctrl-C)\n"
		"  -F, --frequency HZ       samples per second per CPU (default 99, 1 to %d)\n"
		"      --mode MODE          cpu: time on a CPU (default); offcpu: time off it\n"
		"                           (sleeping, blocked, waiting), at the stack it\n"
		"                           blocked in; wall: both, every thread's wall time\n"
		"                           (counts in ns; folded in microseconds); faults:\n"
		"                           anonymous memory faulted in (RSS growth), at the\n"
		"                           stack that touched it (counts in bytes); alloc:\n"
		"                           bytes allocated with malloc & co., sampled\n"
		"      --interval BYTES     faults: walk about one fault per BYTES faulted in\n"
		"                           (default 256K; 4K: every fault); alloc: sample\n"
		"                           one allocated byte in BYTES (default 512K)\n"
		"      --gil                only samples of threads holding the GIL\n"
		"      --async              asyncio (CPython 3.12+): a task's frames under\n"
		"                           <task NAME> frames of it and the tasks awaiting it\n"
		"      --events LIST        gc, import (comma-separated): time every collection\n"
		"                           and import with the interpreter's USDT markers\n"
		"                           (builds with --with-dtrace); the report adds GC\n"
		"                           pauses by generation and the slowest imports;\n"
		"                           none: not even with a timeline\n"
		"  -o, --output FILE        write the profile to FILE (default: stdout);\n"
		"                           repeat to write several formats of one recording\n"
		"  -f, --format FORMAT      report (hotspots), folded (flame graph input), svg\n"
		"                           (flame graph), pprof (gzipped profile.proto),\n"
		"                           speedscope, otlp (OpenTelemetry profiles) or\n"
		"                           timeline (Chrome trace-event JSON: each sample in\n"
		"                           time, GC pauses, imports and off-CPU blocks as\n"
		"                           events; for Perfetto, chrome://tracing, the\n"
		"                           Firefox Profiler, speedscope; turns on --events\n"
		"                           gc,import); default from -o's extension (.txt,\n"
		"                           .folded, .svg, .pb.gz, .pprof, .speedscope.json,\n"
		"                           .otlp, .trace.json, .json.gz), else report\n"
		"      --timeline-minutes N  timeline: write the newest N minutes (default 10;\n"
		"                           at most %u samples are kept in all)\n"
		"      --icicle             svg: root at the top, stacks growing down\n"
		"      --threads            start each stack with a frame naming its thread\n"
		"      --containers         group by container: a root frame per container\n"
		"                           (\"container ENGINE ID\" or \"host\"), and in the\n"
		"                           report each container's share and processes\n"
		"      --subprocesses       with -p: the processes under each running\n"
		"                           already, too (those a profiled process starts\n"
		"                           are always followed)\n"
		"      --no-lines, --function  one frame per function instead of per line\n"
		"      --no-kernel          leave out kernel frames (leaf end, NAME_[k])\n"
		"      --python-only        Python frames only (no native or kernel frames)\n"
		"      --top N              rows in each report table (default 20)\n"
		"      --startup-frames     report: list the native frames that only call\n"
		"                           into the outermost Python frame (_start ...\n"
		"                           PyEval_EvalCode, a thread's start) in the tables\n"
		"                           too (flame graphs and other formats keep them)\n"
		"      --allow-empty        exit 0 when nothing was sampled (else 1, with\n"
		"                           a line on stderr; the output is written either way)\n"
		"      --stats-json FILE    write run statistics (for benchmarks)\n"
		"      --unwind-mb N        memory the native unwind tables may take (default %d;\n"
		"                           beyond it the least recently used are evicted)\n"
		"  -q, --quiet              no status line (elapsed time, samples, processes\n"
		"                           and threads seen, samples lost, unwind tables\n"
		"                           pending: on stderr, when it is a terminal)\n"
		"  -v, --verbose            say what is happening\n"
		"  -h, --help               this help\n",
		CMDLINE_MAX_FREQ, TIMELINE_CAP_DEFAULT, PYPERF_UNWIND_MB);
}

enum { OPT_THREADS = 256, OPT_NO_LINES, OPT_TOP, OPT_STATS_JSON, OPT_NO_KERNEL, OPT_PY_ONLY,
       OPT_ICICLE, OPT_UNWIND_MB, OPT_MODE, OPT_GIL, OPT_ASYNC, OPT_INTERVAL, OPT_MIN_AGE,
       OPT_SUBPROCESSES, OPT_CONTAINERS, OPT_EVENTS, OPT_ALLOW_EMPTY,
       OPT_STARTUP_FRAMES, OPT_TIMELINE_MINUTES };

static const struct option long_opts[] = {
	{ "pid", required_argument, NULL, 'p' },
	{ "duration", required_argument, NULL, 'd' },
	{ "frequency", required_argument, NULL, 'F' },
	{ "mode", required_argument, NULL, OPT_MODE },
	{ "gil", no_argument, NULL, OPT_GIL },
	{ "interval", required_argument, NULL, OPT_INTERVAL },
	{ "min-age", required_argument, NULL, OPT_MIN_AGE },
	{ "async", no_argument, NULL, OPT_ASYNC },
	{ "events", required_argument, NULL, OPT_EVENTS },
	{ "timeline-minutes", required_argument, NULL, OPT_TIMELINE_MINUTES },
	{ "allow-empty", no_argument, NULL, OPT_ALLOW_EMPTY },
	{ "startup-frames", no_argument, NULL, OPT_STARTUP_FRAMES },
	{ "subprocesses", no_argument, NULL, OPT_SUBPROCESSES }, /* py-spy's; always so here */
	{ "output", required_argument, NULL, 'o' },
	{ "format", required_argument, NULL, 'f' },
	{ "threads", no_argument, NULL, OPT_THREADS },
	{ "containers", no_argument, NULL, OPT_CONTAINERS },
	{ "no-lines", no_argument, NULL, OPT_NO_LINES },
	{ "function", no_argument, NULL, OPT_NO_LINES }, /* py-spy's name for it */
	{ "no-kernel", no_argument, NULL, OPT_NO_KERNEL },
	{ "python-only", no_argument, NULL, OPT_PY_ONLY },
	{ "top", required_argument, NULL, OPT_TOP },
	{ "icicle", no_argument, NULL, OPT_ICICLE },
	{ "stats-json", required_argument, NULL, OPT_STATS_JSON },
	{ "unwind-mb", required_argument, NULL, OPT_UNWIND_MB },
	{ "verbose", no_argument, NULL, 'v' },
	{ "quiet", no_argument, NULL, 'q' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

int record_parse(int argc, char **argv, struct record_opts *o)
{
	const char *format = NULL;
	bool events_given = false;
	double minutes = 10;
	long v;
	int c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "+p:d:F:o:f:vqh", long_opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			if (cmdline_pids(optarg, &o->s))
				return cmdline_fail("-p: not a process id: '%s'", optarg);
			break;
		case 'd':
			if (cmdline_duration("", optarg, &o->s.duration))
				return 2;
			break;
		case 'F':
			if (cmdline_freq("", optarg, &o->s.freq))
				return 2;
			break;
		case OPT_GIL:
			o->s.gil_only = true;
			break;
		case OPT_ASYNC:
			o->s.async_stacks = true;
			break;
		case OPT_SUBPROCESSES:
			o->s.subprocesses = true;
			break;
		case OPT_ALLOW_EMPTY:
			o->allow_empty = true;
			break;
		case OPT_STARTUP_FRAMES:
			o->startup_frames = true;
			break;
		case OPT_EVENTS:
			if (cmdline_events(optarg, &o->s.events))
				return 2;
			events_given = true;
			break;
		case OPT_TIMELINE_MINUTES: {
			char *end;

			errno = 0;
			minutes = strtod(optarg, &end);
			if (errno || end == optarg || *end || !(minutes > 0) || minutes > 1e6)
				return cmdline_fail("--timeline-minutes: a number of minutes above 0, "
						  "not '%s'", optarg);
			break;
		}
		case OPT_MODE:
			if (cmdline_mode("", optarg, &o->s.mode))
				return 2;
			break;
		case OPT_INTERVAL:
			if (cmdline_interval("", optarg, &o->s.interval))
				return 2;
			break;
		case OPT_MIN_AGE:
			if (!o->s.leaks)
				return cmdline_fail("--min-age goes with `pyperf-bpf leaks`%s", "");
			{
				char *end;

				errno = 0;
				o->s.min_age = strtod(optarg, &end);
				if (errno || end == optarg || *end || !(o->s.min_age >= 0) ||
				    o->s.min_age > 1e8)
					return cmdline_fail("leaks --min-age: not a number of seconds: "
							  "'%s'", optarg);
			}
			break;
		case 'o':
			if (!*optarg)
				return cmdline_fail("-o: empty file name%s", "");
			if (o->noutputs == RECORD_MAX_OUTPUTS)
				return cmdline_fail("-o: at most 8 output files, not more ('%s')", optarg);
			o->outputs[o->noutputs++].path = optarg;
			break;
		case 'f':
			format = optarg;
			break;
		case OPT_THREADS:
			o->threads = true;
			break;
		case OPT_CONTAINERS:
			o->containers = true;
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
			if (!cmdline_long(optarg, 1, 1000000, &v))
				return cmdline_fail("--top: not a positive number: '%s'", optarg);
			o->top = (size_t)v;
			break;
		case OPT_STATS_JSON:
			o->s.stats_json = optarg;
			break;
		case OPT_UNWIND_MB:
			if (!cmdline_long(optarg, 1, 1 << 20, &v))
				return cmdline_fail("--unwind-mb: not a number from 1 to 1048576: '%s'",
						  optarg);
			o->s.unwind_bytes = (uint64_t)v << 20;
			break;
		case 'v':
			o->s.verbose = true;
			break;
		case 'q':
			o->quiet = true;
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
		return cmdline_fail("give either -p or a command, not both%s", "");
	if (!o->noutputs)
		o->noutputs = 1; /* stdout */
	if (format && o->noutputs > 1)
		return cmdline_fail("-f goes with one -o; with several, each file's extension "
				  "names its format%s", "");
	for (size_t i = 0; i < o->noutputs; i++) {
		struct record_output *ro = &o->outputs[i];

		for (size_t j = 0; j < i; j++)
			if (!strcmp(ro->path, o->outputs[j].path))
				return cmdline_fail("-o %s: given twice", ro->path);
		if (format)
			ro->format = out_format_parse(format);
		else if (ro->path)
			ro->format = out_format_from_path(ro->path);
		else
			ro->format = FMT_REPORT;
		if (format && ro->format < 0)
			return cmdline_fail("-f: unknown format '%s'", format);
		if (ro->format < 0)
			return cmdline_fail(o->noutputs > 1 ? "-o %s: cannot tell the format from the "
				"file name (.txt, .folded, .svg, .pb.gz, .pprof, .speedscope.json, .otlp, "
				".trace.json, .json.gz)" :
				"-o %s: cannot tell the format from the file name; use -f", ro->path);
		if (ro->format == FMT_TIMELINE || ro->format == FMT_TIMELINE_GZ)
			o->s.timeline = true;
	}
	if (o->s.timeline) {
		o->s.timeline_keep_s = minutes * 60;
		if (!events_given) /* its markers; none asked for: what a timeline shows */
			o->s.events = EVENTS_GC | EVENTS_IMPORT;
	}
	return 0;
}

int record_main(int argc, char **argv)
{
	struct record_opts o = { .s = { .freq = 99 }, .top = 20 };
	int rc;

	rc = record_parse(argc, argv, &o);
	if (rc)
		return rc;
	if ((rc = cmdline_env(&o.s)))
		return rc;
	rc = record_run(&o);
	free(o.s.pids);
	return rc;
}
