/* test_dynlib.c - opening a library when first needed: its functions in
 * the order named, and a clear reason with nothing set when it is missing
 * or lacks a name. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "dynlib.h"

static void fills_the_slots_in_the_order_named(void **state)
{
	static const char *const names[] = { "strlen", "strcmp" };
	struct {
		size_t (*len)(const char *);
		int (*cmp)(const char *, const char *);
	} f = { 0 };
	char err[256] = "";

	(void)state;
	assert_non_null(dynlib_open("libc.so.6", names, (void **)&f, 2, err, sizeof(err)));
	assert_int_equal(f.len("four"), 4);
	assert_true(f.cmp("a", "b") < 0);
}

static void a_missing_name_sets_nothing_and_says_which(void **state)
{
	static const char *const names[] = { "strlen", "no_such_function_here" };
	void *slots[2] = { (void *)1, (void *)1 };
	char err[256] = "";

	(void)state;
	assert_null(dynlib_open("libc.so.6", names, slots, 2, err, sizeof(err)));
	assert_null(slots[0]);
	assert_null(slots[1]);
	assert_non_null(strstr(err, "lacks no_such_function_here"));
}

static void a_missing_library_says_so(void **state)
{
	static const char *const names[] = { "x" };
	void *slot = NULL;
	char err[256] = "";

	(void)state;
	assert_null(dynlib_open("libpyperf-nonexistent.so.9", names, &slot, 1, err, sizeof(err)));
	assert_non_null(strstr(err, "libpyperf-nonexistent.so.9"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(fills_the_slots_in_the_order_named),
		cmocka_unit_test(a_missing_name_sets_nothing_and_says_which),
		cmocka_unit_test(a_missing_library_says_so),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
