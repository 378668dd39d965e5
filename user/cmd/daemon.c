/* daemon.c - `pyperf-bpf daemon`: its options, then the run (user/daemon/:
 * daemon_loop.c and its sinks).  The options, their config keys and their
 * --help lines all come from the one option table (options.c). */
#include "daemon.h"
#include "daemon_config.h"
#include "daemon_loop.h"
#include "options.h"

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

static void usage(void)
{
	struct daemon_cfg defaults;

	daemon_cfg_defaults(&defaults);
	printf("usage: pyperf-bpf daemon [--config FILE] [options]\n"
	       "\n"
	       "Profile every CPython process on the host continuously, at a low rate, and\n"
	       "write one pprof profile per process and interval to a directory and/or a\n"
	       "Pyroscope-compatible server, and/or OTLP profiles to an OpenTelemetry\n"
	       "receiver.  SIGTERM/SIGINT write the current interval and exit; SIGHUP\n"
	       "reopens the log and reloads the configuration.\n"
	       "\n");
	opt_usage_line('c', "config", NULL, "FILE", "settings as `key = value` lines (keys: the "
		       "long\noptions below); the command line wins", "", 0);
	opt_usage(OPT_DAEMON, &defaults);
	opt_usage_line('h', "help", NULL, NULL, "this help", "", 0);
}

static int parse_args(struct daemon_args *d, int argc, char **argv)
{
	static struct option opts[NOPTS];
	static char shorts[NOPTS * 2 + 8];
	size_t n = 0;
	int c;

	/* the table's options, then --config and --help */
	opt_getopt_table(OPT_DAEMON, opts, NOPTS - 2, shorts, sizeof(shorts) - 4);
	while (opts[n].name)
		n++;
	strcat(shorts, "c:h");
	opts[n++] = (struct option){ "config", required_argument, NULL, 'c' };
	opts[n++] = (struct option){ "help", no_argument, NULL, 'h' };
	opts[n] = (struct option){ NULL, 0, NULL, 0 };
	opterr = 0;
	while ((c = getopt_long(argc, argv, shorts, opts, NULL)) != -1) {
		const struct opt_row *o;

		if (c == 'c') {
			d->config_path = optarg;
			continue;
		}
		if (c == 'h') {
			usage();
			exit(0);
		}
		if (!(o = opt_of_getopt(OPT_DAEMON, c))) {
			fprintf(stderr, "pyperf-bpf: daemon: unknown or incomplete option '%s' (see "
				"pyperf-bpf daemon --help)\n", argv[optind - 1]);
			return -1;
		}
		if (d->nargs == DAEMON_MAX_SETTINGS) {
			fprintf(stderr, "pyperf-bpf: daemon: too many options\n");
			return -1;
		}
		d->args[d->nargs].key = o->name;
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
