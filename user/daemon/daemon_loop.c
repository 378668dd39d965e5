/* daemon_loop.c - `pyperf-bpf daemon`'s run: a recording that never ends, cut
 * into intervals.
 *
 * It is a whole-host sampling session (session.c) at a low rate, with hooks:
 *   want      a new CPython process was found: keep it if it matches --match
 *             (comm or command line), --cgroup and --container, and note its application
 *             name (the target's $PYPERF_SERVICE, else its script or module;
 *             daemon_select.c);
 *   on_drain  every second; when an interval is over (or the daemon stops),
 *             hand the profiles of the processes that have samples to the
 *             sinks (sink.h),
 *             log the --stats line, start the next interval with the
 *             profile's counts reset, and forget processes that are gone;
 *   on_hup    reopen the log file and reload the configuration.
 * Sinks (sink.h): --dir keeps files named APP-PID-TIME.pb.gz, pruned to
 * --keep files and --keep-bytes; --push queues each pprof in a spool
 * (spool.c) for a Pyroscope server, --otlp each interval's OTLP request in
 * another for an OpenTelemetry receiver; their threads send them in order.
 * A profile is written before the counts that made it are dropped, so a
 * process that exits mid-interval keeps its samples, named.
 *
 * Options come from, in increasing precedence (daemon_config.c): defaults,
 * the --config file (`key = value` lines, keys are the long option names),
 * the command line.
 * SIGHUP re-reads the file and applies the command line over it again. */
#include "daemon_loop.h"
#include "daemon_select.h"
#include "sink.h"
#include "naming.h"
#include "clock.h"
#include "env.h"
#include "dlog.h"
#include "outfile.h"
#include "output.h"
#include "profile.h"
#include "session.h"

#include <errno.h>
#include <math.h>
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
	const struct daemon_setting *args; /* from the command line, in order */
	int nargs;
	struct daemon_select sel;    /* which processes, their application names */
	struct sink *sinks[SINK_KINDS_MAX]; /* those asked for, in sink_kinds' order */
	size_t nsinks;
	char host[256];
	double interval_start;       /* seconds since the recording started */
	uint64_t interval_unix_ns;   /* wall-clock time of that */
	uint64_t prev_stats[STAT_NR];
	double prev_cpu;
	uint64_t prev_sent_bytes, prev_dropped;
	uint64_t intervals;
	struct session_kept kept;    /* native names, as the last prune left them */
	double stack_idle_s;         /* a live process's stack not counted this long is
				      * let go (PYPERF_IDLE_CLOSE_S, else STACK_IDLE_S) */
};

#define STACK_IDLE_S 300.0

static bool want(void *ctx, int pid, uint32_t gen)
{
	return select_want(&((struct daemon *)ctx)->sel, pid, gen);
}

/* ---- writing an interval ---- */

static const char *app_of(void *ctx, int pid, uint32_t gen)
{
	return select_app(&((struct daemon *)ctx)->sel, pid, gen);
}

void sink_out_ctx(const struct sink_interval *iv, struct out_ctx *c)
{
	memset(c, 0, sizeof(*c));
	c->prof = iv->prof;
	c->lines = true;
	c->duration_s = iv->secs;
	c->freq = iv->cfg->freq;
	c->mode = iv->cfg->mode;
	c->ncpus = (int)sysconf(_SC_NPROCESSORS_ONLN);
	c->start_unix_ns = iv->from_ns;
}

void spool_sink_stats(struct sink *s, struct spool_stats *st)
{
	struct spool_stats o;

	spool_get_stats(((struct spool_sink *)s)->spool, &o);
	spool_stats_add(st, &o);
}

size_t spool_sink_close(struct sink *s)
{
	size_t left = spool_close(((struct spool_sink *)s)->spool, 5.0); /* a last try */

	free(s);
	return left;
}

