/* test_spool.c - the daemon's push queue (user/cmd/spool.c) with a server
 * that never answers (a closed loopback port): profiles wait in the
 * directory in order, the oldest are dropped and counted when it is full, a
 * profile that can never fit is dropped at once, and what was not sent is
 * still there after a restart, numbered on from where it left off. */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "spool.h"

#define URL "http://127.0.0.1:9" /* discard port: refused, nothing listens */

/* the .prof files in dir, sorted, into names (at most max) */
static size_t files(const char *dir, char names[][256], size_t max)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	size_t n = 0;

	assert_non_null(d);
	while ((e = readdir(d)))
		if (strstr(e->d_name, ".prof") && n < max)
			snprintf(names[n++], 256, "%s", e->d_name);
	closedir(d);
	qsort(names, n, 256, (int (*)(const void *, const void *))strcmp);
	return n;
}

/* the query line of the spool file named name in dir */
static void first_line(const char *dir, const char *name, char *out, size_t len)
{
	char path[8192];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "r");
	assert_non_null(f);
	assert_non_null(fgets(out, (int)len, f));
	fclose(f);
}

static void test_queue_in_order_full_and_restart(void **state)
{
	char dir[] = "/tmp/pyperf-spool-XXXXXX", err[256] = "", names[16][256], path[8192];
	char data[100], big[300];
	struct spool_stats st;
	struct spool *s;

	(void)state;
	assert_non_null(mkdtemp(dir));
	memset(data, 'x', sizeof(data));
	memset(big, 'z', sizeof(big));
	/* room for two profiles of 100 bytes plus their query line */
	s = spool_open(dir, 250, URL, err, sizeof(err));
	assert_non_null(s);
	assert_int_equal(spool_add(s, "name=a", data, sizeof(data), err, sizeof(err)), 0);
	assert_int_equal(spool_add(s, "name=b", data, sizeof(data), err, sizeof(err)), 0);
	assert_int_equal(spool_add(s, "name=c", data, sizeof(data), err, sizeof(err)), 0);
	spool_get_stats(s, &st);
	assert_int_equal(st.pending, 2);
	assert_int_equal(st.dropped, 1); /* a, the oldest */
	assert_int_equal(st.sent, 0);
	/* larger than the whole spool: dropped at once, nothing else goes */
	assert_int_equal(spool_add(s, "name=big", big, sizeof(big), err, sizeof(err)), 0);
	spool_get_stats(s, &st);
	assert_int_equal(st.pending, 2);
	assert_int_equal(st.dropped, 2);
	assert_int_equal(spool_close(s, 0.2), 2);
	assert_int_equal(files(dir, names, 16), 2);
	/* the first line of each file is its query: b, then c */
	first_line(dir, names[0], data, sizeof(data));
	assert_string_equal(data, "name=b\n");
	/* a restart finds them and numbers new ones after them */
	s = spool_open(dir, 1000, URL, err, sizeof(err));
	assert_non_null(s);
	spool_get_stats(s, &st);
	assert_int_equal(st.pending, 2);
	assert_int_equal(spool_add(s, "name=d", "y", 1, err, sizeof(err)), 0);
	assert_int_equal(spool_close(s, 0.2), 3);
	assert_int_equal(files(dir, names, 16), 3);
	first_line(dir, names[2], data, sizeof(data));
	assert_string_equal(data, "name=d\n");
	for (size_t i = 0; i < 3; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		unlink(path);
	}
	rmdir(dir);
}

static void test_unusable_directory_is_an_error(void **state)
{
	char err[256] = "";

	(void)state;
	assert_null(spool_open("/proc/no/such/spool", 1000, URL, err, sizeof(err)));
	assert_non_null(strstr(err, "spool /proc/no/such/spool"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_queue_in_order_full_and_restart),
		cmocka_unit_test(test_unusable_directory_is_an_error),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
