/* options.c - the one table of options (see options.h). */
#include "options.h"
#include "daemon_cfg.h"
#include "errmsg.h"
#include "mode.h"
#include "record_opts.h"
#include "session.h"
#include "size.h"
#include "timeline.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define C(field) offsetof(struct record_opts, field), sizeof(((struct record_opts *)0)->field)
#define D(field) offsetof(struct daemon_cfg, field), sizeof(((struct daemon_cfg *)0)->field)
#define NC NO_FIELD, 0 /* not the commands' */
#define ND NO_FIELD, 0 /* not the daemon's */
#define REC (OPT_RECORD | OPT_LEAKS) /* record's options, which leaks shares */
#define ALL_CMDS OPT_COMMANDS
#define EVERY (OPT_COMMANDS | OPT_DAEMON)

/* Every option, once, in the order --help lists them.  Defaults are the
 * commands' own: record_main, top_main and leaks_main start their struct
 * record_opts with them, the daemon's daemon_config.c defaults(). */
const struct opt_row opt_rows[] = {
	{ "pid", 'p', ALL_CMDS, OK_CODE, 0, 0, NC, ND, OID_PID, NULL, "PID[,PID...]",
	  "profile these processes (repeatable)" },
	{ "duration", 'd', ALL_CMDS, OK_CODE, 0, 0, NC, ND, OID_DURATION, NULL, "SECONDS",
	  "stop after this long (default: until the command\nexits or Ctrl-C)" },
	{ "frequency", 'F', EVERY, OK_LONG, 1, SESSION_MAX_FREQ, C(s.freq), D(freq), 0, NULL, "HZ",
	  "samples per second per CPU (default {default}, 1 to {max})" },
	{ "mode", 0, OPT_RECORD | OPT_TOP | OPT_DAEMON, OK_MODE, 0, 0, C(s.mode), D(mode), 0, NULL, "MODE",
	  "cpu: time on a CPU (default); offcpu: time off it\n(sleeping, blocked, waiting), at "
	  "the stack it\nblocked in; wall: both, every thread's wall time\n(counts in ns; folded "
	  "in microseconds); faults:\nanonymous memory faulted in (RSS growth), at the\nstack "
	  "that touched it (counts in bytes); alloc:\nbytes allocated with malloc & co., "
	  "sampled" },
	{ "interval", 0, ALL_CMDS, OK_SIZE, 4096, 1ull << 32, C(s.interval), ND, 0, NULL, "BYTES",
	  "faults: walk about one fault per BYTES faulted in\n(default 256K; 4K: every fault); "
	  "alloc: sample\none allocated byte in BYTES (default 512K)" },
	{ "fault-interval", 0, OPT_DAEMON, OK_SIZE, 4096, 1ull << 32, NC, D(fault_bytes), 0, NULL,
	  "SIZE", "faults: one walked fault per SIZE bytes (256K)" },
	{ "min-age", 0, OPT_LEAKS, OK_SECONDS, 0, 100000000, C(s.min_age), ND, 0, NULL, "SECONDS",
	  "only allocations at least this old at the end" },
	{ "gil", 0, EVERY, OK_FLAG, 0, 0, C(s.gil_only), D(gil), 0, NULL, NULL,
	  "only samples of threads holding the GIL" },
	{ "async", 0, EVERY, OK_FLAG, 0, 0, C(s.async_stacks), D(async_stacks), 0, NULL, NULL,
	  "asyncio (CPython 3.12+): a task's frames under\n<task NAME> frames of it and the tasks "
	  "awaiting it" },
	{ "events", 0, REC, OK_CODE, 0, 0, NC, ND, OID_EVENTS, NULL, "LIST",
	  "gc, import (comma-separated): time every collection\nand import with the interpreter's "
	  "USDT markers\n(builds with --with-dtrace); the report adds GC\npauses by generation and "
	  "the slowest imports;\nnone: not even with a timeline" },
	{ "output", 'o', REC, OK_CODE, 0, 0, NC, ND, OID_OUTPUT, NULL, "FILE",
	  "write the profile to FILE (default: stdout);\nrepeat to write several formats of one "
	  "recording" },
	{ "format", 'f', REC, OK_CODE, 0, 0, NC, ND, OID_FORMAT, NULL, "FORMAT",
	  "report (hotspots), folded (flame graph input), svg\n(flame graph), pprof (gzipped "
	  "profile.proto),\nspeedscope, otlp (OpenTelemetry profiles) or\ntimeline (Chrome "
	  "trace-event JSON: each sample in\ntime, GC pauses, imports and off-CPU blocks as\n"
	  "events; for Perfetto, chrome://tracing, the\nFirefox Profiler, speedscope; turns on "
	  "--events\ngc,import); default from -o's extension (.txt,\n.folded, .svg, .pb.gz, "
	  ".pprof, .speedscope.json,\n.otlp, .trace.json, .json.gz), else report" },
	{ "timeline-minutes", 0, REC, OK_CODE, 0, TIMELINE_CAP_DEFAULT, NC, ND, OID_TIMELINE_MINUTES,
	  NULL, "N", "timeline: write the newest N minutes (default 10;\nat most {max} samples are "
	  "kept in all)" },
	{ "icicle", 0, REC, OK_FLAG, 0, 0, C(icicle), ND, 0, NULL, NULL,
	  "svg: root at the top, stacks growing down" },
	{ "threads", 0, REC, OK_FLAG, 0, 0, C(threads), ND, 0, NULL, NULL,
	  "start each stack with a frame naming its thread" },
	{ "containers", 0, REC, OK_FLAG, 0, 0, C(containers), ND, 0, NULL, NULL,
	  "group by container: a root frame per container\n(\"container ENGINE ID\" or \"host\"), "
	  "and in the\nreport each container's share and processes" },
	{ "subprocesses", 0, ALL_CMDS, OK_FLAG, 0, 0, C(s.subprocesses), ND, 0, NULL, NULL,
	  "with -p: the processes under each running\nalready, too (those a profiled process "
	  "starts\nare always followed)" },
	{ "no-lines", 0, REC, OK_FLAG, 0, 0, C(no_lines), ND, 0, "function", NULL,
	  "one frame per function instead of per line" },
	{ "native", 'n', OPT_TOP, OK_UNFLAG, 0, 0, C(s.no_native), ND, 0, NULL, NULL,
	  "native functions too" },
	{ "no-kernel", 0, REC | OPT_DAEMON, OK_FLAG, 0, 0, C(s.no_kernel), D(no_kernel), 0, NULL, NULL,
	  "leave out kernel frames (leaf end, NAME_[k])" },
	{ "python-only", 0, REC | OPT_DAEMON, OK_FLAG, 0, 0, C(python_only), D(python_only), 0, NULL,
	  NULL, "Python frames only (no native or kernel frames)" },
	{ "top", 0, REC, OK_LONG, 1, 1000000, C(top), ND, 0, NULL, "N",
	  "rows in each report table (default {default})" },
	{ "rows", 0, OPT_TOP, OK_LONG, 1, 100000, C(top), ND, 0, NULL, "N",
	  "rows at most (default: what fits)" },
	{ "startup-frames", 0, REC, OK_FLAG, 0, 0, C(startup_frames), ND, 0, NULL, NULL,
	  "report: list the native frames that only call\ninto the outermost Python frame (_start "
	  "...\nPyEval_EvalCode, a thread's start) in the tables\ntoo (flame graphs and other "
	  "formats keep them)" },
	{ "allow-empty", 0, REC, OK_FLAG, 0, 0, C(allow_empty), ND, 0, NULL, NULL,
	  "exit 0 when nothing was sampled (else 1, with\na line on stderr; the output is written "
	  "either way)" },
	{ "stats-json", 0, REC, OK_STR, 0, 0, C(s.stats_json), ND, 0, NULL, "FILE",
	  "write run statistics (for benchmarks)" },
	{ "unwind-mb", 0, REC, OK_MB, 1, 1u << 20, C(s.unwind_bytes), ND, 0, NULL, "N",
	  "memory the native unwind tables may take (default {default};\nbeyond it the least "
	  "recently used are evicted)" },
	/* the daemon's own */
	{ "interval", 'i', OPT_DAEMON, OK_SECONDS, 1, 86400, NC, D(interval), 0, NULL, "SECONDS",
	  "one profile per process per interval (default {default})" },
	{ "match", 0, OPT_DAEMON, OK_STR, 0, 0, NC, D(match), 0, NULL, "REGEX",
	  "only processes whose name or command line matches" },
	{ "cgroup", 0, OPT_DAEMON, OK_STR, 0, 0, NC, D(cgroup), 0, NULL, "PATH",
	  "only processes in this cgroup (v2) or below it" },
	{ "container", 0, OPT_DAEMON, OK_STR, 0, 0, NC, D(container), 0, NULL, "ID",
	  "only processes in this container: its id (or its\nfirst digits), pod UID or engine "
	  "(docker, podman,\ncontainerd, cri-o, kubernetes), any, or none" },
	{ "dir", 0, OPT_DAEMON, OK_STR, 0, 0, NC, D(dir), 0, NULL, "DIR",
	  "write APP-PID-TIME.pb.gz files here (a directory\nmade 0700, files 0600: root's only)" },
	{ "group", 0, OPT_DAEMON, OK_STR, 0, 0, NC, D(group), 0, NULL, "GROUP",
	  "DIR and its files belong to GROUP, 0750 and 0640" },
	{ "keep", 0, OPT_DAEMON, OK_LONG, 1, LONG_MAX, NC, D(keep), 0, NULL, "N",
	  "keep at most N files in DIR (default {default})" },
	{ "keep-bytes", 0, OPT_DAEMON, OK_SIZE, 1, UINT64_MAX, NC, D(keep_bytes), 0, NULL, "SIZE",
	  "and at most SIZE bytes (default {default})" },
	{ "push", 0, OPT_DAEMON, OK_URL, 0, 0, NC, D(push), 0, NULL, "URL",
	  "send to this server's /ingest (Pyroscope API)" },
	{ "otlp", 0, OPT_DAEMON, OK_URL, 0, 0, NC, D(otlp), 0, NULL, "URL",
	  "send OTLP profiles to this receiver (OTLP/HTTP:\nhttp://HOST:4318, or its profiles "
	  "endpoint)" },
	{ "otlp-protocol", 0, OPT_DAEMON, OK_STR, 0, 0, NC, D(otlp_protocol), 0, NULL, "PROTO",
	  "http/protobuf (default) or grpc (URL\nhttp://HOST:4317)" },
	{ "spool", 0, OPT_DAEMON, OK_STR, 0, 0, NC, D(spool), 0, NULL, "DIR",
	  "where profiles wait to be sent\n(default {default})" },
	{ "spool-bytes", 0, OPT_DAEMON, OK_SIZE, 1, UINT64_MAX, NC, D(spool_bytes), 0, NULL, "SIZE",
	  "spool limit; beyond it the oldest are dropped\n(default {default})" },
	{ "unwind-bytes", 0, OPT_DAEMON, OK_SIZE, 4096, UINT64_MAX, NC, D(unwind_bytes), 0, NULL,
	  "SIZE", "memory the native unwind tables may take; beyond\nit the least recently used "
	  "are evicted (default {default})" },
	{ "app-env", 0, OPT_DAEMON, OK_STR, 0, 0, NC, D(app_env), 0, NULL, "NAME",
	  "the target's variable naming its application\n(default {default}; else its script or "
	  "module)" },
	{ "stats", 0, OPT_DAEMON, OK_FLAG, 0, 0, NC, D(stats), 0, NULL, NULL,
	  "log one line of figures per interval" },
	{ "log", 0, OPT_DAEMON, OK_STR, 0, 0, NC, D(log), 0, NULL, "FILE",
	  "log here instead of stderr" },
	/* last in every command's --help */
	{ "quiet", 'q', REC, OK_FLAG, 0, 0, C(quiet), ND, 0, NULL, NULL,
	  "no status line (elapsed time, samples, processes\nand threads seen, samples lost, "
	  "unwind tables\npending: on stderr, when it is a terminal)" },
	{ "verbose", 'v', REC, OK_FLAG, 0, 0, C(s.verbose), ND, 0, NULL, NULL,
	  "say what is happening" },
	{ "help", 'h', ALL_CMDS, OK_CODE, 0, 0, NC, ND, OID_HELP, NULL, NULL, "this help" },
	{ NULL, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, NULL, NULL, NULL },
};

