/* test_daemon_config.c - the daemon's settings (user/daemon/daemon_config.c):
 * defaults, a config file under the command line, sizes with units, flags,
 * and one-line errors that name the file and line or the option. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "daemon_config.h"
#include "options.h"

static char path[64];

static void write_config(const char *text)
{
	FILE *f;

	snprintf(path, sizeof(path), "/tmp/pyperf-cfg-%d", (int)getpid());
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void test_defaults_need_a_sink(void **state)
{
	struct daemon_cfg c;
	char err[256] = "";
	struct daemon_setting dir = { "dir", "/tmp/p" };

	(void)state;
	assert_int_equal(daemon_cfg_load(&c, NULL, NULL, 0, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "no sink"));
	assert_int_equal(daemon_cfg_load(&c, NULL, &dir, 1, err, sizeof(err)), 0);
	assert_int_equal(c.freq, 19);
	assert_int_equal(c.mode, MODE_CPU);
	assert_false(c.gil);
	assert_false(c.async_stacks);
	assert_true(c.interval == 60);
	assert_string_equal(c.dir, "/tmp/p");
	assert_string_equal(c.app_env, "PYPERF_SERVICE");
	assert_false(c.stats);
}

static void test_file_then_command_line(void **state)
{
	struct daemon_cfg c;
	char err[256] = "";
	struct daemon_setting args[] = { { "frequency", "49" }, { "stats", "true" } };

	(void)state;
	write_config("# a comment\n\n  frequency = 99 \ninterval=10\ndir = /var/p\n"
		     "keep-bytes = 2M\nspool-bytes=1.5GB\npython-only = yes\nmode = wall\ngil = true\n"
		     "async = yes\n");
	assert_int_equal(daemon_cfg_load(&c, path, args, 2, err, sizeof(err)), 0);
	assert_int_equal(c.mode, MODE_WALL);
	assert_true(c.gil);
	assert_true(c.async_stacks);
	assert_int_equal(c.freq, 49); /* the command line wins */
	assert_true(c.interval == 10);
	assert_string_equal(c.dir, "/var/p");
	assert_int_equal(c.keep_bytes, 2u << 20);
	assert_int_equal(c.spool_bytes, (uint64_t)(1.5 * (1ull << 30)));
	assert_true(c.python_only);
	assert_true(c.stats);
	unlink(path);
}

static void test_errors_name_where(void **state)
{
	struct daemon_cfg c;
	char err[256] = "";
	struct daemon_setting bad_freq = { "frequency", "fast" };
	struct daemon_setting bad_mode = { "mode", "idle" };
	struct daemon_setting bad_push = { "push", "ftp://x" };
	struct daemon_setting bad_re = { "match", "(" };
	struct daemon_setting dir = { "dir", "/tmp/p" };
	struct daemon_setting two[2];

	(void)state;
	write_config("dir = /p\nkeep = many\n");
	assert_int_equal(daemon_cfg_load(&c, path, NULL, 0, err, sizeof(err)), -1);
	assert_non_null(strstr(err, ":2: keep: bad value 'many'"));
	write_config("dir /p\n");
	assert_int_equal(daemon_cfg_load(&c, path, NULL, 0, err, sizeof(err)), -1);
	assert_non_null(strstr(err, ":1: expected key = value"));
	write_config("colour = blue\n");
	assert_int_equal(daemon_cfg_load(&c, path, NULL, 0, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "unknown setting 'colour'"));
	unlink(path);
	assert_int_equal(daemon_cfg_load(&c, path, NULL, 0, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "No such file"));
	assert_int_equal(daemon_cfg_load(&c, NULL, &bad_freq, 1, err, sizeof(err)), -1);
	assert_string_equal(err, "--frequency: bad value 'fast' (a whole number from 1 to 10000)");
	/* the same limit as every command's -F */
	two[0] = dir;
	two[1] = (struct daemon_setting){ "frequency", "10000" };
	assert_int_equal(daemon_cfg_load(&c, NULL, two, 2, err, sizeof(err)), 0);
	two[1].value = "10001";
	assert_int_equal(daemon_cfg_load(&c, NULL, two, 2, err, sizeof(err)), -1);
	assert_int_equal(daemon_cfg_load(&c, NULL, &bad_mode, 1, err, sizeof(err)), -1);
	assert_string_equal(err, "--mode: bad value 'idle' (cpu, wall, offcpu, faults or alloc)");
	assert_int_equal(daemon_cfg_load(&c, NULL, &bad_push, 1, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "--push: not an http"));
	two[0] = dir;
	two[1] = bad_re;
	assert_int_equal(daemon_cfg_load(&c, NULL, two, 2, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "--match: not a regular expression"));
}

