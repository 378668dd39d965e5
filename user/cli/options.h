/* options.h - the one table of options: every option of record, top and
 * leaks and every setting of the daemon (its long option and its config
 * file key) is one row here, with the commands that take it, what it
 * holds and its bounds, where each command keeps it, and its --help line.
 * The commands' getopt tables, their value checks and the options part of
 * their --help, and the daemon's config keys, are all made from it; a
 * default is the command's own (the struct it parses into starts with
 * it), and --help prints it from there. */
#ifndef PYPERF_OPTIONS_H
#define PYPERF_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The commands an option belongs to. */
enum {
	OPT_RECORD = 1,
	OPT_TOP = 2,
	OPT_LEAKS = 4,
	OPT_DAEMON = 8,
	OPT_COMMANDS = OPT_RECORD | OPT_TOP | OPT_LEAKS, /* they parse into struct record_opts */
};

/* What an option holds. */
enum opt_kind {
	OK_FLAG,                     /* no value on the command line; true/false in a file */
	OK_UNFLAG,                   /* a flag that clears its bool (top --native) */
	OK_LONG,                     /* a whole number in [min, max] (int, long or size_t) */
	OK_SECONDS,                  /* a number of seconds in [min, max] (double) */
	OK_SIZE,                     /* a byte size, 64K or 1G, in [min, max] (uint64_t) */
	OK_MB,                       /* megabytes in [min, max], kept as bytes (uint64_t) */
	OK_MODE,                     /* a sampling mode (enum pyperf_mode) */
	OK_STR,                      /* text: a char array (daemon), a const char * (commands) */
	OK_URL,                      /* an http:// or https:// URL, or "" (a char array) */
	OK_CODE,                     /* the command's own code handles it (its id) */
};

/* Where a command keeps an option's value: an offset and size in the
 * struct it parses into (NO_FIELD: nowhere, the command's code). */
#define NO_FIELD SIZE_MAX

struct opt_row {
	const char *name;            /* --NAME; the daemon's config key */
	char short_name;             /* -X, 0: none */
	unsigned cmds;               /* OPT_* */
	enum opt_kind kind;
	uint64_t min, max;
	size_t cmd_off, cmd_size;    /* in struct record_opts (record, top, leaks) */
	size_t dmn_off, dmn_size;    /* in struct daemon_cfg (daemon) */
	int id;                      /* OK_CODE: what the command's code knows it by */
	const char *alias;           /* another long name for it, or NULL */
	const char *arg;             /* its value's name in --help; NULL: a flag */
	const char *help;            /* "{default}" there is the command's default */
};

/* OK_CODE ids */
enum {
	OID_PID = 1, OID_DURATION, OID_OUTPUT, OID_FORMAT, OID_EVENTS, OID_TIMELINE_MINUTES,
	OID_HELP,
};

/* every row, ended by one whose name is NULL */
extern const struct opt_row opt_rows[];

/* "record", "top", "leaks" or "daemon": the first command of cmds */
const char *opt_command_name(unsigned cmds);
/* The row named `name` (or by its alias) that command `cmd` takes; NULL. */
const struct opt_row *opt_find(unsigned cmd, const char *name);

/* Check value v of row o and keep it where the command keeps it: in base,
 * a struct record_opts, or with daemon a struct daemon_cfg (its strings are
 * char arrays, its flags take true/false, yes/no, 1/0: the command line
 * gives "true").  0, or -1 with a message naming the option and what it
 * takes. */
int opt_set(const struct opt_row *o, void *base, bool daemon, const char *v, char *err,
	    size_t errlen);
struct record_opts;
/* record, top and leaks: the value of row o (NULL: a flag) into *ro; 0, or
 * 2 after a one-line message (cmd_name: "" for record, "top " ...) */
int opt_command_set(const struct opt_row *o, struct record_opts *ro, const char *v,
		    const char *cmd_name);

/* getopt_long's table and short options for command cmd, from the rows
 * (each returns the row's index + OPT_INDEX_BASE; short options their
 * letter); into opts (room for n) and shorts (room for ns), with a leading
 * '+' (stop at the first word that is not an option). */
#define OPT_INDEX_BASE 1000
struct option;
void opt_getopt_table(unsigned cmd, struct option *opts, size_t n, char *shorts, size_t ns);
/* The row getopt_long's return c stands for (NULL: none of cmd's). */
const struct opt_row *opt_of_getopt(unsigned cmd, int c);

/* The options part of command cmd's --help, on stdout: a line per row
 * ("  -F, --frequency HZ       help"), {default} from defaults (the
 * command's struct as it starts). */
void opt_usage(unsigned cmd, const void *defaults);
/* One help line as opt_usage writes it (the daemon's --config); in help,
 * {default} is dflt and {max} is max. */
void opt_usage_line(char short_name, const char *name, const char *alias, const char *arg,
		    const char *help, const char *dflt, uint64_t max);

#endif