#undef C
#undef D

const char *opt_command_name(unsigned cmd)
{
	return cmd & OPT_RECORD ? "record" : cmd & OPT_TOP ? "top" : cmd & OPT_LEAKS ? "leaks"
									: "daemon";
}

const struct opt_row *opt_find(unsigned cmd, const char *name)
{
	for (const struct opt_row *o = opt_rows; o->name; o++)
		if ((o->cmds & cmd) && (!strcmp(o->name, name) || (o->alias && !strcmp(o->alias, name))))
			return o;
	return NULL;
}

static bool parse_bool(const char *s, bool *out)
{
	if (!strcmp(s, "true") || !strcmp(s, "yes") || !strcmp(s, "1") || !*s)
		*out = true;
	else if (!strcmp(s, "false") || !strcmp(s, "no") || !strcmp(s, "0"))
		*out = false;
	else
		return false;
	return true;
}

/* what a value of o must be, for the message */
static void wants(const struct opt_row *o, char *buf, size_t len)
{
	switch (o->kind) {
	case OK_LONG:
		snprintf(buf, len, "a whole number from %llu to %llu", (unsigned long long)o->min,
			 (unsigned long long)o->max);
		break;
	case OK_MB:
		snprintf(buf, len, "a number from %llu to %llu", (unsigned long long)o->min,
			 (unsigned long long)o->max);
		break;
	case OK_SECONDS:
		snprintf(buf, len, "a number of seconds from %llu to %llu",
			 (unsigned long long)o->min, (unsigned long long)o->max);
		break;
	case OK_SIZE:
		snprintf(buf, len, "bytes from %llu to %llu (a K, M or G suffix multiplies by 1024, "
			 "1048576 or 2^30)", (unsigned long long)o->min, (unsigned long long)o->max);
		break;
	case OK_MODE:
		mode_names(buf, len);
		break;
	default:
		snprintf(buf, len, "true or false");
	}
}

