/* daemon_config.c - the daemon's settings (see daemon_config.h): defaults,
 * then the --config file, then the command line, each value checked. */
#include "daemon_config.h"
#include "session.h"
#include "errmsg.h"
#include "mode.h"
#include "pyperf.h"
#include "size.h"

#include <ctype.h>
#include <limits.h>
#include <stddef.h>
#include <errno.h>
#include <math.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void defaults(struct daemon_cfg *c)
{
	memset(c, 0, sizeof(*c));
	c->freq = 19;
	c->interval = 60;
	c->keep = 1440;
	c->keep_bytes = 1ull << 30;
	snprintf(c->spool, sizeof(c->spool), "/var/lib/pyperf-bpf/spool");
	c->spool_bytes = 256ull << 20;
	c->unwind_bytes = (uint64_t)PYPERF_UNWIND_MB << 20;
	snprintf(c->app_env, sizeof(c->app_env), "PYPERF_SERVICE");
	snprintf(c->otlp_protocol, sizeof(c->otlp_protocol), "http/protobuf");
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

static int set_str(char *dst, size_t len, const char *v, const char *key, char *err, size_t errlen)
{
	if (strlen(v) >= len) {
		set_err(err, errlen, "%s: too long", key);
		return -1;
	}
	snprintf(dst, len, "%s", v);
	return 0;
}

#define F(field) offsetof(struct daemon_cfg, field), sizeof(((struct daemon_cfg *)0)->field)

/* Every setting, once: its name (the long option and the config key), what
 * it holds and where, its bounds, and its line in --help.  Defaults are
 * defaults()'s. */
const struct daemon_option daemon_options[] = {
	{ "frequency", 'F', DOPT_LONG, F(freq), 1, SESSION_MAX_FREQ, "HZ",
	  "samples per second per CPU (default 19)" },
	{ "mode", 0, DOPT_MODE, F(mode), 0, 0, "MODE",
	  "cpu (default), wall, offcpu, faults or alloc (see\npyperf-bpf --help)" },
	{ "fault-interval", 0, DOPT_SIZE, F(fault_bytes), 4096, 1ull << 32, "SIZE",
	  "faults: one walked fault per SIZE bytes (256K)" },
	{ "interval", 'i', DOPT_SECONDS, F(interval), 1, 86400, "SECONDS",
	  "one profile per process per interval (default 60)" },
	{ "match", 0, DOPT_STR, F(match), 0, 0, "REGEX",
	  "only processes whose name or command line matches" },
	{ "cgroup", 0, DOPT_STR, F(cgroup), 0, 0, "PATH",
	  "only processes in this cgroup (v2) or below it" },
	{ "container", 0, DOPT_STR, F(container), 0, 0, "ID",
	  "only processes in this container: its id (or its\nfirst digits), pod UID or engine "
	  "(docker, podman,\ncontainerd, cri-o, kubernetes), any, or none" },
	{ "dir", 0, DOPT_STR, F(dir), 0, 0, "DIR",
	  "write APP-PID-TIME.pb.gz files here (a directory\nmade 0700, files 0600: root's only)" },
	{ "group", 0, DOPT_STR, F(group), 0, 0, "GROUP",
	  "DIR and its files belong to GROUP, 0750 and 0640" },
	{ "keep", 0, DOPT_LONG, F(keep), 1, LONG_MAX, "N", "keep at most N files in DIR (default 1440)" },
	{ "keep-bytes", 0, DOPT_SIZE, F(keep_bytes), 1, UINT64_MAX, "SIZE",
	  "and at most SIZE bytes (default 1G)" },
	{ "push", 0, DOPT_URL, F(push), 0, 0, "URL", "send to this server's /ingest (Pyroscope API)" },
	{ "otlp", 0, DOPT_URL, F(otlp), 0, 0, "URL",
	  "send OTLP profiles to this receiver (OTLP/HTTP:\nhttp://HOST:4318, or its profiles "
	  "endpoint)" },
	{ "otlp-protocol", 0, DOPT_STR, F(otlp_protocol), 0, 0, "PROTO",
	  "http/protobuf (default) or grpc (URL\nhttp://HOST:4317)" },
	{ "spool", 0, DOPT_STR, F(spool), 0, 0, "DIR",
	  "where profiles wait to be sent\n(default /var/lib/pyperf-bpf/spool)" },
	{ "spool-bytes", 0, DOPT_SIZE, F(spool_bytes), 1, UINT64_MAX, "SIZE",
	  "spool limit; beyond it the oldest are dropped\n(default 256M)" },
	{ "unwind-bytes", 0, DOPT_SIZE, F(unwind_bytes), 4096, UINT64_MAX, "SIZE",
	  "memory the native unwind tables may take; beyond\nit the least recently used are "
	  "evicted (default 256M)" },
	{ "app-env", 0, DOPT_STR, F(app_env), 0, 0, "NAME",
	  "the target's variable naming its application\n(default PYPERF_SERVICE; else its "
	  "script or module)" },
	{ "stats", 0, DOPT_BOOL, F(stats), 0, 0, NULL, "log one line of figures per interval" },
	{ "log", 0, DOPT_STR, F(log), 0, 0, "FILE", "log here instead of stderr" },
	{ "no-kernel", 0, DOPT_BOOL, F(no_kernel), 0, 0, NULL, "no kernel frames" },
	{ "python-only", 0, DOPT_BOOL, F(python_only), 0, 0, NULL, "Python frames only" },
	{ "gil", 0, DOPT_BOOL, F(gil), 0, 0, NULL, "only samples of threads holding the GIL" },
	{ "async", 0, DOPT_BOOL, F(async_stacks), 0, 0, NULL,
	  "asyncio (CPython 3.12+): a task's frames under\n<task NAME> frames (see record --async)" },
	{ NULL, 0, 0, 0, 0, 0, 0, NULL, NULL },
};

#undef F

/* Apply one setting; 0, or -1 with a message. */
static int apply(struct daemon_cfg *c, const char *key, const char *v, char *err, size_t errlen)
{
	const struct daemon_option *o = daemon_options;
	char *field, *end;
	uint64_t u;
	double d;
	long l;

	while (o->name && strcmp(o->name, key))
		o++;
	if (!o->name) {
		set_err(err, errlen, "unknown setting '%s'", key);
		return -1;
	}
	field = (char *)c + o->off;
	errno = 0;
	switch (o->kind) {
	case DOPT_URL:
		if (*v && strncmp(v, "http://", 7) && strncmp(v, "https://", 8)) {
			set_err(err, errlen, "%s: not an http:// or https:// URL: '%.300s'", key, v);
			return -1;
		}
		/* fall through */
	case DOPT_STR:
		return set_str(field, o->size, v, key, err, errlen);
	case DOPT_MODE:
		if (mode_parse(v, (enum pyperf_mode *)(void *)field))
			goto bad;
		return 0;
	case DOPT_LONG:
		l = strtol(v, &end, 10);
		if (errno || end == v || *end || l < (long)o->min || (uint64_t)l > o->max)
			goto bad;
		if (o->size == sizeof(int))
			*(int *)(void *)field = (int)l;
		else
			*(long *)(void *)field = l;
		return 0;
	case DOPT_SECONDS:
		d = strtod(v, &end);
		if (errno || end == v || *end || !isfinite(d) || d < (double)o->min ||
		    d > (double)o->max)
			goto bad;
		*(double *)(void *)field = d;
		return 0;
	case DOPT_SIZE:
		if (!size_parse(v, &u) || u < o->min || u > o->max)
			goto bad;
		*(uint64_t *)(void *)field = u;
		return 0;
	case DOPT_BOOL:
		if (!parse_bool(v, (bool *)(void *)field))
			goto bad;
		return 0;
	}
bad:
	set_err(err, errlen, "%s: bad value '%s'", key, v);
	return -1;
}

static char *trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = 0;
	return s;
}

