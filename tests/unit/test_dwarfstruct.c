/* test_dwarfstruct.c - member offsets read from DWARF (how --async learns
 * the 3.12/3.13 TaskObj layout) against the compiler's own offsetof, on
 * structs of this test binary, which is built with -g. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "dwarfstruct.h"

typedef struct {
	int head;
	char tag;
	unsigned bits : 3;            /* a bit-field: no byte offset */
	void *ptr;
	long tail[3];
} probe_t;

struct probe_tagged {
	short a;
	double b;
};

/* referenced, so the compiler keeps their DWARF */
probe_t probe_keep;
struct probe_tagged probe_keep2;

static void offsets_equal_offsetof(void **state)
{
	const char *const names[] = { "head", "tag", "ptr", "tail", "bits", "absent" };
	long offs[6], size = 0;
	char err[256];

	(void)state;
	assert_int_equal(dwarf_struct_offsets("/proc/self/exe", "probe_t", names, 6, offs, &size,
					      err, sizeof(err)), 0);
	assert_int_equal(offs[0], offsetof(probe_t, head));
	assert_int_equal(offs[1], offsetof(probe_t, tag));
	assert_int_equal(offs[2], offsetof(probe_t, ptr));
	assert_int_equal(offs[3], offsetof(probe_t, tail));
	assert_int_equal(offs[4], -1);
	assert_int_equal(offs[5], -1);
	assert_int_equal(size, sizeof(probe_t));
}

static void struct_tag_and_missing_type(void **state)
{
	const char *const names[] = { "b" };
	long offs[1];
	char err[256];

	(void)state;
	assert_int_equal(dwarf_struct_offsets("/proc/self/exe", "probe_tagged", names, 1, offs,
					      NULL, err, sizeof(err)), 0);
	assert_int_equal(offs[0], offsetof(struct probe_tagged, b));
	assert_int_equal(dwarf_struct_offsets("/proc/self/exe", "no_such_type_here", names, 1,
					      offs, NULL, err, sizeof(err)), 1);
	assert_int_equal(offs[0], -1);
	assert_int_equal(dwarf_struct_offsets("/nonexistent/file", "probe_t", names, 1, offs, NULL,
					      err, sizeof(err)), -1);
	assert_non_null(strstr(err, "/nonexistent/file"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(offsets_equal_offsetof),
		cmocka_unit_test(struct_tag_and_missing_type),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