const char *sink_pprof(struct sink_interval *iv, struct sink_image *img, size_t *len)
{
	struct out_ctx c;
	FILE *f;
	int rc;

	if (img->pprof || img->pprof_errno) {
		*len = img->pprof_len;
		errno = img->pprof_errno;
		return img->pprof;
	}
	f = open_memstream(&img->pprof, &img->pprof_len);
	if (!f) {
		img->pprof_errno = errno;
		return NULL;
	}
	sink_out_ctx(iv, &c);
	c.title = img->app;
	c.pid = img->pid;
	c.gen = img->gen;
	rc = out_pprof(f, &c);
	if (fclose(f) || rc) {
		img->pprof_errno = errno ? errno : EIO;
		free(img->pprof);
		img->pprof = NULL;
		dlog(DLOG_ERR, "pid %d: cannot write its profile: %s", img->pid,
		     strerror(img->pprof_errno));
		return NULL;
	}
	iv->bytes += img->pprof_len;
	*len = img->pprof_len;
	return img->pprof;
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
	size_t stacks, code;
	uint64_t lost = st[STAT_MAP_FULL] - d->prev_stats[STAT_MAP_FULL] +
			st[STAT_RINGBUF_FULL] - d->prev_stats[STAT_RINGBUF_FULL] + prof->unattributed;

	profile_kept(prof, &stacks, &code);
	for (size_t i = 0; i < d->nsinks; i++) /* the spools' figures, summed */
		if (d->sinks[i]->ops->stats)
			d->sinks[i]->ops->stats(d->sinks[i], &ss);
	/* counts are samples, nanoseconds of thread time (--mode wall, offcpu) or
	 * bytes (--mode faults) */
	dlog(DLOG_INFO, "stats: interval %.1f s, %llu %s, %zu processes, %llu dropped "
	     "samples, %zu profile bytes written, %llu bytes sent (%llu in all), %llu spooled "
	     "(%llu bytes), %llu profiles dropped, %llu corrupt spool files, own CPU %.3f %%, "
	     "RSS %.1f MB, names of %llu binaries (%llu open, %llu freed so far), %llu "
	     "functions, %zu stacks and %zu Python functions kept",
	     secs, (unsigned long long)prof->total, mode_desc(d->cfg.mode)->quantity == MQ_SAMPLES ? "samples" : mode_is_bytes(d->cfg.mode) ? "bytes" : "ns", nprocs, (unsigned long long)lost, (size_t)bytes,
	     (unsigned long long)(ss.sent_bytes - d->prev_sent_bytes),
	     (unsigned long long)ss.sent_bytes, (unsigned long long)ss.pending,
	     (unsigned long long)ss.pending_bytes, (unsigned long long)ss.dropped,
	     (unsigned long long)ss.corrupt, secs >= 0.5 ? 100.0 * (cpu - d->prev_cpu) / secs : 0.0,
	     rss_kb() / 1024.0, (unsigned long long)d->kept.binaries,
	     (unsigned long long)d->kept.open, (unsigned long long)d->kept.swept_binaries,
	     (unsigned long long)d->kept.functions, stacks, code);
	d->prev_sent_bytes = ss.sent_bytes;
	d->prev_cpu = cpu;
}

/* the pids of m's values (each starting with its pid) that are gone, for
 * gone_pids; false when out of memory */
static bool note_gone(const struct hmap *m, bool (*eligible)(const void *val), int **v,
		      size_t *n, size_t *cap)
{
	hmap_for_each(m, e) {
		int pid;

		memcpy(&pid, e->val, sizeof(pid));
		if ((eligible && !eligible(e->val)) || !(kill(pid, 0) && errno == ESRCH))
			continue;
		if (*n == *cap) {
			int *w = realloc(*v, (*cap = *cap ? 2 * *cap : 256) * sizeof(*w));

			if (!w)
				return false;
			*v = w;
		}
		(*v)[(*n)++] = pid;
	}
	return true;
}

static bool no_samples(const void *val)
{
	return !((const struct pproc *)val)->samples;
}

/* Processes that are gone: their names and stacks go too, every one of
 * them (a host starting ten short Pythons a second has 600 to forget after
 * a minute's interval).  Only once an interval passed without samples: one
 * that exits just after a drain may still have counts in the sampler's
 * other map, which need its stacks. */
static void forget_gone(struct daemon *d, struct profile *prof)
{
	int *gone = NULL;
	size_t n = 0, cap = 0;

	note_gone(&prof->procs, no_samples, &gone, &n, &cap);
	for (size_t i = 0; i < n; i++)
		profile_forget_proc(prof, gone[i]);
	n = 0; /* and processes it could not profile that are gone */
	note_gone(&prof->refused, NULL, &gone, &n, &cap);
	for (size_t i = 0; i < n; i++)
		free(hmap_del(&prof->refused, &gone[i], sizeof(int)));
	free(gone);
	/* and the names of their images: every process it chose has one,
	 * profiled or not */
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
	struct sink_interval iv = {
		.prof = prof, .cfg = &d->cfg, .host = d->host, .from_ns = d->interval_unix_ns,
		.end_ns = clock_unix_ns(), .secs = elapsed - d->interval_start,
		.app_of = app_of, .app_ctx = d,
	};
	struct app_key *img = images(prof, &iv.nimg);
	size_t nprocs = 0;

	iv.img = calloc(iv.nimg + 1, sizeof(*iv.img));
	if (!iv.img)
		iv.nimg = 0;
	for (size_t i = 0; i < iv.nimg; i++) {
		iv.img[i].pid = img[i].pid;
		iv.img[i].gen = img[i].gen;
		iv.img[i].app = select_app(&d->sel, img[i].pid, img[i].gen);
	}
	for (size_t i = 0; i < d->nsinks; i++)
		d->sinks[i]->ops->put(d->sinks[i], &iv);
	for (size_t i = 0; i < iv.nimg; i++) {
		nprocs += !iv.img[i].pprof_errno;
		free(iv.img[i].pprof);
	}
	free(iv.img);
	free(img);
	if (d->cfg.stats)
		log_stats(d, prof, nprocs, iv.bytes, st, iv.secs);
	memcpy(d->prev_stats, st, sizeof(d->prev_stats));
	forget_gone(d, prof); /* before the reset: it needs this interval's counts */
	profile_reset_counts(prof);
	/* and of the processes that live on, the stacks they stopped using */
	profile_trim(prof, (uint32_t)ceil(d->stack_idle_s / d->cfg.interval));
	d->interval_start = elapsed;
	d->interval_unix_ns = iv.end_ns;
	d->intervals++;
}