int opt_set(const struct opt_row *o, void *base, bool daemon, const char *v, char *err,
	    size_t errlen)
{
	size_t off = daemon ? o->dmn_off : o->cmd_off, size = daemon ? o->dmn_size : o->cmd_size;
	char *field = (char *)base + off, *end, what[160];
	uint64_t u;
	double d;
	long l;

	if (off == NO_FIELD || o->kind == OK_CODE) {
		set_err(err, errlen, "unknown setting '%s'", o->name);
		return -1;
	}
	errno = 0;
	switch (o->kind) {
	case OK_FLAG:
	case OK_UNFLAG: {
		bool b = true;

		if (daemon && !parse_bool(v, &b))
			goto bad;
		*(bool *)(void *)field = o->kind == OK_FLAG ? b : !b;
		return 0;
	}
	case OK_URL:
		if (*v && strncmp(v, "http://", 7) && strncmp(v, "https://", 8)) {
			set_err(err, errlen, "%s: not an http:// or https:// URL: '%.300s'", o->name, v);
			return -1;
		}
		/* fall through */
	case OK_STR:
		if (!daemon) {
			*(const char **)(void *)field = v; /* a command's: argv lives on */
			return 0;
		}
		if (strlen(v) >= size) {
			set_err(err, errlen, "%s: too long", o->name);
			return -1;
		}
		snprintf(field, size, "%s", v);
		return 0;
	case OK_MODE:
		if (mode_parse(v, (enum pyperf_mode *)(void *)field))
			goto bad;
		return 0;
	case OK_LONG:
		l = strtol(v, &end, 10);
		if (errno || end == v || *end || l < (long)o->min || (uint64_t)l > o->max)
			goto bad;
		if (size == sizeof(int))
			*(int *)(void *)field = (int)l;
		else
			*(long *)(void *)field = l;
		return 0;
	case OK_SECONDS:
		d = strtod(v, &end);
		if (errno || end == v || *end || !isfinite(d) || d < (double)o->min ||
		    d > (double)o->max)
			goto bad;
		*(double *)(void *)field = d;
		return 0;
	case OK_SIZE:
		if (!size_parse(v, &u) || u < o->min || u > o->max)
			goto bad;
		*(uint64_t *)(void *)field = u;
		return 0;
	case OK_MB:
		l = strtol(v, &end, 10);
		if (errno || end == v || *end || l < (long)o->min || (uint64_t)l > o->max)
			goto bad;
		*(uint64_t *)(void *)field = (uint64_t)l << 20;
		return 0;
	case OK_CODE:
		break;
	}
bad:
	wants(o, what, sizeof(what));
	set_err(err, errlen, "%s: bad value '%.300s' (%s)", o->name, v, what);
	return -1;
}

