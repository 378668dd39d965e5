/* test_fncount.c - own and total counts per function (user/profile/fncount.c) on
 * hand-built stacks: recursion counts once in total, a function read twice
 * (two funcs with the same content) is one function, markers are skipped
 * when asked and then leave the leaf to the next frame. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "fncount.h"

static struct func f_main = { .name = "main", .file = "/w/app.py", .firstlineno = 5 };
static struct func f_rec = { .name = "rec", .file = "/w/app.py", .firstlineno = 9 };
static struct func f_rec_again = { .name = "rec", .file = "/w/app.py", .firstlineno = 9 };
static struct func f_rec_other = { .name = "rec", .file = "/w/app.py", .firstlineno = 30 };
static struct func f_mark = { .name = "[native incomplete]", .kind = FN_MARK };
static struct func f_memcpy = { .name = "memcpy", .file = "libc.so.6", .kind = FN_NATIVE };

/* a stack of n frames, leaf first */
static struct pstack *stack(uint32_t n, ...)
{
	struct pstack *st = calloc(1, sizeof(*st) + n * sizeof(st->frames[0]));
	va_list ap;

	assert_non_null(st);
	st->nframes = n;
	va_start(ap, n);
	for (uint32_t i = 0; i < n; i++) {
		st->frames[i].fn = va_arg(ap, struct func *);
		st->frames[i].instr = UINT32_MAX;
	}
	va_end(ap);
	return st;
}

static void test_recursion_counts_once_in_total(void **state)
{
	struct fn_counts c = { 0 };
	struct pstack *a = stack(4, &f_rec, &f_rec, &f_rec_again, &f_main);
	struct pstack *b = stack(2, &f_rec_other, &f_main);
	const struct fn_count *r;

	(void)state;
	assert_int_equal(fn_counts_add(&c, a, 3), 0);
	assert_int_equal(fn_counts_add(&c, b, 2), 0);
	assert_int_equal(fn_counts_add(&c, a, 1), 0);
	r = fn_counts_get(&c, &f_rec_again); /* same content as f_rec: one function */
	assert_non_null(r);
	assert_int_equal(r->own, 4);
	assert_int_equal(r->total, 4);
	r = fn_counts_get(&c, &f_rec_other); /* another first line: another function */
	assert_int_equal(r->own, 2);
	assert_int_equal(r->total, 2);
	r = fn_counts_get(&c, &f_main);
	assert_int_equal(r->own, 0);
	assert_int_equal(r->total, 6);
	assert_null(fn_counts_get(&c, &f_memcpy));
	fn_counts_free(&c);
	free(a);
	free(b);
}

static void test_markers_are_functions_unless_skipped(void **state)
{
	struct fn_counts with = { 0 }, without = { .skip_marks = true };
	struct pstack *a = stack(3, &f_mark, &f_memcpy, &f_main);
	struct fn_count **v;
	size_t n;

	(void)state;
	assert_int_equal(fn_counts_add(&with, a, 5), 0);
	assert_int_equal(fn_counts_add(&without, a, 5), 0);
	assert_int_equal(fn_counts_get(&with, &f_mark)->own, 5);
	assert_int_equal(fn_counts_get(&with, &f_memcpy)->own, 0);
	assert_null(fn_counts_get(&without, &f_mark));
	assert_int_equal(fn_counts_get(&without, &f_memcpy)->own, 5);
	v = fn_counts_list(&without, &n);
	assert_non_null(v);
	assert_int_equal(n, 2);
	free(v);
	fn_counts_free(&with);
	fn_counts_free(&without);
	free(a);
}

/* skip_startup: the native frames root side of the outermost Python frame
 * are not counted; natives between Python frames and at the leaf are, and
 * a stack without Python frames keeps all of its own */
static void test_startup_chain_is_left_out_when_asked(void **state)
{
	static struct func f_start = { .name = "_start", .file = "python3", .kind = FN_NATIVE };
	static struct func f_eval = { .name = "_PyEval_EvalFrameDefault", .file = "python3",
				      .kind = FN_EVAL };
	struct fn_counts c = { .skip_startup = true };
	/* leaf first: memcpy, rec, main (Python), the eval loop and _start below */
	struct pstack *a = stack(5, &f_memcpy, &f_rec, &f_main, &f_eval, &f_start);
	struct pstack *b = stack(2, &f_memcpy, &f_start);

	(void)state;
	assert_int_equal(fn_counts_add(&c, a, 3), 0);
	assert_null(fn_counts_get(&c, &f_start));
	assert_null(fn_counts_get(&c, &f_eval));
	assert_int_equal(fn_counts_get(&c, &f_main)->total, 3);
	assert_int_equal(fn_counts_get(&c, &f_memcpy)->own, 3);
	assert_int_equal(fn_counts_add(&c, b, 2), 0);
	assert_int_equal(fn_counts_get(&c, &f_start)->total, 2);
	assert_int_equal(fn_counts_get(&c, &f_memcpy)->own, 5);
	fn_counts_free(&c);
	free(a);
	free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_startup_chain_is_left_out_when_asked),
		cmocka_unit_test(test_recursion_counts_once_in_total),
		cmocka_unit_test(test_markers_are_functions_unless_skipped),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
