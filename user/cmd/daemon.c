/* daemon.c - `pyperf-bpf daemon`: its options, then the run (user/daemon/:
 * daemon_loop.c and its sinks).  The options, their config keys and their
 * --help lines all come from daemon_config.c's one table. */
#include "daemon.h"
#include "daemon_config.h"
#include "daemon_loop.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOPTS 64

struct daemon_args {
	const char *config_path;
	struct daemon_setting args[DAEMON_MAX_SETTINGS]; /* from the command line, in order */
	int nargs;
};

/* "  -F, --frequency HZ       help", continuation lines under the help */
static void usage_line(char short_name, const char *name, const char *arg, const char *help)
{
	char head[64];
	const char *h = help;

	snprintf(head, sizeof(head), "  %c%c%s--%s%s%s", short_name ? '-' : ' ',
		 short_name ? short_name : ' ', short_name ? ", " : "  ", name, arg ? " " : "",
		 arg ? arg : "");
	printf("%-26s", head);
	if (strlen(head) >= 26)
		printf(" ");
	while (*h) {
		size_t n = strcspn(h, "\n");

		printf(" %.*s\n", (int)n, h);
		h += n;
		if (*h)
			printf("%26s", "");
		h += *h == '\n';
	}
}

static void usage(void)
{
	printf("usage: pyperf-bpf daemon [--config FILE] [options]\n"
	       "\n"
	       "Profile every CPython process on the host continuously, at a low rate, and\n"
	       "write one pprof profile per process and interval to a directory and/or a\n"
	       "Pyroscope-compatible server, and/or OTLP profiles to an OpenTelemetry\n"
	       "receiver.  SIGTERM/SIGINT write the current interval and exit; SIGHUP\n"
	       "reopens the log and reloads the configuration.\n"
	       "\n");
	usage_line('c', "config", "FILE", "settings as `key = value` lines (keys: the long\n"
		   "options below); the command line wins");
	for (const struct daemon_option *o = daemon_options; o->name; o++)
		usage_line(o->short_name, o->name, o->arg, o->help);
}

static int parse_args(struct daemon_args *d, int argc, char **argv)
{
	static struct option opts[NOPTS];
	static char shorts[NOPTS * 2 + 8];
	size_t n = 0, ns = 0;
	int c, idx;

	/* the table's options, then --config and --help */
	ns += (size_t)snprintf(shorts, sizeof(shorts), "+c:h");
	for (const struct daemon_option *o = daemon_options; o->name && n < NOPTS - 3; o++, n++) {
		opts[n] = (struct option){ o->name, o->arg ? required_argument : no_argument, NULL, 0 };
		if (o->short_name && ns + 2 < sizeof(shorts)) {
			shorts[ns++] = o->short_name;
			if (o->arg)
				shorts[ns++] = ':';
		}
	}
	opts[n++] = (struct option){ "config", required_argument, NULL, 'c' };
	opts[n++] = (struct option){ "help", no_argument, NULL, 'h' };
	opts[n] = (struct option){ NULL, 0, NULL, 0 };
	opterr = 0;
	while ((c = getopt_long(argc, argv, shorts, opts, &idx)) != -1) {
		const char *key = NULL;

		if (c == 'c') {
			d->config_path = optarg;
			continue;
		}
		if (c == 'h') {
			usage();
			exit(0);
		}
		if (c == 0)
			key = opts[idx].name;
		for (const struct daemon_option *o = daemon_options; !key && c > 0 && o->name; o++)
			if (o->short_name == c)
				key = o->name;
		if (!key) {
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

int daemon_main(int argc, char **argv)
{
	static struct daemon_args a;

	if (parse_args(&a, argc, argv))
		return 2;
	return daemon_run(a.config_path, a.args, a.nargs);
}
