/* test_demangle.c - C++ names demangled through libstdc++'s demangler,
 * looked up at the first mangled name and not before (the dynamic build no
 * longer links libstdc++: user/lib/demangle.h); what is not a mangled name,
 * or a broken one, gives NULL. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "demangle.h"

static void looked_up_at_the_first_mangled_name_only(void **state)
{
	char *d;

	(void)state;
	assert_int_equal(demangle_loaded(), 0);
	/* C names and NULL ask for nothing */
	assert_null(demangle("main"));
	assert_null(demangle("PyEval_EvalCode"));
	assert_null(demangle(NULL));
	assert_int_equal(demangle_loaded(), 0);
	d = demangle("_ZNSt6vectorIiSaIiEE9push_backERKi");
	assert_int_equal(demangle_loaded(), 1);
	assert_non_null(d);
	assert_string_equal(d, "std::vector<int, std::allocator<int> >::push_back(int const&)");
	free(d);
}

static void a_broken_name_is_not_demangled(void **state)
{
	(void)state;
	assert_null(demangle("_Z"));
	assert_null(demangle("_ZN3fooE9"));
	/* and a good one still is */
	char *d = demangle("_Znwm");

	assert_non_null(d);
	assert_string_equal(d, "operator new(unsigned long)");
	free(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(looked_up_at_the_first_mangled_name_only),
		cmocka_unit_test(a_broken_name_is_not_demangled),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
