/* test_ksyms.c - naming kernel addresses from a kallsyms-format file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "ksyms.h"

static char path[] = "/tmp/pyperf-ksyms-XXXXXX";

static int write_file(void **state)
{
	int fd = mkstemp(path);
	FILE *f = fdopen(fd, "w");

	/* unsorted like a real kallsyms with modules; data symbols must be ignored */
	fputs("ffffffff81002000 T second_fn\n"
	      "ffffffff81001000 t first_fn\n"
	      "ffffffff81001800 D some_data\n"
	      "ffffffffc0001000 t mod_fn\t[mymod]\n"
	      "ffffffff81003000 W weak_fn\n"
	      "0000000000000000 T zero_addr_ignored\n"
	      "garbage line\n", f);
	fclose(f);
	return 0;
}

static int remove_file(void **state)
{
	unlink(path);
	return 0;
}

static void names_the_containing_text_symbol(void **state)
{
	uint64_t addrs[] = { 0xffffffff81000fffULL, 0xffffffff81001000ULL, 0xffffffff81001900ULL,
			     0xffffffff81002010ULL, 0xffffffff81003005ULL, 0xffffffffc0001234ULL };
	char *names[6];

	assert_int_equal(ksyms_resolve(path, addrs, 6, names), 0);
	assert_null(names[0]);                        /* below every symbol */
	assert_string_equal(names[1], "first_fn");    /* exact start */
	assert_string_equal(names[2], "first_fn");    /* data symbol in between ignored */
	assert_string_equal(names[3], "second_fn");
	assert_string_equal(names[4], "weak_fn");
	assert_string_equal(names[5], "mod_fn");      /* module suffix dropped */
	for (int i = 0; i < 6; i++)
		free(names[i]);
}

static void missing_file_is_an_error(void **state)
{
	uint64_t a = 1;
	char *name;

	assert_int_equal(ksyms_resolve("/nonexistent/kallsyms", &a, 1, &name), -1);
	assert_null(name);
}

static void real_kallsyms_names_a_known_function(void **state)
{
	FILE *f = fopen("/proc/kallsyms", "r");
	char line[512], sym[256], type;
	unsigned long long addr = 0;
	char *name = NULL;
	uint64_t a;

	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%llx %c %255s", &addr, &type, sym) == 3 && !strcmp(sym, "vfs_read"))
			break;
	fclose(f);
	assert_true(addr != 0); /* root sees addresses */
	a = addr + 4;
	assert_int_equal(ksyms_resolve("/proc/kallsyms", &a, 1, &name), 0);
	assert_string_equal(name, "vfs_read");
	free(name);
}

static void looks_up_text_symbols_by_name(void **state)
{
	const char *want[] = { "second_fn", "some_data", "mod_fn", "absent", "weak_fn", "first" };
	uint64_t got[6];

	assert_int_equal(ksyms_lookup(path, want, 6, got), 0);
	assert_true(got[0] == 0xffffffff81002000ULL);
	assert_true(got[1] == 0);                     /* a data symbol is no function */
	assert_true(got[2] == 0xffffffffc0001000ULL); /* a module's, its suffix after */
	assert_true(got[3] == 0);
	assert_true(got[4] == 0xffffffff81003000ULL);
	assert_true(got[5] == 0);                     /* a prefix of a name is not it */
	assert_int_equal(ksyms_lookup("/nonexistent/kallsyms", want, 1, got), -1);
	assert_true(got[0] == 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(names_the_containing_text_symbol),
		cmocka_unit_test(missing_file_is_an_error),
		cmocka_unit_test(real_kallsyms_names_a_known_function),
		cmocka_unit_test(looks_up_text_symbols_by_name),
	};

	return cmocka_run_group_tests(tests, write_file, remove_file);
}
