/* record.c - the `record` command: a sampling session (session.c) whose
 * profile is written to every output at the end.  The files are created
 * before sampling starts (an unwritable path fails at once), written under
 * temporary names and renamed into place only when all are complete;
 * anything that fails leaves none behind. */
#include "record.h"
#include "errmsg.h"
#include "outfile.h"
#include "output.h"
#include "profile.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

struct recorder {
	const struct record_opts *o;
	struct outfile out[RECORD_MAX_OUTPUTS];
};

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
	/* one process: no process frames; whole-host mode, several -p, or a
	 * command or -p process that started children: one root frame each */
	c.proc_frames = (!r->o->s.cmd && r->o->s.npids != 1) || profile_nprocs_seen(prof) > 1;
	c.duration_s = end->secs;
	c.freq = r->o->s.freq;
	c.ncpus = (int)sysconf(_SC_NPROCESSORS_ONLN);
	c.top = r->o->top;
	memcpy(c.stats, end->stats, sizeof(c.stats));
	c.title = title;
	c.start_unix_ns = end->start_unix_ns;
	c.icicle = r->o->icicle;
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
	return 0;
}

int record_run(const struct record_opts *o)
{
	struct recorder r = { .o = o };
	struct session_hooks h = { .on_end = on_end, .ctx = &r };
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
	return rc;
}
