/* test_execlibc.c - the C library a command is expected to map
 * (user/lib/execlibc.c), against the one it does map: each program is run
 * and reads its own /proc/self/maps. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "testutil.h"
#include "execlibc.h"

#define SID_PY314 "/opt/pyperf-sid/usr/bin/python3.14"

/* the guess for cmd names the file that `shell` (a command line that
 * prints the path of the libc.so mapping) shows mapped */
static void guess_is_mapped(const char *cmd, const char *shell)
{
	char guess[4096], *out = command_output(shell), *nl;
	struct stat a, b;

	nl = strchr(out, '\n');
	if (nl)
		*nl = '\0';
	if (!*out)
		fail_msg("%s maps no libc.so", cmd);
	if (exec_libc_guess(cmd, guess, sizeof(guess)))
		fail_msg("no guess for %s (it maps %s)", cmd, out);
	if (stat(guess, &a) || stat(out, &b) || a.st_dev != b.st_dev || a.st_ino != b.st_ino)
		fail_msg("%s: guessed %s, mapped %s", cmd, guess, out);
	free(out);
}

#define MAPS_LIBC " | grep -m1 -o '/[^ ]*libc\\.so[^ ]*$'"

static void a_program_found_in_path(void **state)
{
	(void)state;
	guess_is_mapped("sh", "sh -c 'cat /proc/$$/maps'" MAPS_LIBC);
	guess_is_mapped("/bin/cat", "/bin/cat /proc/self/maps" MAPS_LIBC);
}

static void an_interpreter_with_its_own_loader_and_libc(void **state)
{
	(void)state;
	require_file(PY312);
	guess_is_mapped(PY312, PY312 " -c 'print(open(\"/proc/self/maps\").read())'" MAPS_LIBC);
	/* the sid interpreters run with their own loader and C library */
	if (access(SID_PY314, X_OK) == 0)
		guess_is_mapped(SID_PY314, SID_PY314
				" -c 'print(open(\"/proc/self/maps\").read())'" MAPS_LIBC);
	else
		print_message("note: %s is not installed; its case is not run\n", SID_PY314);
}

/* an executable file `name` in the test directory holding text; its path */
static const char *executable(const char *name, const char *text)
{
	static char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", test_dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	chmod(path, 0755);
	return path;
}

static void scripts_are_followed_to_their_interpreter(void **state)
{
	char path[128], cmd[512];

	(void)state;
	require_file(PY312);
	snprintf(path, sizeof(path), "%s",
		 executable("direct", "#!" PY312 "\nprint(open('/proc/self/maps').read())\n"));
	snprintf(cmd, sizeof(cmd), "%s" MAPS_LIBC, path);
	guess_is_mapped(path, cmd);
	/* #!/usr/bin/env NAME looks NAME up in $PATH */
	snprintf(path, sizeof(path), "%s",
		 executable("viaenv",
			    "#!/usr/bin/env  python3.12\nprint(open('/proc/self/maps').read())\n"));
	setenv("PATH", PY312_PREFIX "/bin:/usr/bin:/bin", 1);
	snprintf(cmd, sizeof(cmd), "%s" MAPS_LIBC, path);
	guess_is_mapped(path, cmd);
}

static void no_guess_without_a_loader(void **state)
{
	char guess[4096], self[160];

	(void)state;
	assert_int_equal(exec_libc_guess("no-such-program-here", guess, sizeof(guess)), -1);
	assert_int_equal(exec_libc_guess("", guess, sizeof(guess)), -1);
	/* an executable that is neither ELF nor a script, and a script whose
	 * interpreter is not a path */
	assert_int_equal(exec_libc_guess(executable("text", "just words\n"), guess, sizeof(guess)),
			 -1);
	assert_int_equal(exec_libc_guess(executable("text", "#!python3\n"), guess, sizeof(guess)),
			 -1);
	/* a script that runs itself: followed a bounded number of times */
	snprintf(self, sizeof(self), "#!%s/text\n", test_dir);
	assert_int_equal(exec_libc_guess(executable("text", self), guess, sizeof(guess)), -1);
	/* no room for the answer */
	assert_int_equal(exec_libc_guess("sh", guess, 8), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(a_program_found_in_path),
		cmocka_unit_test(an_interpreter_with_its_own_loader_and_libc),
		cmocka_unit_test(scripts_are_followed_to_their_interpreter),
		cmocka_unit_test(no_guess_without_a_loader),
	};
	return cmocka_run_group_tests(tests, test_dir_make, test_dir_remove);
}
