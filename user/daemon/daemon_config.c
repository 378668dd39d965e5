/* daemon_config.c - the daemon's settings (see daemon_config.h): defaults,
 * then the --config file, then the command line, each value checked. */
#include "daemon_config.h"
#include "session.h"
#include "errmsg.h"
#include "mode.h"
#include "pyperf.h"
#include "size.h"

#include <ctype.h>
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

/* Apply one setting; 0, or -1 with a message. */
static int apply(struct daemon_cfg *c, const char *key, const char *v, char *err, size_t errlen)
{
	char *end;
	double d;
	long l;

#define STR(name, field) \
	if (!strcmp(key, name)) \
		return set_str(c->field, sizeof(c->field), v, key, err, errlen)
	STR("match", match);
	STR("cgroup", cgroup);
	STR("container", container);
	STR("dir", dir);
	STR("group", group);
	STR("push", push);
	STR("otlp", otlp);
	STR("spool", spool);
	STR("app-env", app_env);
	STR("log", log);
#undef STR
	errno = 0;
	if (!strcmp(key, "mode")) {
		if (mode_parse(v, &c->mode))
			goto bad;
	} else if (!strcmp(key, "frequency")) {
		l = strtol(v, &end, 10);
		/* the limit of every command's -F */
		if (errno || end == v || *end || l < 1 || l > SESSION_MAX_FREQ)
			goto bad;
		c->freq = (int)l;
	} else if (!strcmp(key, "interval")) {
		d = strtod(v, &end);
		if (errno || end == v || *end || !isfinite(d) || d < 1 || d > 86400)
			goto bad;
		c->interval = d;
	} else if (!strcmp(key, "keep")) {
		l = strtol(v, &end, 10);
		if (errno || end == v || *end || l < 1)
			goto bad;
		c->keep = l;
	} else if (!strcmp(key, "keep-bytes")) {
		if (!size_parse(v, &c->keep_bytes) || !c->keep_bytes)
			goto bad;
	} else if (!strcmp(key, "spool-bytes")) {
		if (!size_parse(v, &c->spool_bytes) || !c->spool_bytes)
			goto bad;
	} else if (!strcmp(key, "unwind-bytes")) {
		if (!size_parse(v, &c->unwind_bytes) || c->unwind_bytes < 4096)
			goto bad;
	} else if (!strcmp(key, "fault-interval")) {
		if (!size_parse(v, &c->fault_bytes) || c->fault_bytes < 4096 ||
		    c->fault_bytes > (1ull << 32))
			goto bad;
	} else if (!strcmp(key, "stats")) {
		if (!parse_bool(v, &c->stats))
			goto bad;
	} else if (!strcmp(key, "no-kernel")) {
		if (!parse_bool(v, &c->no_kernel))
			goto bad;
	} else if (!strcmp(key, "gil")) {
		if (!parse_bool(v, &c->gil))
			goto bad;
	} else if (!strcmp(key, "async")) {
		if (!parse_bool(v, &c->async_stacks))
			goto bad;
	} else if (!strcmp(key, "python-only")) {
		if (!parse_bool(v, &c->python_only))
			goto bad;
	} else {
		set_err(err, errlen, "unknown setting '%s'", key);
		return -1;
	}
	return 0;
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
	if (c->push[0] && strncmp(c->push, "http://", 7) && strncmp(c->push, "https://", 8)) {
		set_err(err, errlen, "--push: not an http:// or https:// URL: '%.300s'", c->push);
		return -1;
	}
	if (c->otlp[0] && strncmp(c->otlp, "http://", 7) && strncmp(c->otlp, "https://", 8)) {
		set_err(err, errlen, "--otlp: not an http:// or https:// URL (OTLP/HTTP): '%.300s'",
			c->otlp);
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

