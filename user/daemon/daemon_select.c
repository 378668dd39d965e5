/* daemon_select.c - see daemon_select.h. */
#include "daemon_select.h"
#include "container.h"
#include "pyproc.h"

#include <ctype.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define APP_LEN 64

struct app_key {
	int pid;
	uint32_t gen;
};

void select_configure(struct daemon_select *s, const struct daemon_cfg *cfg)
{
	if (s->have_re)
		regfree(&s->re);
	s->cfg = cfg;
	s->have_re = cfg->match[0] && regcomp(&s->re, cfg->match, REG_EXTENDED | REG_NOSUB) == 0;
}

void select_free(struct daemon_select *s)
{
	if (s->have_re)
		regfree(&s->re);
	hmap_free(&s->apps, free);
	memset(s, 0, sizeof(*s));
}

static bool read_file(const char *path, char *buf, size_t len, size_t *got)
{
	FILE *f = fopen(path, "re");

	if (!f)
		return false;
	*got = fread(buf, 1, len - 1, f);
	buf[*got] = 0;
	fclose(f);
	return true;
}

static bool in_cgroup(int pid, const char *want)
{
	char path[64], buf[4096], *line, *save = NULL;
	size_t n, wl = strlen(want);

	snprintf(path, sizeof(path), "/proc/%d/cgroup", pid);
	if (!read_file(path, buf, sizeof(buf), &n))
		return false;
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (strncmp(line, "0::", 3))
			continue; /* the unified (v2) hierarchy only */
		line += 3;
		while (wl > 1 && want[wl - 1] == '/')
			wl--;
		if (!strncmp(line, want, wl) && (line[wl] == 0 || line[wl] == '/' || wl == 1))
			return true;
	}
	return false;
}

void select_clean(char *s)
{
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && !strchr("._-", *s))
			*s = '_';
}

bool select_app_from_environ(const char *env, size_t n, const char *name, char *out, size_t len)
{
	size_t nl = strlen(name);

	if (!nl)
		return false;
	for (size_t i = 0; i < n; i += strnlen(env + i, n - i) + 1)
		if (n - i > nl + 1 && !strncmp(env + i, name, nl) && env[i + nl] == '=' &&
		    env[i + nl + 1]) {
			snprintf(out, len, "%.*s", (int)strnlen(env + i + nl + 1, n - i - nl - 1),
				 env + i + nl + 1);
			select_clean(out);
			return true;
		}
	return false;
}

bool select_app_from_args(char *const *args, size_t n, char *out, size_t len)
{
	for (size_t i = 1; i < n; i++) {
		const char *a = args[i], *base, *dot;

		if (!strcmp(a, "-m") && i + 1 < n) {
			snprintf(out, len, "%s", args[i + 1]);
			select_clean(out);
			return *out != 0;
		}
		if (!strcmp(a, "-c"))
			return false;
		if (a[0] == '-') {
			if ((!strcmp(a, "-W") || !strcmp(a, "-X")) && i + 1 < n)
				i++; /* options with a separate value */
			continue;
		}
		base = strrchr(a, '/') ? strrchr(a, '/') + 1 : a;
		dot = strrchr(base, '.');
		snprintf(out, len, "%.*s",
			 (int)(dot && !strcmp(dot, ".py") ? dot - base : (long)strlen(base)), base);
		if (!strcmp(out, "__main__") || !*out) /* a package run as a directory */
			return false;
		select_clean(out);
		return true;
	}
	return false;
}

/* $app_env of the target, else the script or -m module it runs, else comm */
static void app_name(const struct daemon_select *s, int pid, char *out, size_t len)
{
	static char buf[1 << 16];
	char path[64], *args[64];
	size_t n, nargs = 0;

	snprintf(path, sizeof(path), "/proc/%d/environ", pid);
	if (read_file(path, buf, sizeof(buf), &n) &&
	    select_app_from_environ(buf, n, s->cfg->app_env, out, len))
		return;
	snprintf(path, sizeof(path), "/proc/%d/cmdline", pid);
	if (read_file(path, buf, sizeof(buf), &n))
		for (size_t i = 0; i < n && nargs < 64; i += strlen(buf + i) + 1)
			args[nargs++] = buf + i;
	if (select_app_from_args(args, nargs, out, len))
		return;
	proc_comm(pid, out, len);
	select_clean(out);
}

bool select_container_matches(int pid, const char *want)
{
	struct container c;
	bool in = container_of_pid(pid, &c);

	if (!strcmp(want, "none"))
		return !in;
	if (!in)
		return false;
	if (!strcmp(want, "any") || !strcmp(want, c.engine))
		return true;
	/* an id, or its first digits as `docker ps` shows them, or a pod UID */
	return (strlen(want) >= 4 && !strncmp(c.id, want, strlen(want))) ||
	       (c.pod[0] && !strcmp(c.pod, want));
}

bool select_want(struct daemon_select *s, int pid, uint32_t gen)
{
	struct app_key k = { pid, gen };
	char comm[64], cmdline[256], *name;

	if (s->have_re) {
		proc_comm(pid, comm, sizeof(comm));
		proc_cmdline(pid, cmdline, sizeof(cmdline));
		if (regexec(&s->re, comm, 0, NULL, 0) && regexec(&s->re, cmdline, 0, NULL, 0))
			return false;
	}
	if (s->cfg->cgroup[0] && !in_cgroup(pid, s->cfg->cgroup))
		return false;
	if (s->cfg->container[0] && !select_container_matches(pid, s->cfg->container))
		return false;
	name = calloc(1, APP_LEN);
	if (!name || hmap_put(&s->apps, &k, sizeof(k), name)) {
		free(name);
		return true; /* profiled all the same, as "python" */
	}
	app_name(s, pid, name, APP_LEN);
	return true;
}

const char *select_app(const struct daemon_select *s, int pid, uint32_t gen)
{
	struct app_key k = { pid, gen };
	const char *name = hmap_get(&s->apps, &k, sizeof(k));

	return name && name[0] ? name : "python";
}

void select_forget_gone(struct daemon_select *s)
{
	struct hmap keep = { 0 };

	hmap_for_each(&s->apps, e) {
		const struct app_key *k = e->key;

		if ((kill(k->pid, 0) && errno == ESRCH) || hmap_put(&keep, k, sizeof(*k), e->val))
			free(e->val);
	}
	hmap_free(&s->apps, NULL);
	s->apps = keep;
}
