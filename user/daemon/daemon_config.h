/* daemon_config.h - `pyperf-bpf daemon`'s settings, from, in increasing
 * precedence: defaults, the --config file (`key = value` lines, keys are the
 * long option names, # starts a comment line), the command line.  Pure
 * parsing and checking: no side effects beyond reading the file. */
#ifndef PYPERF_DAEMON_CONFIG_H
#define PYPERF_DAEMON_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon_cfg.h"

#define DAEMON_MAX_SETTINGS 64

/* One setting as given on the command line: the long option name and its
 * value ("true" for flags). */
struct daemon_setting {
	const char *key, *value;
};

/* The settings themselves (names, kinds, bounds, where each is kept, help)
 * are the rows of the one option table that OPT_DAEMON marks
 * (user/cmd/options.c): the command line, the config file and --help read
 * them there. */

/* The defaults, into *c. */
void daemon_cfg_defaults(struct daemon_cfg *c);

/* Fill *c from the defaults, the file at config_path (NULL: none) and args
 * in order; 0, or -1 with a one-line message (naming the file and line, or
 * the option). */
int daemon_cfg_load(struct daemon_cfg *c, const char *config_path,
		    const struct daemon_setting *args, int nargs, char *err, size_t errlen);

#endif
