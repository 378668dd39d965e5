/* test_perfmap.c - /tmp/perf-PID.map as the profiler reads it (this
 * process's own): lines appended between reads are picked up from where the
 * last read stopped, a line still being written waits, a file replaced or
 * cut short is read again from the start, and long names are cut and
 * marked. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "perfmap.h"

static char path[64];

static void append(const char *text, const char *mode)
{
	FILE *f = fopen(path, mode);

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static const char *name_at(const struct perfmap *m, uint64_t pc)
{
	const struct jit_sym *j = perfmap_find(m, pc);

	return j ? j->name : NULL;
}

static void reads_what_was_appended_and_starts_over_when_replaced(void **state)
{
	struct perfmap m = { 0 };
	char why[256] = "";

	(void)state;
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
	unlink(path);
	assert_int_equal(perfmap_read(&m, getpid(), why, sizeof(why)), 0); /* no file */
	append("1000 10 first\n2000 20 second\n3000 8 thi", "w");
	assert_int_equal(perfmap_read(&m, getpid(), why, sizeof(why)), 1);
	assert_int_equal(m.n, 2);
	assert_string_equal(name_at(&m, 0x1008), "first");
	assert_null(name_at(&m, 0x3000)); /* its line is not finished */
	append("rd\n0x500 10 before\n", "a");
	assert_int_equal(perfmap_read(&m, getpid(), why, sizeof(why)), 1);
	assert_int_equal(m.n, 4);
	assert_string_equal(name_at(&m, 0x3004), "third");
	assert_string_equal(name_at(&m, 0x50f), "before");
	assert_null(name_at(&m, 0x510));
	assert_int_equal(perfmap_read(&m, getpid(), why, sizeof(why)), 0); /* nothing new */
	/* cut short: read again from the start */
	append("4000 10 only\n", "w");
	assert_int_equal(perfmap_read(&m, getpid(), why, sizeof(why)), 1);
	assert_int_equal(m.n, 1);
	assert_null(name_at(&m, 0x1008));
	assert_string_equal(name_at(&m, 0x4000), "only");
	perfmap_free(&m);
	unlink(path);
}

static void long_names_are_cut_and_marked(void **state)
{
	struct perfmap m = { 0 };
	size_t len = PERFMAP_MAX_NAME + 100;
	char *line = malloc(len + 32), why[256] = "";

	(void)state;
	assert_non_null(line);
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
	strcpy(line, "1000 10 ");
	memset(line + 8, 'n', len);
	strcpy(line + 8 + len, "\n");
	append(line, "w");
	assert_int_equal(perfmap_read(&m, getpid(), why, sizeof(why)), 1);
	assert_int_equal(strlen(name_at(&m, 0x1000)), PERFMAP_MAX_NAME + 3);
	assert_string_equal(name_at(&m, 0x1000) + PERFMAP_MAX_NAME, "...");
	perfmap_free(&m);
	unlink(path);
	free(line);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(reads_what_was_appended_and_starts_over_when_replaced),
		cmocka_unit_test(long_names_are_cut_and_marked),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