void opt_getopt_table(unsigned cmd, struct option *opts, size_t n, char *shorts, size_t ns)
{
	size_t k = 0, s = 0;

	if (ns)
		shorts[s++] = '+';
	for (const struct opt_row *o = opt_rows; o->name; o++) {
		int has = o->arg ? required_argument : no_argument;
		int val = OPT_INDEX_BASE + (int)(o - opt_rows);

		if (!(o->cmds & cmd))
			continue;
		if (k + 2 < n)
			opts[k++] = (struct option){ o->name, has, NULL, val };
		if (o->alias && k + 2 < n)
			opts[k++] = (struct option){ o->alias, has, NULL, val };
		if (o->short_name && s + 3 < ns) {
			shorts[s++] = o->short_name;
			if (o->arg)
				shorts[s++] = ':';
		}
	}
	opts[k] = (struct option){ NULL, 0, NULL, 0 };
	if (ns)
		shorts[s] = 0;
}

const struct opt_row *opt_of_getopt(unsigned cmd, int c)
{
	if (c >= OPT_INDEX_BASE) {
		const struct opt_row *o = &opt_rows[c - OPT_INDEX_BASE];

		return o->cmds & cmd ? o : NULL;
	}
	for (const struct opt_row *o = opt_rows; c > 0 && o->name; o++)
		if (o->short_name == c && (o->cmds & cmd))
			return o;
	return NULL;
}