static void test_faults_mode_and_its_interval(void **state)
{
	struct daemon_cfg c;
	char err[256] = "";
	struct daemon_setting ok[2] = { { "dir", "/tmp/p" }, { "fault-interval", "1M" } };
	struct daemon_setting small = { "fault-interval", "1k" };

	(void)state;
	write_config("mode = faults\n");
	assert_int_equal(daemon_cfg_load(&c, path, ok, 2, err, sizeof(err)), 0);
	assert_int_equal(c.mode, MODE_FAULTS);
	assert_int_equal(c.fault_bytes, 1u << 20);
	unlink(path);
	assert_int_equal(daemon_cfg_load(&c, NULL, ok, 1, err, sizeof(err)), 0);
	assert_int_equal(c.fault_bytes, 0); /* the sampler's default */
	assert_int_equal(daemon_cfg_load(&c, NULL, &small, 1, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "--fault-interval: bad value '1k' (bytes from 4096 to"));
}

/* The one table: every setting has a unique name and a help line, and takes
 * a value of its kind both on the command line and in the file. */
static void test_every_setting_of_the_table(void **state)
{
	struct daemon_cfg c;
	char err[256] = "", val[32], line[128];

	(void)state;
	for (const struct opt_row *o = opt_rows; o->name; o++) {
		struct daemon_setting args[2] = { { "dir", "/tmp/p" }, { o->name, val } };

		assert_non_null(o->help);
		if (!(o->cmds & OPT_DAEMON))
			continue;
		for (const struct opt_row *p = o + 1; p->name; p++)
			if (p->cmds & OPT_DAEMON)
				assert_string_not_equal(o->name, p->name);
		assert_int_not_equal(o->dmn_off, NO_FIELD);
		switch (o->kind) {
		case OK_URL: snprintf(val, sizeof(val), "http://h:1"); break;
		case OK_LONG: case OK_SECONDS: case OK_SIZE: case OK_MB:
			snprintf(val, sizeof(val), "%llu", (unsigned long long)(o->min > 1 ? o->min : 1));
			break;
		case OK_FLAG: case OK_UNFLAG: snprintf(val, sizeof(val), "true"); break;
		case OK_MODE: snprintf(val, sizeof(val), "wall"); break;
		default: /* a string: otlp-protocol takes two words only */
			snprintf(val, sizeof(val), "%s", strcmp(o->name, "otlp-protocol") ? "x" : "grpc");
		}
		assert_int_equal(daemon_cfg_load(&c, NULL, args, 2, err, sizeof(err)), 0);
		snprintf(line, sizeof(line), "dir = /tmp/p\n%s = %s\n", o->name, val);
		write_config(line);
		assert_int_equal(daemon_cfg_load(&c, path, NULL, 0, err, sizeof(err)), 0);
		unlink(path);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults_need_a_sink),
		cmocka_unit_test(test_file_then_command_line),
		cmocka_unit_test(test_errors_name_where),
		cmocka_unit_test(test_faults_mode_and_its_interval),
		cmocka_unit_test(test_every_setting_of_the_table),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
