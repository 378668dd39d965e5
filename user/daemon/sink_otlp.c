/* sink_otlp.c - --otlp URL: the interval's profiles of every process as one
 * OTLP profiles Export request (out_otlp.c: one resource per process, the
 * tables shared), gzipped, POSTed to an OTLP/HTTP receiver through a spool
 * of its own (SPOOL/otlp), so a receiver outage or restart loses nothing up
 * to the spool's limit (see sink.h).  OTLP/HTTP (--otlp-protocol
 * http/protobuf, the default): the URL is the receiver's base
 * (http://HOST:4318, as OTEL_EXPORTER_OTLP_ENDPOINT) or, with a path, the
 * profiles endpoint itself.  OTLP/gRPC (grpc): the URL's scheme, host and
 * port (http://HOST:4317: cleartext HTTP/2). */
#include "sink.h"
#include "errmsg.h"
#include "dlog.h"
#include "output.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define OTLP_PROFILES_PATH "/v1development/profiles"

/* the profiles endpoint of url (gRPC: its scheme, host and port) */
static void endpoint(const char *url, bool grpc, char *out, size_t len)
{
	const char *host = strstr(url, "://");
	const char *path = host ? strchr(host + 3, '/') : NULL;
	size_t n = strlen(url);

	if (grpc)
		snprintf(out, len, "%.*s", (int)(path ? (size_t)(path - url) : n), url);
	else if (path && path[1])
		snprintf(out, len, "%s", url);
	else
		snprintf(out, len, "%.*s%s", (int)(path ? (size_t)(path - url) : n), url,
			 OTLP_PROFILES_PATH);
}

static const char *app_of(void *ctx, int pid, uint32_t gen)
{
	struct sink_interval *iv = ctx;

	return iv->app_of(iv->app_ctx, pid, gen);
}

/* the interval's Export request, gzipped, in a malloc'd buffer */
static char *render(struct sink_interval *iv, size_t *len)
{
	struct out_ctx c;
	char *raw = NULL, *gz = NULL;
	size_t rawlen = 0;
	FILE *f = open_memstream(&raw, &rawlen);
	int rc;

	if (!f)
		return NULL;
	sink_out_ctx(iv, &c);
	c.service_of = app_of;
	c.service_ctx = iv;
	rc = out_otlp(f, &c);
	if (fclose(f) || rc) {
		free(raw);
		return NULL;
	}
	f = open_memstream(&gz, len);
	if (!f) {
		free(raw);
		return NULL;
	}
	rc = out_gzip(f, (const uint8_t *)raw, rawlen);
	free(raw);
	if (fclose(f) || rc) {
		free(gz);
		return NULL;
	}
	return gz;
}

static void otlp_put(struct sink *s, struct sink_interval *iv)
{
	struct spool_sink *o = (struct spool_sink *)s;
	char query[128], err[512];
	size_t len;
	char *data;

	if (!iv->nimg)
		return;
	if (!(data = render(iv, &len))) {
		dlog(DLOG_ERR, "otlp: cannot write the interval's profiles: %s", strerror(errno));
		return;
	}
	iv->bytes += len;
	snprintf(query, sizeof(query), "otlp=v1development&processes=%zu&from=%llu", iv->nimg,
		 (unsigned long long)(iv->from_ns / 1000000000ull));
	if (spool_add(o->spool, query, data, len, err, sizeof(err)))
		dlog(DLOG_ERR, "%s", err);
	free(data);
}

static void otlp_configure(struct sink *s, const struct daemon_cfg *cfg)
{
	char url[1200];

	endpoint(cfg->otlp, !strcmp(cfg->otlp_protocol, "grpc"), url, sizeof(url));
	spool_configure(((struct spool_sink *)s)->spool, cfg->spool_bytes, url);
}

static const struct sink_ops otlp_ops = {
	.name = "otlp", .put = otlp_put, .configure = otlp_configure, .stats = spool_sink_stats,
	.close = spool_sink_close,
};

static struct sink *sink_otlp_open(const struct daemon_cfg *cfg, char *err, size_t errlen)
{
	struct spool_sink *o;
	char dir[1100], url[1200];

	err[0] = 0;
	if (!cfg->otlp[0])
		return NULL;
	if (!(o = calloc(1, sizeof(*o)))) {
		set_err(err, errlen, "out of memory");
		return NULL;
	}
	o->base.ops = &otlp_ops;
	/* the spool's own directory must exist first: its parent is --spool */
	if (mkdir(cfg->spool, 0700) && errno != EEXIST) {
		set_err(err, errlen, "spool %s: %s", cfg->spool, strerror(errno));
		free(o);
		return NULL;
	}
	snprintf(dir, sizeof(dir), "%s/otlp", cfg->spool);
	endpoint(cfg->otlp, !strcmp(cfg->otlp_protocol, "grpc"), url, sizeof(url));
	o->spool = spool_open(dir, cfg->spool_bytes,
			      strcmp(cfg->otlp_protocol, "grpc") ? SPOOL_OTLP_HTTP : SPOOL_OTLP_GRPC,
			      url, err, errlen);
	if (!o->spool) {
		free(o);
		return NULL;
	}
	return &o->base;
}

static bool otlp_asked(const struct daemon_cfg *c)
{
	return c->otlp[0] != 0;
}

static int otlp_check(const struct daemon_cfg *c, char *err, size_t errlen)
{
	if (strcmp(c->otlp_protocol, "http/protobuf") && strcmp(c->otlp_protocol, "grpc")) {
		set_err(err, errlen, "--otlp-protocol: http/protobuf or grpc, not '%.100s'",
			c->otlp_protocol);
		return -1;
	}
	return 0;
}

static bool otlp_restart_differs(const struct daemon_cfg *now, const struct daemon_cfg *was)
{
	return !now->otlp[0] != !was->otlp[0] || strcmp(now->otlp_protocol, was->otlp_protocol);
}

static void otlp_keep(struct daemon_cfg *now, const struct daemon_cfg *was)
{
	memcpy(now->otlp, was->otlp, sizeof(now->otlp));
	memcpy(now->otlp_protocol, was->otlp_protocol, sizeof(now->otlp_protocol));
}

const struct sink_kind sink_otlp_kind = {
	.option = "--otlp URL", .restart_note = "--otlp-protocol", .asked = otlp_asked,
	.check = otlp_check, .restart_differs = otlp_restart_differs, .keep = otlp_keep,
	.open = sink_otlp_open,
};