static void on_pruned(void *ctx, const struct session_kept *kept)
{
	((struct daemon *)ctx)->kept = *kept;
}

static void on_drain(void *ctx, struct profile *prof, const uint64_t *st, double elapsed,
		     bool final)
{
	struct daemon *d = ctx;

	if (final || elapsed - d->interval_start >= d->cfg.interval - 0.5)
		end_interval(d, prof, st, elapsed);
}

/* the session's words (a process it cannot profile, and why) go to the log */
static void on_message(void *ctx, const char *msg)
{
	dlog(DLOG_WARN, "%s", msg);
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
	    strcmp(c.spool, d->cfg.spool) || sinks_restart_differs(&c, &d->cfg)) {
		char sinks[256];

		sinks_restart_settings(sinks, sizeof(sinks));
		dlog(DLOG_WARN, "reload: frequency, mode, frame kinds, log, spool directory and %s "
		     "take a restart; the rest is applied", sinks);
		c.freq = d->cfg.freq;
		c.mode = d->cfg.mode;
		c.fault_bytes = d->cfg.fault_bytes;
		c.gil = d->cfg.gil;
		c.async_stacks = d->cfg.async_stacks;
		c.no_kernel = d->cfg.no_kernel;
		c.python_only = d->cfg.python_only;
		memcpy(c.log, d->cfg.log, sizeof(c.log));
		memcpy(c.spool, d->cfg.spool, sizeof(c.spool));
		sinks_restart_keep(&c, &d->cfg);
	}
	for (size_t i = 0; i < d->nsinks; i++)
		d->sinks[i]->ops->configure(d->sinks[i], &c);
	d->cfg = c;
	select_configure(&d->sel, &d->cfg);
	dlog(DLOG_INFO, "reloaded the configuration (applies to processes found from now on)");
}

/* a last try to send what the spools hold, then the sinks go */
static void close_sinks(struct daemon *d)
{
	for (size_t i = 0; i < d->nsinks; i++) {
		const char *name = d->sinks[i]->ops->name;
		size_t left = d->sinks[i]->ops->close(d->sinks[i]);

		if (left)
			dlog(DLOG_WARN, "%s: %zu profiles stay in the spool %s for the next start",
			     name, left, d->cfg.spool);
	}
	d->nsinks = 0;
}

int daemon_run(const char *config_path, const struct daemon_setting *args, int nargs)
{
	struct daemon d;
	struct session_opts o;
	struct session_hooks h = { .on_drain = on_drain, .want = want, .on_hup = on_hup,
				   .on_message = on_message, .on_pruned = on_pruned,
				   .ctx = &d };
	struct env env;
	char err[1024];
	int rc;

	memset(&d, 0, sizeof(d));
	d.config_path = config_path;
	d.args = args;
	d.nargs = nargs;
	if (daemon_cfg_load(&d.cfg, d.config_path, d.args, d.nargs, err, sizeof(err)) || env_read(&env, err, sizeof(err))) {
		fprintf(stderr, "pyperf-bpf: daemon: %s\n", err);
		return 2;
	}
	if (dlog_open(d.cfg.log[0] ? d.cfg.log : NULL)) {
		fprintf(stderr, "pyperf-bpf: daemon: cannot open the log %s: %s\n", d.cfg.log,
			strerror(errno));
		return 1;
	}
	for (size_t i = 0; i < nsink_kinds; i++) {
		struct sink *s = sink_kinds[i]->open(&d.cfg, err, sizeof(err));

		if (s) {
			d.sinks[d.nsinks++] = s;
		} else if (err[0]) {
			fprintf(stderr, "pyperf-bpf: daemon: %s\n", err);
			close_sinks(&d);
			return 1;
		}
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
	o.idle_close_s = env.idle_close_s;
	d.stack_idle_s = env.idle_close_s ? env.idle_close_s : STACK_IDLE_S;
	o.debuginfo_path = env.debuginfo_path;
	o.vmlinux_btf = env.vmlinux_btf;
	o.no_bpf_loop = env.no_bpf_loop;
	dlog(DLOG_INFO, "profiling CPython processes (%s mode) at %d Hz, one profile per process "
	     "every %.0f s%s%s%s%s%s%s", mode_name(d.cfg.mode),
	     d.cfg.freq, d.cfg.interval, d.cfg.dir[0] ? " to " : "", d.cfg.dir,
	     d.cfg.push[0] ? ", pushed to " : "", d.cfg.push,
	     d.cfg.otlp[0] ? ", OTLP to " : "", d.cfg.otlp);
	rc = session_run(&o, &h);
	close_sinks(&d);
	dlog(DLOG_INFO, "stopped after %llu intervals", (unsigned long long)d.intervals);
	select_free(&d.sel);
	return rc;
}
