/* test_hmap.c - the hash map: inserts, replaces and deletes against a plain
 * array as the model, through growth and long probe runs; a removal by
 * predicate. */
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "hmap.h"

#define N 5000

static void matches_a_model_through_inserts_and_deletes(void **state)
{
	static uintptr_t model[N]; /* key i -> value, 0: absent */
	struct hmap m = { 0 };
	uint64_t seed = 12345;

	(void)state;
	for (int round = 0; round < 200000; round++) {
		uint32_t k;
		uintptr_t v;

		seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
		k = (uint32_t)(seed >> 33) % N;
		v = (uintptr_t)(seed >> 40) | 1;
		if ((seed >> 20) % 3) {
			assert_int_equal(hmap_put(&m, &k, sizeof(k), (void *)v), 0);
			model[k] = v;
		} else {
			assert_ptr_equal(hmap_del(&m, &k, sizeof(k)), (void *)model[k]);
			model[k] = 0;
		}
		if (round % 997 == 0) {
			size_t live = 0;

			for (uint32_t i = 0; i < N; i++) {
				assert_ptr_equal(hmap_get(&m, &i, sizeof(i)), (void *)model[i]);
				live += model[i] != 0;
			}
			assert_int_equal(m.len, live);
		}
	}
	hmap_free(&m, NULL);
}

static void delete_from_empty_and_absent(void **state)
{
	struct hmap m = { 0 };
	int k = 7, j = 8;

	(void)state;
	assert_null(hmap_del(&m, &k, sizeof(k)));
	assert_int_equal(hmap_put(&m, &k, sizeof(k), &k), 0);
	assert_null(hmap_del(&m, &j, sizeof(j)));
	assert_ptr_equal(hmap_del(&m, &k, sizeof(k)), &k);
	assert_int_equal(m.len, 0);
	assert_null(hmap_get(&m, &k, sizeof(k)));
	hmap_free(&m, NULL);
}

static bool take_odd(void *val, void *ctx)
{
	(*(int *)ctx)++;
	return (uintptr_t)val & 2; /* values are 2k+1: k odd */
}

/* every entry is asked, those taken go and the rest stay, through the
 * moves each delete makes in a table with long probe runs */
static void take_if_removes_exactly_what_it_takes(void **state)
{
	struct hmap m = { 0 };
	int asked = 0;

	(void)state;
	for (uint32_t k = 0; k < N; k++)
		assert_int_equal(hmap_put(&m, &k, sizeof(k), (void *)(uintptr_t)(2 * k + 1)), 0);
	assert_int_equal(hmap_take_if(&m, take_odd, &asked), N / 2);
	assert_true(asked >= N);
	assert_int_equal(m.len, N / 2);
	for (uint32_t k = 0; k < N; k++) {
		void *v = hmap_get(&m, &k, sizeof(k));

		if (k % 2)
			assert_null(v);
		else
			assert_ptr_equal(v, (void *)(uintptr_t)(2 * k + 1));
	}
	hmap_free(&m, NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(matches_a_model_through_inserts_and_deletes),
		cmocka_unit_test(delete_from_empty_and_absent),
		cmocka_unit_test(take_if_removes_exactly_what_it_takes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