int opt_command_set(const struct opt_row *o, struct record_opts *ro, const char *v,
		    const char *cmd_name)
{
	char err[512], head[8] = "";

	if (!opt_set(o, ro, false, v ? v : "", err, sizeof(err)))
		return 0;
	if (o->short_name)
		snprintf(head, sizeof(head), "-%c, ", o->short_name);
	fprintf(stderr, "pyperf-bpf: %s%s--%s (see pyperf-bpf %s--help)\n", cmd_name, head, err,
		cmd_name);
	return 2;
}

void opt_usage_line(char short_name, const char *name, const char *alias, const char *arg,
		    const char *help, const char *dflt, uint64_t max)
{
	char head[96];
	const char *h = help;
	int col = 0;

	snprintf(head, sizeof(head), "  %c%c%s--%s%s%s%s%s", short_name ? '-' : ' ',
		 short_name ? short_name : ' ', short_name ? ", " : "  ", name, alias ? ", --" : "",
		 alias ? alias : "", arg ? " " : "", arg ? arg : "");
	printf("%-26s", head);
	if (strlen(head) >= 26)
		printf(" ");
	printf(" ");
	while (*h) {
		if (*h == '\n') {
			printf("\n%27s", "");
			col = 0;
			h++;
		} else if (!strncmp(h, "{default}", 9)) {
			col += printf("%s", dflt);
			h += 9;
		} else if (!strncmp(h, "{max}", 5)) {
			col += printf("%llu", (unsigned long long)max);
			h += 5;
		} else {
			putchar(*h++);
			col++;
		}
	}
	(void)col;
	printf("\n");
}

/* a size as the options take it: 256M, 1G, 4096 */
static void size_text(uint64_t v, char *buf, size_t len)
{
	if (v && !(v & ((1ull << 30) - 1)))
		snprintf(buf, len, "%lluG", (unsigned long long)(v >> 30));
	else if (v && !(v & ((1ull << 20) - 1)))
		snprintf(buf, len, "%lluM", (unsigned long long)(v >> 20));
	else if (v && !(v & 1023))
		snprintf(buf, len, "%lluK", (unsigned long long)(v >> 10));
	else
		snprintf(buf, len, "%llu", (unsigned long long)v);
}

/* o's default as kept in defaults (at off, size bytes) */
static void default_text(const struct opt_row *o, const void *defaults, size_t off, size_t size,
			 char *buf, size_t len)
{
	const char *field = (const char *)defaults + off;

	buf[0] = 0;
	if (!defaults || off == NO_FIELD)
		return;
	switch (o->kind) {
	case OK_LONG:
		snprintf(buf, len, "%ld", size == sizeof(int) ? (long)*(const int *)(const void *)field
							: *(const long *)(const void *)field);
		break;
	case OK_SECONDS:
		snprintf(buf, len, "%g", *(const double *)(const void *)field);
		break;
	case OK_SIZE:
		size_text(*(const uint64_t *)(const void *)field, buf, len);
		break;
	case OK_MB:
		snprintf(buf, len, "%llu", (unsigned long long)(*(const uint64_t *)(const void *)field >> 20));
		break;
	case OK_MODE:
		snprintf(buf, len, "%s", mode_name(*(const enum pyperf_mode *)(const void *)field));
		break;
	case OK_STR:
	case OK_URL:
		snprintf(buf, len, "%s", field);
		break;
	default:
		break;
	}
}

void opt_usage(unsigned cmd, const void *defaults)
{
	for (const struct opt_row *o = opt_rows; o->name; o++) {
		bool daemon = cmd == OPT_DAEMON;
		char dflt[64];

		if (!(o->cmds & cmd))
			continue;
		default_text(o, defaults, daemon ? o->dmn_off : o->cmd_off,
			     daemon ? o->dmn_size : o->cmd_size, dflt, sizeof(dflt));
		opt_usage_line(o->short_name, o->name, o->alias, o->arg, o->help, dflt, o->max);
	}
}
