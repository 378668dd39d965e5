/* daemon_config.c - the daemon's settings (see daemon_config.h): defaults,
 * then the --config file, then the command line, each value checked. */
#include "daemon_config.h"
#include "options.h"
#include "session.h"
#include "sink.h"
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

void daemon_cfg_defaults(struct daemon_cfg *c)
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

/* Apply one setting; 0, or -1 with a message. */
static int apply(struct daemon_cfg *c, const char *key, const char *v, char *err, size_t errlen)
{
	const struct opt_row *o = opt_find(OPT_DAEMON, key);

	if (!o) {
		set_err(err, errlen, "unknown setting '%s'", key);
		return -1;
	}
	return opt_set(o, c, true, v, err, errlen);
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

	if (!sinks_asked(c, err, errlen) || sinks_check(c, err, errlen))
		return -1;
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

	daemon_cfg_defaults(c);
	if (config_path && apply_file(c, config_path, err, errlen))
		return -1;
	for (int i = 0; i < nargs; i++)
		if (apply(c, args[i].key, args[i].value, msg, sizeof(msg))) {
			set_err(err, errlen, "--%.500s", msg);
			return -1;
		}
	return check_cfg(c, err, errlen);
}

