/* daemon.c - `pyperf-bpf daemon`: a recording that never ends, cut into
 * intervals.
 *
 * It is a whole-host sampling session (session.c) at a low rate, with hooks:
 *   want      a new CPython process was found: keep it if it matches --match
 *             (comm or command line) and --cgroup, and note its application
 *             name (the target's $PYPERF_SERVICE, else its script or module;
 *             daemon_select.c);
 *   on_drain  every second; when an interval is over (or the daemon stops),
 *             write one pprof per process that has samples to the sinks,
 *             log the --stats line, start the next interval with the
 *             profile's counts reset, and forget processes that are gone;
 *   on_hup    reopen the log file and reload the configuration.
 * Sinks (daemon_sinks.c): --dir keeps files named APP-PID-TIME.pb.gz, pruned
 * to --keep files and --keep-bytes; --push queues each profile in the spool
 * (spool.c), whose thread sends them in order.  A profile is written before the counts that
 * made it are dropped, so a process that exits mid-interval keeps its
 * samples, named.
 *
 * Options come from, in increasing precedence (daemon_config.c): defaults,
 * the --config file (`key = value` lines, keys are the long option names),
 * the command line.
 * SIGHUP re-reads the file and applies the command line over it again. */
#include "daemon.h"
#include "daemon_config.h"
#include "daemon_select.h"
#include "daemon_sinks.h"
#include "naming.h"
#include "clock.h"
#include "env.h"
#include "dlog.h"
#include "outfile.h"
#include "output.h"
#include "profile.h"
#include "session.h"
#include "spool.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

struct app_key {
	int pid;
	uint32_t gen;
};

struct daemon {
	struct daemon_cfg cfg;
	const char *config_path;
	struct daemon_setting args[DAEMON_MAX_SETTINGS]; /* from the command line, in order */
	int nargs;
	struct daemon_select sel;    /* which processes, their application names */
	struct spool *spool;
	char host[256];
	double interval_start;       /* seconds since the recording started */
	uint64_t interval_unix_ns;   /* wall-clock time of that */
	uint64_t prev_stats[STAT_NR];
	double prev_cpu;
	uint64_t prev_sent_bytes, prev_dropped;
	uint64_t intervals;
};

/* ---- options ---- */

static void usage(void)
{
	printf("usage: pyperf-bpf daemon [--config FILE] [options]\n"
	       "\n"
	       "Profile every CPython process on the host continuously, at a low rate, and\n"
	       "write one pprof profile per process and interval to a directory and/or a\n"
	       "Pyroscope-compatible server.  SIGTERM/SIGINT write the current interval and\n"
	       "exit; SIGHUP reopens the log and reloads the configuration.\n"
	       "\n"
	       "  -c, --config FILE        settings as `key = value` lines (keys: the long\n"
	       "                           options below); the command line wins\n"
	       "  -F, --frequency HZ       samples per second per CPU (default 19)\n"
	       "      --mode MODE          cpu (default), wall, offcpu, faults or alloc (see\n"
	       "                           pyperf-bpf --help)\n"
	       "      --fault-interval SIZE  faults: one walked fault per SIZE bytes (256K)\n"
	       "  -i, --interval SECONDS   one profile per process per interval (default 60)\n"
	       "      --match REGEX        only processes whose name or command line matches\n"
	       "      --cgroup PATH        only processes in this cgroup (v2) or below it\n"
	       "      --dir DIR            write APP-PID-TIME.pb.gz files here\n"
	       "      --keep N             keep at most N files in DIR (default 1440)\n"
	       "      --keep-bytes SIZE    and at most SIZE bytes (default 1G)\n"
	       "      --push URL           send to this server's /ingest (Pyroscope API)\n"
	       "      --spool DIR          where profiles wait to be sent\n"
	       "                           (default /var/lib/pyperf-bpf/spool)\n"
	       "      --spool-bytes SIZE   spool limit; beyond it the oldest are dropped\n"
	       "                           (default 256M)\n"
	       "      --unwind-bytes SIZE  memory the native unwind tables may take; beyond\n"
	       "                           it the least recently used are evicted (default 256M)\n"
	       "      --app-env NAME       the target's variable naming its application\n"
	       "                           (default PYPERF_SERVICE; else its script or module)\n"
	       "      --stats              log one line of figures per interval\n"
	       "      --log FILE           log here instead of stderr\n"
	       "      --no-kernel          no kernel frames\n"
	       "      --python-only        Python frames only\n"
	       "      --gil                only samples of threads holding the GIL\n"
	       "      --async              asyncio (CPython 3.12+): a task's frames under\n"
	       "                           <task NAME> frames (see record --async)\n");
}

