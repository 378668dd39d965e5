/* sink_pyroscope.c - --push URL: each process's pprof of the interval to a
 * Pyroscope-compatible server's /ingest, through the spool (see sink.h). */
#include "sink.h"
#include "errmsg.h"
#include "dlog.h"
#include "mode.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void url_escape(const char *s, char *out, size_t len)
{
	size_t n = 0;

	for (; *s && n + 4 < len; s++) {
		if (isalnum((unsigned char)*s) || strchr("-._~", *s))
			out[n++] = *s;
		else
			n += (size_t)snprintf(out + n, len - n, "%%%02X", (unsigned char)*s);
	}
	out[n] = 0;
}

/* The profile of [from_ns, end_ns) named APP{hostname=HOST,pid=PID}
 * (Pyroscope makes APP its service_name label, and refuses a profile that
 * names that label twice): with sampleRate=FREQ in cpu mode, with
 * units=nanoseconds or bytes in the other modes (the values are the
 * quantity itself). */
static void push_one(struct spool *sp, const struct sink_interval *iv, const struct sink_image *img,
		     const char *data, size_t len)
{
	char name[512], ename[1600], query[2048], rate[64], err[512];
	enum pyperf_mode mode = iv->cfg->mode;

	snprintf(name, sizeof(name), "%s{hostname=%s,pid=%d}", img->app, iv->host, img->pid);
	url_escape(name, ename, sizeof(ename));
	if (mode_desc(mode)->quantity == MQ_SAMPLES)
		snprintf(rate, sizeof(rate), "sampleRate=%d", iv->cfg->freq);
	else if (mode_is_bytes(mode))
		snprintf(rate, sizeof(rate), "units=bytes&aggregationType=sum");
	else
		snprintf(rate, sizeof(rate), "units=nanoseconds&aggregationType=sum");
	snprintf(query, sizeof(query), "name=%s&from=%llu&until=%llu&format=pprof&%s"
		 "&spyName=pyperf-bpf", ename,
		 (unsigned long long)(iv->from_ns / 1000000000ull),
		 (unsigned long long)((iv->end_ns + 999999999ull) / 1000000000ull), rate);
	if (spool_add(sp, query, data, len, err, sizeof(err)))
		dlog(DLOG_ERR, "%s", err);
}

static void pyroscope_put(struct sink *s, struct sink_interval *iv)
{
	struct spool_sink *p = (struct spool_sink *)s;

	for (size_t i = 0; i < iv->nimg; i++) {
		size_t len;
		const char *data = sink_pprof(iv, &iv->img[i], &len);

		if (data)
			push_one(p->spool, iv, &iv->img[i], data, len);
	}
}

static void pyroscope_configure(struct sink *s, const struct daemon_cfg *cfg)
{
	spool_configure(((struct spool_sink *)s)->spool, cfg->spool_bytes, cfg->push);
}

static const struct sink_ops pyroscope_ops = {
	.name = "push", .put = pyroscope_put, .configure = pyroscope_configure,
	.stats = spool_sink_stats, .close = spool_sink_close,
};

static struct sink *sink_pyroscope_open(const struct daemon_cfg *cfg, char *err,
					size_t errlen)
{
	struct spool_sink *p;

	err[0] = 0;
	if (!cfg->push[0])
		return NULL;
	if (!(p = calloc(1, sizeof(*p)))) {
		set_err(err, errlen, "out of memory");
		return NULL;
	}
	p->base.ops = &pyroscope_ops;
	p->spool = spool_open(cfg->spool, cfg->spool_bytes, SPOOL_PYROSCOPE, cfg->push, err, errlen);
	if (!p->spool) {
		free(p);
		return NULL;
	}
	return &p->base;
}

static bool push_asked(const struct daemon_cfg *c)
{
	return c->push[0] != 0;
}

static bool push_restart_differs(const struct daemon_cfg *now, const struct daemon_cfg *was)
{
	return !now->push[0] != !was->push[0];
}

static void push_keep(struct daemon_cfg *now, const struct daemon_cfg *was)
{
	memcpy(now->push, was->push, sizeof(now->push));
}

const struct sink_kind sink_pyroscope_kind = {
	.option = "--push URL", .asked = push_asked, .restart_differs = push_restart_differs,
	.keep = push_keep, .open = sink_pyroscope_open,
};
