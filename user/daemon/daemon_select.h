/* daemon_select.h - which CPython processes the daemon profiles (--match on
 * the command name or line, --cgroup), and the application name each
 * profile carries: the target's $APP_ENV (--app-env), else the script or
 * -m module it runs, else its command name. */
#ifndef PYPERF_DAEMON_SELECT_H
#define PYPERF_DAEMON_SELECT_H

#include <regex.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon_config.h"
#include "hmap.h"

struct daemon_select {
	const struct daemon_cfg *cfg; /* match, cgroup, app_env */
	regex_t re;
	bool have_re;
	struct hmap apps;            /* (pid, image) -> its application name */
};

/* (Re)read cfg's selection (after a reload too); cfg stays the caller's. */
void select_configure(struct daemon_select *s, const struct daemon_cfg *cfg);
void select_free(struct daemon_select *s);
/* Is pid, image gen, to be profiled?  If so its application name is noted. */
/* Is pid's container the one --container names: an id or its first 4+
 * hex digits, a Kubernetes pod UID, an engine (docker, podman, containerd,
 * cri-o, kubernetes), "any" (in a container) or "none" (on the host)? */
bool select_container_matches(int pid, const char *want);
bool select_want(struct daemon_select *s, int pid, uint32_t gen);
/* The application name of pid's image gen ("python" if none was noted). */
const char *select_app(const struct daemon_select *s, int pid, uint32_t gen);
/* Forget the names of processes that are gone. */
void select_forget_gone(struct daemon_select *s);

/* The pure parts, for tests.  An application name from a command line
 * (args[0..n), NUL-terminated strings): the module after -m, else the first
 * argument that is not an option, without its directory and .py; false if
 * there is none (python -c, a bare interpreter, a package run as __main__). */
bool select_app_from_args(char *const *args, size_t n, char *out, size_t len);
/* Variable name's value from an environ block (NUL-separated, n bytes); false
 * if unset or empty. */
bool select_app_from_environ(const char *env, size_t n, const char *name, char *out, size_t len);
/* s with every byte but letters, digits, '.', '_' and '-' made '_'. */
void select_clean(char *s);

#endif