static int parse_args(struct daemon *d, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "frequency", required_argument, NULL, 'F' },
		{ "mode", required_argument, NULL, 0 },
		{ "fault-interval", required_argument, NULL, 0 },
		{ "interval", required_argument, NULL, 'i' },
		{ "match", required_argument, NULL, 0 },
		{ "cgroup", required_argument, NULL, 0 },
		{ "dir", required_argument, NULL, 0 },
		{ "keep", required_argument, NULL, 0 },
		{ "keep-bytes", required_argument, NULL, 0 },
		{ "push", required_argument, NULL, 0 },
		{ "spool", required_argument, NULL, 0 },
		{ "spool-bytes", required_argument, NULL, 0 },
		{ "unwind-bytes", required_argument, NULL, 0 },
		{ "app-env", required_argument, NULL, 0 },
		{ "log", required_argument, NULL, 0 },
		{ "stats", no_argument, NULL, 0 },
		{ "no-kernel", no_argument, NULL, 0 },
		{ "python-only", no_argument, NULL, 0 },
		{ "gil", no_argument, NULL, 0 },
		{ "async", no_argument, NULL, 0 },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c, idx;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "+c:F:i:h", opts, &idx)) != -1) {
		const char *key;

		switch (c) {
		case 'c':
			d->config_path = optarg;
			continue;
		case 'h':
			usage();
			exit(0);
		case 'F':
			key = "frequency";
			break;
		case 'i':
			key = "interval";
			break;
		case 0:
			key = opts[idx].name;
			break;
		default:
			fprintf(stderr, "pyperf-bpf: daemon: unknown or incomplete option '%s' (see "
				"pyperf-bpf daemon --help)\n", argv[optind - 1]);
			return -1;
		}
		if (d->nargs == DAEMON_MAX_SETTINGS) {
			fprintf(stderr, "pyperf-bpf: daemon: too many options\n");
			return -1;
		}
		d->args[d->nargs].key = key;
		d->args[d->nargs++].value = optarg ? optarg : "true";
	}
	if (optind < argc) {
		fprintf(stderr, "pyperf-bpf: daemon: unexpected argument '%s'\n", argv[optind]);
		return -1;
	}
	return 0;
}

static bool want(void *ctx, int pid, uint32_t gen)
{
	return select_want(&((struct daemon *)ctx)->sel, pid, gen);
}

/* ---- writing an interval ---- */

/* pid's profile for the interval as gzipped pprof in a malloc'd buffer */
static char *render_pprof(struct daemon *d, struct profile *prof, int pid, uint32_t gen,
			  double secs, size_t *len)
{
	struct out_ctx c;
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);
	int rc;

	if (!f)
		return NULL;
	memset(&c, 0, sizeof(c));
	c.prof = prof;
	c.lines = true;
	c.duration_s = secs;
	c.freq = d->cfg.freq;
	c.mode = d->cfg.mode;
	c.ncpus = (int)sysconf(_SC_NPROCESSORS_ONLN);
	c.title = select_app(&d->sel, pid, gen);
	c.start_unix_ns = d->interval_unix_ns;
	c.pid = pid;
	c.gen = gen;
	rc = out_pprof(f, &c);
	if (fclose(f) || rc) {
		free(buf);
		return NULL;
	}
	return buf;
}

