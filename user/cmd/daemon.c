/* daemon.c - `pyperf-bpf daemon`: its options, then the run (user/daemon/:
 * daemon_loop.c and its sinks). */
#include "daemon.h"
#include "daemon_config.h"
#include "daemon_loop.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

struct daemon_args {
	const char *config_path;
	struct daemon_setting args[DAEMON_MAX_SETTINGS]; /* from the command line, in order */
	int nargs;
};

static void usage(void)
{
	printf("usage: pyperf-bpf daemon [--config FILE] [options]\n"
	       "\n"
	       "Profile every CPython process on the host continuously, at a low rate, and\n"
	       "write one pprof profile per process and interval to a directory and/or a\n"
	       "Pyroscope-compatible server, and/or OTLP profiles to an OpenTelemetry receiver.  SIGTERM/SIGINT write the current interval and\n"
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
	       "      --container ID       only processes in this container: its id (or its\n"
	       "                           first digits), pod UID or engine (docker, podman,\n"
	       "                           containerd, cri-o, kubernetes), any, or none\n"
	       "      --dir DIR            write APP-PID-TIME.pb.gz files here (a directory\n"
	       "                           made 0700, files 0600: root's only)\n"
	       "      --group GROUP        DIR and its files belong to GROUP, 0750 and 0640\n"
	       "      --keep N             keep at most N files in DIR (default 1440)\n"
	       "      --keep-bytes SIZE    and at most SIZE bytes (default 1G)\n"
	       "      --push URL           send to this server's /ingest (Pyroscope API)\n"
	       "      --otlp URL           send OTLP profiles to this OTLP/HTTP receiver\n"
	       "                           (http://HOST:4318, or its profiles endpoint)\n"
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

static int parse_args(struct daemon_args *d, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "frequency", required_argument, NULL, 'F' },
		{ "mode", required_argument, NULL, 0 },
		{ "fault-interval", required_argument, NULL, 0 },
		{ "interval", required_argument, NULL, 'i' },
		{ "match", required_argument, NULL, 0 },
		{ "cgroup", required_argument, NULL, 0 },
		{ "container", required_argument, NULL, 0 },
		{ "dir", required_argument, NULL, 0 },
		{ "group", required_argument, NULL, 0 },
		{ "keep", required_argument, NULL, 0 },
		{ "keep-bytes", required_argument, NULL, 0 },
		{ "push", required_argument, NULL, 0 },
		{ "otlp", required_argument, NULL, 0 },
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


int daemon_main(int argc, char **argv)
{
	static struct daemon_args a;

	if (parse_args(&a, argc, argv))
		return 2;
	return daemon_run(a.config_path, a.args, a.nargs);
}
