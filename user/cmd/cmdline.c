/* cmdline.c - what the commands' option parsers share (see cmdline.h). */
#include "cmdline.h"
#include "env.h"
#include "sampler.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cmdline_fail(const char *fmt, const char *arg)
{
	fprintf(stderr, "pyperf-bpf: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, " (see pyperf-bpf --help)\n");
	return 2;
}

bool cmdline_long(const char *s, long lo, long hi, long *out)
{
	char *end;

	errno = 0;
	*out = strtol(s, &end, 10);
	return !errno && end != s && !*end && *out >= lo && *out <= hi;
}

int cmdline_pid(const char *s)
{
	long v;

	return cmdline_long(s, 1, INT_MAX, &v) ? (int)v : -1;
}

int cmdline_pids(const char *arg, struct session_opts *o)
{
	char *copy = strdup(arg), *rest = copy, *t;

	if (!copy)
		return -1;
	while ((t = strsep(&rest, ","))) {
		char *end;
		long v;
		int *pids;

		errno = 0;
		v = strtol(t, &end, 10);
		if (errno || *end || end == t || v <= 0 || v > INT_MAX) {
			free(copy);
			return -1;
		}
		pids = realloc(o->pids, (o->npids + 1) * sizeof(*pids));
		if (!pids) {
			free(copy);
			return -1;
		}
		o->pids = pids;
		o->pids[o->npids++] = (int)v;
	}
	free(copy);
	return o->npids ? 0 : -1;
}

int cmdline_env(struct session_opts *o)
{
	struct env e;
	char err[256];

	if (env_read(&e, err, sizeof(err))) {
		fprintf(stderr, "pyperf-bpf: %s\n", err);
		return 2;
	}
	if (e.counts_entries)
		o->counts_entries = e.counts_entries;
	if (e.unwind_bytes)
		o->unwind_bytes = e.unwind_bytes;
	o->offcpu_slots = e.offcpu_slots;
	o->no_stack_scan = e.no_stack_scan;
	o->idle_close_s = e.idle_close_s;
	o->debuginfo_path = e.debuginfo_path;
	o->vmlinux_btf = e.vmlinux_btf;
	o->no_bpf_loop = e.no_bpf_loop;
	return 0;
}

/* the usage error with cmd's name in front of the option */
static int fail_cmd(const char *cmd, const char *what, const char *arg)
{
	fprintf(stderr, "pyperf-bpf: %s%s'%s' (see pyperf-bpf --help)\n", cmd, what, arg);
	return 2;
}

int cmdline_duration(const char *cmd, const char *arg, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(arg, &end);
	if (errno || end == arg || *end || !isfinite(v) || v <= 0 || v > 1e8)
		return fail_cmd(cmd, "-d: the duration must be a positive number of seconds, not ",
				arg);
	*out = v;
	return 0;
}

int cmdline_events(const char *arg, unsigned *out)
{
	char word[32];
	const char *p = arg, *end;
	unsigned ev = 0;

	do {
		size_t n;

		end = strchr(p, ',');
		n = end ? (size_t)(end - p) : strlen(p);
		if (n >= sizeof(word))
			n = sizeof(word) - 1;
		memcpy(word, p, n);
		word[n] = 0;
		if (!strcmp(word, "none") && !p[n] && p == arg)
			ev = 0;
		else if (!strcmp(word, "gc"))
			ev |= EVENTS_GC;
		else if (!strcmp(word, "import"))
			ev |= EVENTS_IMPORT;
		else
			return fail_cmd("", "--events: gc or import (comma-separated), or none, not ",
					word);
		p = end + 1;
	} while (end);
	*out = ev;
	return 0;
}