static long rss_kb(void)
{
	long pages = 0, resident = 0;
	FILE *f = fopen("/proc/self/statm", "re");

	if (f) {
		if (fscanf(f, "%ld %ld", &pages, &resident) != 2)
			resident = 0;
		fclose(f);
	}
	return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

static void log_stats(struct daemon *d, const struct profile *prof, size_t nprocs,
		      uint64_t bytes, const uint64_t *st, double secs)
{
	struct spool_stats ss = { 0 };
	double cpu = clock_cpu_s(NULL);
	uint64_t lost = st[STAT_MAP_FULL] - d->prev_stats[STAT_MAP_FULL] +
			st[STAT_RINGBUF_FULL] - d->prev_stats[STAT_RINGBUF_FULL] + prof->unattributed;

	if (d->spool)
		spool_get_stats(d->spool, &ss);
	/* counts are samples, nanoseconds of thread time (--mode wall, offcpu) or
	 * bytes (--mode faults) */
	dlog(DLOG_INFO, "stats: interval %.1f s, %llu %s, %zu processes, %llu dropped "
	     "samples, %zu profile bytes written, %llu bytes sent (%llu in all), %llu spooled "
	     "(%llu bytes), %llu profiles dropped, %llu corrupt spool files, own CPU %.3f %%, "
	     "RSS %.1f MB",
	     secs, (unsigned long long)prof->total, d->cfg.mode == MODE_CPU ? "samples" : mode_is_bytes(d->cfg.mode) ? "bytes" : "ns", nprocs, (unsigned long long)lost, (size_t)bytes,
	     (unsigned long long)(ss.sent_bytes - d->prev_sent_bytes),
	     (unsigned long long)ss.sent_bytes, (unsigned long long)ss.pending,
	     (unsigned long long)ss.pending_bytes, (unsigned long long)ss.dropped,
	     (unsigned long long)ss.corrupt, secs >= 0.5 ? 100.0 * (cpu - d->prev_cpu) / secs : 0.0, rss_kb() / 1024.0);
	d->prev_sent_bytes = ss.sent_bytes;
	d->prev_cpu = cpu;
}

/* Processes that are gone: their names and stacks go too.  Only once an
 * interval passed without samples: one that exits just after a drain may
 * still have counts in the sampler's other map, which need its stacks. */
static void forget_gone(struct daemon *d, struct profile *prof)
{
	int gone[256];
	size_t n = 0;

	hmap_for_each(&prof->procs, e) {
		const struct pproc *pp = e->val;

		if (n < 256 && !pp->samples && kill(pp->pid, 0) && errno == ESRCH)
			gone[n++] = pp->pid;
	}
	for (size_t i = 0; i < n; i++)
		profile_forget_proc(prof, gone[i]);
	if (n) /* and the names of their images */
		select_forget_gone(&d->sel);
}

static int cmp_key(const void *a, const void *b)
{
	const struct app_key *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->gen < y->gen ? -1 : x->gen > y->gen;
}

/* the process images with samples in the interval, sorted (caller frees) */
static struct app_key *images(const struct profile *prof, size_t *n)
{
	size_t ns, k = 0;
	struct psample **v = profile_samples(prof, &ns);
	struct app_key *out = malloc((ns + 1) * sizeof(*out));

	if (!v || !out) {
		free(v);
		free(out);
		*n = 0;
		return NULL;
	}
	for (size_t i = 0; i < ns; i++) {
		out[i].pid = (int)v[i]->stack->pid;
		out[i].gen = v[i]->stack->gen;
	}
	free(v);
	qsort(out, ns, sizeof(*out), cmp_key);
	for (size_t i = 0; i < ns; i++)
		if (!k || cmp_key(&out[k - 1], &out[i]))
			out[k++] = out[i];
	*n = k;
	return out;
}

static void end_interval(struct daemon *d, struct profile *prof, const uint64_t *st,
			 double elapsed)
{
	double secs = elapsed - d->interval_start;
	uint64_t end_ns = clock_unix_ns(), bytes = 0;
	size_t nprocs = 0;

	size_t nimg = 0;
	struct app_key *img = images(prof, &nimg);

	for (size_t i = 0; i < nimg; i++) {
		int pid = img[i].pid;
		const char *app = select_app(&d->sel, pid, img[i].gen);
		size_t len;
		char *data = render_pprof(d, prof, pid, img[i].gen, secs, &len);

		if (!data) {
			dlog(DLOG_ERR, "pid %d: cannot write its profile: %s", pid, strerror(errno));
			continue;
		}
		nprocs++;
		bytes += len;
		if (d->cfg.dir[0])
			sink_dir_write(d->cfg.dir, app, pid, end_ns, data, len);
		if (d->spool)
			sink_push(d->spool, d->host, app, pid, d->interval_unix_ns, end_ns, d->cfg.freq, d->cfg.mode,
				  data, len);
		free(data);
	}
	free(img);
	if (d->cfg.dir[0])
		sink_dir_prune(d->cfg.dir, d->cfg.keep, d->cfg.keep_bytes);
	if (d->cfg.stats)
		log_stats(d, prof, nprocs, bytes, st, secs);
	memcpy(d->prev_stats, st, sizeof(d->prev_stats));
	forget_gone(d, prof); /* before the reset: it needs this interval's counts */
	profile_reset_counts(prof);
	d->interval_start = elapsed;
	d->interval_unix_ns = end_ns;
	d->intervals++;
}

static void on_drain(void *ctx, struct profile *prof, const uint64_t *st, double elapsed,
		     bool final)
{
	struct daemon *d = ctx;

	if (final || elapsed - d->interval_start >= d->cfg.interval - 0.5)
		end_interval(d, prof, st, elapsed);
}

/* ---- SIGHUP ---- */

static void on_hup(void *ctx)
{
	struct daemon *d = ctx;
	struct daemon_cfg c;
	char err[1024];

	if (dlog_reopen())
		dlog(DLOG_ERR, "cannot reopen the log %s: %s", d->cfg.log, strerror(errno));
	if (daemon_cfg_load(&c, d->config_path, d->args, d->nargs, err, sizeof(err))) {
		dlog(DLOG_ERR, "reload: %s; the configuration is unchanged", err);
		return;
	}
	if (c.freq != d->cfg.freq || c.mode != d->cfg.mode || c.gil != d->cfg.gil ||
	    c.async_stacks != d->cfg.async_stacks ||
	    c.fault_bytes != d->cfg.fault_bytes ||
	    c.no_kernel != d->cfg.no_kernel ||
	    c.python_only != d->cfg.python_only || strcmp(c.log, d->cfg.log) ||
	    strcmp(c.spool, d->cfg.spool) || !c.push[0] != !d->cfg.push[0]) {
		dlog(DLOG_WARN, "reload: frequency, mode, frame kinds, log, spool directory and turning "
		     "--push on or off take a restart; the rest is applied");
		c.freq = d->cfg.freq;
		c.mode = d->cfg.mode;
		c.fault_bytes = d->cfg.fault_bytes;
		c.gil = d->cfg.gil;
		c.async_stacks = d->cfg.async_stacks;
		c.no_kernel = d->cfg.no_kernel;
		c.python_only = d->cfg.python_only;
		memcpy(c.log, d->cfg.log, sizeof(c.log));
		memcpy(c.spool, d->cfg.spool, sizeof(c.spool));
		memcpy(c.push, d->cfg.push, sizeof(c.push));
	}
	if (d->spool)
		spool_configure(d->spool, c.spool_bytes, c.push);
	d->cfg = c;
	select_configure(&d->sel, &d->cfg);
	dlog(DLOG_INFO, "reloaded the configuration (applies to processes found from now on)");
}

int daemon_main(int argc, char **argv)
{
	struct daemon d;
	struct session_opts o;
	struct session_hooks h = { .on_drain = on_drain, .want = want, .on_hup = on_hup,
				   .ctx = &d };
	struct env env;
	char err[1024];
	int rc;

	memset(&d, 0, sizeof(d));
	if (parse_args(&d, argc, argv))
		return 2;
	if (daemon_cfg_load(&d.cfg, d.config_path, d.args, d.nargs, err, sizeof(err)) || env_read(&env, err, sizeof(err))) {
		fprintf(stderr, "pyperf-bpf: daemon: %s\n", err);
		return 2;
	}
	if (dlog_open(d.cfg.log[0] ? d.cfg.log : NULL)) {
		fprintf(stderr, "pyperf-bpf: daemon: cannot open the log %s: %s\n", d.cfg.log,
			strerror(errno));
		return 1;
	}
	if (d.cfg.dir[0] && mkdir(d.cfg.dir, 0700) && errno != EEXIST) {
		fprintf(stderr, "pyperf-bpf: daemon: --dir %s: %s\n", d.cfg.dir, strerror(errno));
		return 1;
	}
	if (d.cfg.push[0] &&
	    !(d.spool = spool_open(d.cfg.spool, d.cfg.spool_bytes, d.cfg.push, err, sizeof(err)))) {
		fprintf(stderr, "pyperf-bpf: daemon: %s\n", err);
		return 1;
	}
	select_configure(&d.sel, &d.cfg);
	gethostname(d.host, sizeof(d.host) - 1);
	select_clean(d.host);
	d.interval_unix_ns = clock_unix_ns();
	d.prev_cpu = clock_cpu_s(NULL);
	memset(&o, 0, sizeof(o));
	session_install_signals(&h); /* a SIGTERM from now on still ends in a flush */
	o.freq = d.cfg.freq;
	o.mode = d.cfg.mode;
	o.interval = d.cfg.fault_bytes;
	o.gil_only = d.cfg.gil;
	o.async_stacks = d.cfg.async_stacks;
	o.no_kernel = d.cfg.no_kernel || d.cfg.python_only;
	o.no_native = d.cfg.python_only;
	/* At a low rate most samples would be the first of their stack since
	 * the last drain, and cost an announcement: drain less often, but often
	 * enough to cut intervals on time. */
	o.drain_ms = (unsigned)(d.cfg.interval * 1000 / 4);
	if (o.drain_ms < 1000)
		o.drain_ms = 1000;
	if (o.drain_ms > 5000)
		o.drain_ms = 5000;
	o.unwind_bytes = env.unwind_bytes ? env.unwind_bytes : d.cfg.unwind_bytes;
	o.counts_entries = env.counts_entries;
	o.offcpu_slots = env.offcpu_slots;
	o.no_stack_scan = env.no_stack_scan;
	o.debuginfo_path = env.debuginfo_path;
	o.vmlinux_btf = env.vmlinux_btf;
	dlog(DLOG_INFO, "profiling CPython processes (%s mode) at %d Hz, one profile per process "
	     "every %.0f s%s%s%s%s", mode_name(d.cfg.mode),
	     d.cfg.freq, d.cfg.interval, d.cfg.dir[0] ? " to " : "", d.cfg.dir,
	     d.cfg.push[0] ? ", pushed to " : "", d.cfg.push);
	rc = session_run(&o, &h);
	if (d.spool) {
		size_t left = spool_close(d.spool, 5.0); /* a last try to send the rest */

		if (left)
			dlog(DLOG_WARN, "%zu profiles stay in the spool %s for the next start", left,
			     d.cfg.spool);
	}
	dlog(DLOG_INFO, "stopped after %llu intervals", (unsigned long long)d.intervals);
	select_free(&d.sel);
	return rc;
}
