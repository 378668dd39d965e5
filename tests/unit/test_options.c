/* test_options.c - cmocka tests for the one option table (user/cli/options.c):
 * every row's field has the size its kind writes, for each command that
 * takes it; names (and aliases) are unique within each command; every row
 * has help; a value of its kind is kept where the command keeps it, and a
 * bad one is refused with a message naming the option. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "daemon_config.h"
#include "options.h"
#include "record.h"

static const unsigned commands[] = { OPT_RECORD, OPT_TOP, OPT_LEAKS, OPT_DAEMON };

static void check_size(const struct opt_row *o, size_t size, bool daemon)
{
	switch (o->kind) {
	case OK_FLAG:
	case OK_UNFLAG:
		assert_int_equal(size, sizeof(bool));
		break;
	case OK_LONG:
		assert_true(size == sizeof(int) || size == sizeof(long));
		break;
	case OK_SECONDS:
		assert_int_equal(size, sizeof(double));
		break;
	case OK_SIZE:
	case OK_MB:
		assert_int_equal(size, sizeof(uint64_t));
		break;
	case OK_MODE:
		assert_int_equal(size, sizeof(enum pyperf_mode));
		break;
	case OK_STR:
	case OK_URL:
		if (daemon)
			assert_true(size > sizeof(const char *)); /* a char array */
		else
			assert_int_equal(size, sizeof(const char *));
		break;
	case OK_CODE:
		break;
	}
}

static void every_row_fits_its_field(void **state)
{
	(void)state;
	for (const struct opt_row *o = opt_rows; o->name; o++) {
		assert_non_null(o->help);
		assert_true(o->cmds != 0);
		if (o->kind == OK_CODE)
			continue;
		if (o->cmds & OPT_COMMANDS) {
			assert_int_not_equal(o->cmd_off, NO_FIELD);
			check_size(o, o->cmd_size, false);
		}
		if (o->cmds & OPT_DAEMON) {
			assert_int_not_equal(o->dmn_off, NO_FIELD);
			check_size(o, o->dmn_size, true);
		}
	}
}

static void names_are_unique_per_command(void **state)
{
	(void)state;
	for (size_t c = 0; c < sizeof(commands) / sizeof(commands[0]); c++)
		for (const struct opt_row *o = opt_rows; o->name; o++) {
			if (!(o->cmds & commands[c]))
				continue;
			assert_ptr_equal(opt_find(commands[c], o->name), o);
			if (o->alias)
				assert_ptr_equal(opt_find(commands[c], o->alias), o);
			for (const struct opt_row *p = o + 1; p->name; p++)
				if ((p->cmds & commands[c]) && o->short_name)
					assert_int_not_equal(o->short_name, p->short_name);
		}
}

static void values_land_where_the_command_keeps_them(void **state)
{
	struct record_opts r;
	struct daemon_cfg d;
	char err[256];

	(void)state;
	memset(&r, 0, sizeof(r));
	assert_int_equal(opt_set(opt_find(OPT_RECORD, "frequency"), &r, false, "497", err,
				 sizeof(err)), 0);
	assert_int_equal(r.s.freq, 497);
	assert_int_equal(opt_set(opt_find(OPT_RECORD, "unwind-mb"), &r, false, "3", err,
				 sizeof(err)), 0);
	assert_int_equal(r.s.unwind_bytes, 3u << 20);
	assert_int_equal(opt_set(opt_find(OPT_RECORD, "interval"), &r, false, "64K", err,
				 sizeof(err)), 0);
	assert_int_equal(r.s.interval, 65536);
	assert_int_equal(opt_set(opt_find(OPT_RECORD, "function"), &r, false, "", err,
				 sizeof(err)), 0);
	assert_true(r.no_lines);
	r.s.no_native = true;
	assert_int_equal(opt_set(opt_find(OPT_TOP, "native"), &r, false, "", err, sizeof(err)), 0);
	assert_false(r.s.no_native);
	assert_int_equal(opt_set(opt_find(OPT_TOP, "rows"), &r, false, "7", err, sizeof(err)), 0);
	assert_int_equal(r.top, 7);
	assert_int_equal(opt_set(opt_find(OPT_RECORD, "frequency"), &r, false, "0", err,
				 sizeof(err)), -1);
	assert_non_null(strstr(err, "frequency: bad value '0'"));
	/* the same row for the daemon, in its own struct; "interval" is
	 * another row there (seconds, not bytes) */
	daemon_cfg_defaults(&d);
	assert_int_equal(d.freq, 19);
	assert_int_equal(opt_set(opt_find(OPT_DAEMON, "frequency"), &d, true, "49", err,
				 sizeof(err)), 0);
	assert_int_equal(d.freq, 49);
	assert_int_equal(opt_set(opt_find(OPT_DAEMON, "interval"), &d, true, "30", err,
				 sizeof(err)), 0);
	assert_true(d.interval == 30.0);
	assert_int_equal(opt_set(opt_find(OPT_DAEMON, "gil"), &d, true, "no", err, sizeof(err)), 0);
	assert_false(d.gil);
	assert_null(opt_find(OPT_DAEMON, "rows"));
	assert_null(opt_find(OPT_RECORD, "min-age"));
	assert_non_null(opt_find(OPT_LEAKS, "min-age"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_row_fits_its_field),
		cmocka_unit_test(names_are_unique_per_command),
		cmocka_unit_test(values_land_where_the_command_keeps_them),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