/* `key = value` lines; # starts a comment line */
static int apply_file(struct daemon_cfg *c, const char *path, char *err, size_t errlen)
{
	FILE *f = fopen(path, "re");
	char line[2048], msg[512];
	int lineno = 0;

	if (!f) {
		set_err(err, errlen, "config %s: %s", path, strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		char *l = trim(line), *eq, *key, *val;

		lineno++;
		if (!*l || *l == '#')
			continue;
		eq = strchr(l, '=');
		if (!eq) {
			set_err(err, errlen, "config %s:%d: expected key = value", path, lineno);
			fclose(f);
			return -1;
		}
		*eq = 0;
		key = trim(l);
		val = trim(eq + 1);
		if (apply(c, key, val, msg, sizeof(msg))) {
			set_err(err, errlen, "config %s:%d: %s", path, lineno, msg);
			fclose(f);
			return -1;
		}
	}
	fclose(f);
	return 0;
}

static int check_cfg(const struct daemon_cfg *c, char *err, size_t errlen)
{
	regex_t re;

	if (!c->dir[0] && !c->push[0] && !c->otlp[0]) {
		set_err(err, errlen, "no sink: give --dir DIR, --push URL and/or --otlp URL");
		return -1;
	}
	if (strcmp(c->otlp_protocol, "http/protobuf") && strcmp(c->otlp_protocol, "grpc")) {
		set_err(err, errlen, "--otlp-protocol: http/protobuf or grpc, not '%.100s'",
			c->otlp_protocol);
		return -1;
	}
	if (c->match[0]) {
		if (regcomp(&re, c->match, REG_EXTENDED | REG_NOSUB)) {
			set_err(err, errlen, "--match: not a regular expression: '%s'", c->match);
			return -1;
		}
		regfree(&re);
	}
	return 0;
}

/* defaults, then the config file, then the command line */
int daemon_cfg_load(struct daemon_cfg *c, const char *config_path,
		    const struct daemon_setting *args, int nargs, char *err, size_t errlen)
{
	char msg[512];

	defaults(c);
	if (config_path && apply_file(c, config_path, err, errlen))
		return -1;
	for (int i = 0; i < nargs; i++)
		if (apply(c, args[i].key, args[i].value, msg, sizeof(msg))) {
			set_err(err, errlen, "--%.500s", msg);
			return -1;
		}
	return check_cfg(c, err, errlen);
}

