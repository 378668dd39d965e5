/* test_events.c - what --events keeps: a generation's count, total and
 * maximum exact, its percentiles from the histogram within 9 % of the
 * sorted values', imports slowest first, bounded. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "events.h"

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* 10000 pauses spread over four decades: the histogram's p50 and p99
 * against the sorted truth's */
static void quantiles_are_within_nine_percent(void **state)
{
	static uint64_t v[10000];
	struct events e = { 0 };
	const struct proc_events *pe;
	uint64_t total = 0, max = 0;
	uint32_t x = 1;

	(void)state;
	for (size_t i = 0; i < 10000; i++) {
		x = x * 1664525u + 1013904223u;
		v[i] = 1000 + (uint64_t)(x >> 8) % 10000000; /* 1 us to 10 ms */
		total += v[i];
		if (v[i] > max)
			max = v[i];
		assert_int_equal(events_add_gc(&e, 42, 0, v[i]), 0);
	}
	qsort(v, 10000, sizeof(v[0]), cmp_u64);
	pe = events_of(&e, 42);
	assert_non_null(pe);
	assert_int_equal(pe->gc[0].count, 10000);
	assert_int_equal(pe->gc[0].total_ns, total);
	assert_int_equal(pe->gc[0].max_ns, max);
	assert_int_equal(pe->gc[1].count, 0);
	assert_true(llabs((long long)events_gc_quantile(&pe->gc[0], 0.5) - (long long)v[4999]) <=
		    (long long)(v[4999] * 0.09));
	assert_true(llabs((long long)events_gc_quantile(&pe->gc[0], 0.99) - (long long)v[9899]) <=
		    (long long)(v[9899] * 0.09));
	assert_true(events_gc_quantile(&pe->gc[0], 1.0) <= max);
	assert_int_equal(events_gc_quantile(&pe->gc[1], 0.5), 0);
	events_free(&e);
}

/* a generation out of range counts as the oldest; tiny pauses are exact */
static void generations_and_small_pauses(void **state)
{
	struct events e = { 0 };
	const struct proc_events *pe;

	(void)state;
	events_add_gc(&e, 7, 5, 3);
	events_add_gc(&e, 7, -1, 3);
	pe = events_of(&e, 7);
	assert_int_equal(pe->gc[EVENTS_GENERATIONS - 1].count, 2);
	assert_int_equal(events_gc_quantile(&pe->gc[EVENTS_GENERATIONS - 1], 0.5), 3);
	assert_null(events_of(&e, 8));
	events_free(&e);
}

/* imports slowest first, a nameless one as "?", at most EVENTS_MAX_IMPORTS kept */
static void imports_slowest_first_and_bounded(void **state)
{
	struct events e = { 0 };
	const struct proc_events *pe;
	struct import_time *v;

	(void)state;
	events_add_import(&e, 1, "quick", 1000, 0);
	events_add_import(&e, 1, "slow", 400000000, 0);
	events_add_import(&e, 1, "", 5000, 1);
	pe = events_of(&e, 1);
	v = events_imports_by_time(pe);
	assert_non_null(v);
	assert_string_equal(v[0].name, "slow");
	assert_string_equal(v[1].name, "?");
	assert_int_equal(v[1].depth, 1);
	assert_string_equal(v[2].name, "quick");
	free(v);
	for (int i = 0; i < EVENTS_MAX_IMPORTS; i++)
		events_add_import(&e, 2, "m", (uint64_t)i, 0);
	pe = events_of(&e, 2);
	assert_int_equal(pe->nimports, EVENTS_MAX_IMPORTS);
	assert_int_equal(pe->imports_dropped, 0);
	events_add_import(&e, 2, "m", 1, 0);
	assert_int_equal(pe->imports_dropped, 1);
	events_free(&e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(quantiles_are_within_nine_percent),
		cmocka_unit_test(generations_and_small_pauses),
		cmocka_unit_test(imports_slowest_first_and_bounded),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
