/* record.c - the `record` command: a sampling session (session.c) whose
 * profile is written to every output at the end.  The files are created
 * before sampling starts (an unwritable path fails at once), written under
 * temporary names and renamed into place only when all are complete;
 * anything that fails leaves none behind. */
#include "record.h"
#include "cmdline.h"
#include "options.h"
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

static void usage(const struct record_opts *defaults)
{
	printf(
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
		"\n");
	opt_usage(OPT_RECORD, defaults);
}

/* arg (--NAME or --NAME=VALUE) is an option of another command than cmd:
 * its row, else NULL */
static const struct opt_row *other_commands_option(unsigned cmd, const char *arg)
{
	char name[64];

	if (strncmp(arg, "--", 2))
		return NULL;
	snprintf(name, sizeof(name), "%.*s", (int)strcspn(arg + 2, "="), arg + 2);
	return opt_find(OPT_COMMANDS & ~cmd, name);
}

/* The options of record (cmd OPT_RECORD), leaks (OPT_LEAKS) or top
 * (OPT_TOP), from the one table (options.c); the table's own checks, and
 * here the options that need code. */
int record_parse_as(unsigned cmd, int argc, char **argv, struct record_opts *o,
		    void (*help)(const struct record_opts *defaults))
{
	const char *name = cmd == OPT_TOP ? "top " : cmd == OPT_LEAKS ? "leaks " : "";
	static struct option opts[128];
	static char shorts[64];
	const struct record_opts defaults = *o;
	const char *format = NULL;
	bool events_given = false;
	double minutes = 10;
	int c, rc;

	opt_getopt_table(cmd, opts, sizeof(opts) / sizeof(opts[0]), shorts, sizeof(shorts));
	opterr = 0;
	while ((c = getopt_long(argc, argv, shorts, opts, NULL)) != -1) {
		const struct opt_row *r = c == '?' ? NULL : opt_of_getopt(cmd, c);

		if (!r) {
			if (optopt >= OPT_INDEX_BASE)
				fprintf(stderr, "pyperf-bpf: %soption --%s: needs a value (see "
					"pyperf-bpf %s--help)\n", name,
					opt_rows[optopt - OPT_INDEX_BASE].name, name);
			else if (optopt && strchr(shorts + 1, optopt))
				fprintf(stderr, "pyperf-bpf: %soption -%c: needs a value (see "
					"pyperf-bpf %s--help)\n", name, optopt, name);
			else if (optopt)
				fprintf(stderr, "pyperf-bpf: %soption -%c: unknown option (see "
					"pyperf-bpf %s--help)\n", name, optopt, name);
			else if ((r = other_commands_option(cmd, argv[optind - 1])))
				fprintf(stderr, "pyperf-bpf: %s--%s goes with `pyperf-bpf %s`\n", name,
					r->name, opt_command_name(r->cmds));
			else
				fprintf(stderr, "pyperf-bpf: %sunknown or incomplete option '%s' (see "
					"pyperf-bpf %s--help)\n", name, argv[optind - 1], name);
			return 2;
		}
		if (r->kind != OK_CODE) {
			if ((rc = opt_command_set(r, o, optarg, name)))
				return rc;
			continue;
		}
		switch (r->id) {
		case OID_PID:
			if (cmdline_pids(optarg, &o->s))
				return cmdline_fail(cmd == OPT_TOP ? "top -p: not a process id: '%s'"
								   : "-p: not a process id: '%s'", optarg);
			break;
		case OID_DURATION:
			if (cmdline_duration(name, optarg, &o->s.duration))
				return 2;
			break;
		case OID_EVENTS:
			if (cmdline_events(optarg, &o->s.events))
				return 2;
			events_given = true;
			break;
		case OID_TIMELINE_MINUTES: {
			char *end;

			errno = 0;
			minutes = strtod(optarg, &end);
			if (errno || end == optarg || *end || !(minutes > 0) || minutes > 1e6)
				return cmdline_fail("--timeline-minutes: a number of minutes above 0, "
						  "not '%s'", optarg);
			break;
		}
		case OID_OUTPUT:
			if (!*optarg)
				return cmdline_fail("-o: empty file name%s", "");
			if (o->noutputs == RECORD_MAX_OUTPUTS)
				return cmdline_fail("-o: at most 8 output files, not more ('%s')", optarg);
			o->outputs[o->noutputs++].path = optarg;
			break;
		case OID_FORMAT:
			format = optarg;
			break;
		case OID_HELP:
			help(&defaults);
			exit(0);
		}
	}
	if (optind < argc)
		o->s.cmd = &argv[optind];
	if (o->s.cmd && o->s.npids)
		return cmdline_fail(cmd == OPT_TOP ? "top: give either -p or a command, not both%s"
						   : "give either -p or a command, not both%s", "");
	if (o->python_only)
		o->s.no_kernel = o->s.no_native = true;
	if (cmd == OPT_TOP)
		return 0; /* no files */
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

int record_parse(int argc, char **argv, struct record_opts *o)
{
	return record_parse_as(OPT_RECORD, argc, argv, o, usage);
}

int record_main(int argc, char **argv)
{
	struct record_opts o = { .s = { .freq = 99, .unwind_bytes = (uint64_t)PYPERF_UNWIND_MB << 20 },
				 .top = 20 };
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
