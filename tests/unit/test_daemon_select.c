/* test_daemon_select.c - the daemon's application names (cmd/daemon_select.c)
 * from a command line and an environ block, as /proc gives them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "daemon_select.h"

#define NARGS(a) (sizeof(a) / sizeof((a)[0]))

static void app_from_the_command_line(void **state)
{
	char *script[] = { "python3", "-u", "-X", "dev", "/srv/app/worker.py", "--port", "80" };
	char *module[] = { "python3", "-O", "-m", "celery", "worker" };
	char *dashc[] = { "python3", "-c", "print(1)" };
	char *bare[] = { "python3" };
	char *package[] = { "python3", "/srv/app/__main__.py" };
	char *odd[] = { "python3", "my app (v2).py" };
	char out[64];

	(void)state;
	assert_true(select_app_from_args(script, NARGS(script), out, sizeof(out)));
	assert_string_equal(out, "worker");
	assert_true(select_app_from_args(module, NARGS(module), out, sizeof(out)));
	assert_string_equal(out, "celery");
	assert_false(select_app_from_args(dashc, NARGS(dashc), out, sizeof(out)));
	assert_false(select_app_from_args(bare, NARGS(bare), out, sizeof(out)));
	assert_false(select_app_from_args(package, NARGS(package), out, sizeof(out)));
	assert_true(select_app_from_args(odd, NARGS(odd), out, sizeof(out)));
	assert_string_equal(out, "my_app__v2_"); /* safe in a file name and a label */
}

static void app_from_the_environment(void **state)
{
	static const char env[] = "HOME=/root\0PYPERF_SERVICE=\0APP=billing api\0APPX=no";
	char out[64];

	(void)state;
	assert_true(select_app_from_environ(env, sizeof(env), "APP", out, sizeof(out)));
	assert_string_equal(out, "billing_api");
	/* set but empty, absent, a longer name that starts alike, no name */
	assert_false(select_app_from_environ(env, sizeof(env), "PYPERF_SERVICE", out, sizeof(out)));
	assert_false(select_app_from_environ(env, sizeof(env), "AP", out, sizeof(out)));
	assert_false(select_app_from_environ(env, sizeof(env), "USER", out, sizeof(out)));
	assert_false(select_app_from_environ(env, sizeof(env), "", out, sizeof(out)));
	/* a block cut in the middle of the last value: what is there, no further */
	assert_true(select_app_from_environ(env, sizeof(env) - 2, "APPX", out, sizeof(out)));
	assert_string_equal(out, "n");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(app_from_the_command_line),
		cmocka_unit_test(app_from_the_environment),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
