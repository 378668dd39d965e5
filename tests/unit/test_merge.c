/* test_merge.c - the merge rule on hand-built stacks: eval-loop frames are
 * replaced by their Python segments (one frame each up to 3.10, several from
 * 3.11), other native frames stay, and mismatches are marked, never
 * reordered. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "merge.h"

static struct func p_mod = { .name = "<module>", .file = "a.py" };
static struct func p_f = { .name = "f", .file = "a.py" };
static struct func p_g = { .name = "g", .file = "a.py" };
static struct func p_cb = { .name = "cb", .file = "a.py" };
static struct func n_main = { .name = "main", .file = "python", .kind = FN_NATIVE };
static struct func n_eval = { .name = "_PyEval_EvalFrameDefault", .file = "libpython",
				.kind = FN_EVAL };
static struct func n_call = { .name = "PyObject_Vectorcall", .file = "libpython",
				.kind = FN_NATIVE };
static struct func n_qsort = { .name = "qsort", .file = "libc", .kind = FN_NATIVE };
static struct func n_leaf = { .name = "memcpy", .file = "libc", .kind = FN_NATIVE };

/* root-first names of out[0..n) (leaf first), joined by ';' */
static const char *joined(const struct pframe *out, uint32_t n)
{
	static char buf[1024];
	size_t len = 0;

	buf[0] = 0;
	for (uint32_t i = n; i-- > 0;)
		len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s%s", out[i].fn->name,
					i ? ";" : "");
	return buf;
}

static uint32_t run(const struct func **py, const uint8_t *entry, uint32_t np,
		    const struct func **nat, uint32_t nn, uint32_t flags, struct pframe *out)
{
	struct pframe pf[16];

	for (uint32_t i = 0; i < np; i++) {
		pf[i].fn = (struct func *)py[i];
		pf[i].instr = i;
	}
	return merge_frames(pf, entry, np, (const struct func *const *)nat, nn, flags, out);
}

static void one_eval_frame_per_python_frame(void **state)
{
	/* 3.10 style, leaf first: g <- f <- <module>, each its own eval call */
	const struct func *py[] = { &p_g, &p_f, &p_mod };
	uint8_t entry[] = { 1, 1, 1 };
	const struct func *nat[] = { &n_leaf, &n_eval, &n_call, &n_eval, &n_call, &n_eval,
				       &n_main };
	struct pframe out[16];
	uint32_t n = run(py, entry, 3, nat, 7, STACK_NATIVE, out);

	assert_string_equal(joined(out, n),
			    "main;<module>;PyObject_Vectorcall;f;PyObject_Vectorcall;g;memcpy");
	assert_int_equal(out[1].instr, 0); /* Python frames keep their offsets */
}

static void one_eval_frame_runs_several_python_frames(void **state)
{
	/* 3.11+: <module> calls f calls g in one eval call; g calls qsort,
	 * which calls back cb in a second eval call */
	const struct func *py[] = { &p_cb, &p_g, &p_f, &p_mod };
	uint8_t entry[] = { 1, 0, 0, 1 };
	const struct func *nat[] = { &n_eval, &n_call, &n_qsort, &n_eval, &n_main };
	struct pframe out[16];
	uint32_t n = run(py, entry, 4, nat, 5, STACK_NATIVE, out);

	assert_string_equal(joined(out, n), "main;<module>;f;g;qsort;PyObject_Vectorcall;cb");
}

static void partial_native_walk_merges_the_leaf_side(void **state)
{
	const struct func *py[] = { &p_cb, &p_g, &p_f, &p_mod };
	uint8_t entry[] = { 1, 0, 0, 1 };
	const struct func *nat[] = { &n_eval, &n_qsort };
	struct pframe out[16];
	uint32_t n = run(py, entry, 4, nat, 2, STACK_NATIVE | STACK_NATIVE_INCOMPLETE, out);

	assert_string_equal(joined(out, n), "<module>;f;g;[native incomplete];qsort;cb");
	n = run(py, entry, 4, nat, 2, STACK_NATIVE | STACK_NATIVE_TRUNCATED, out);
	assert_string_equal(joined(out, n), "<module>;f;g;[native truncated];qsort;cb");
}

static void complete_match_with_incomplete_root_is_marked_at_the_root(void **state)
{
	const struct func *py[] = { &p_f };
	uint8_t entry[] = { 1 };
	const struct func *nat[] = { &n_eval };
	struct pframe out[16];
	uint32_t n = run(py, entry, 1, nat, 1, STACK_NATIVE | STACK_NATIVE_INCOMPLETE, out);

	assert_string_equal(joined(out, n), "[native incomplete];f");
}

static void mismatch_is_marked_not_reordered(void **state)
{
	/* two eval frames but one Python segment, walk complete: no guess */
	const struct func *py[] = { &p_g, &p_f };
	uint8_t entry[] = { 0, 1 };
	const struct func *nat[] = { &n_eval, &n_qsort, &n_eval, &n_main };
	struct pframe out[16];
	uint32_t n = run(py, entry, 2, nat, 4, STACK_NATIVE, out);

	assert_string_equal(joined(out, n),
			    "f;g;[unmerged native];main;_PyEval_EvalFrameDefault;qsort;"
			    "_PyEval_EvalFrameDefault");
	/* fewer eval frames than segments although the walk was complete */
	n = run(py, (uint8_t[]){ 1, 1 }, 2, nat + 2, 2, STACK_NATIVE, out);
	assert_string_equal(joined(out, n), "f;g;[unmerged native];main;_PyEval_EvalFrameDefault");
}

/* a thread waiting for the GIL: "[GIL wait]" just above the Python frame
 * that waited; a native thread's wait above the hand-over's caller; a
 * function that only looks like it (take_gilded) is not one */
static void gil_hand_over_is_marked(void **state)
{
	static struct func n_take = { .name = "take_gil.lto_priv.0", .file = "libpython",
				      .kind = FN_NATIVE };
	static struct func n_futex = { .name = "futex_wait", .file = "libc", .kind = FN_NATIVE };
	static struct func n_ensure = { .name = "PyGILState_Ensure", .file = "libpython",
					.kind = FN_NATIVE };
	static struct func n_other = { .name = "take_gilded", .file = "libx", .kind = FN_NATIVE };
	const struct func *py[] = { &p_g, &p_mod };
	uint8_t entry[] = { 1, 1 };
	const struct func *nat[] = { &n_futex, &n_take, &n_eval, &n_call, &n_eval, &n_main };
	struct pframe out[16];
	uint32_t n = run(py, entry, 2, nat, 6, STACK_NATIVE, out);

	(void)state;
	n = merge_mark_gil(out, n);
	assert_string_equal(joined(out, n),
			    "main;<module>;PyObject_Vectorcall;g;[GIL wait];take_gil.lto_priv.0;futex_wait");
	out[0].fn = &n_futex;
	out[1].fn = &n_take;
	out[2].fn = &n_ensure;
	out[3].fn = &n_main;
	n = merge_mark_gil(out, 4);
	assert_string_equal(joined(out, n), "main;[GIL wait];PyGILState_Ensure;take_gil.lto_priv.0;futex_wait");
	out[0].fn = &n_other;
	out[1].fn = &n_main;
	assert_int_equal(merge_mark_gil(out, 2), 2);
}

/* a sample taken in the cyclic collector: "<GC>" just leaf side of the leaf
 * Python frame, so the collector's native frames are its callees; with
 * Python frames only it is the leaf; with none, the leaf too */
static void gc_frame_goes_above_the_leaf_python_frame(void **state)
{
	static struct func n_gc = { .name = "gc_collect_main", .file = "libpython",
				    .kind = FN_NATIVE };
	const struct func *py[] = { &p_g, &p_mod };
	uint8_t entry[] = { 1, 1 };
	const struct func *nat[] = { &n_leaf, &n_gc, &n_eval, &n_call, &n_eval, &n_main };
	struct pframe out[16];
	uint32_t n = run(py, entry, 2, nat, 6, STACK_NATIVE, out);

	(void)state;
	n = merge_mark_gc(out, n);
	assert_string_equal(joined(out, n),
			    "main;<module>;PyObject_Vectorcall;g;<GC>;gc_collect_main;memcpy");
	out[0].fn = &p_g;
	out[1].fn = &p_mod;
	n = merge_mark_gc(out, 2);
	assert_string_equal(joined(out, n), "<module>;g;<GC>");
	out[0].fn = &n_leaf;
	out[1].fn = &n_main;
	n = merge_mark_gc(out, 2);
	assert_string_equal(joined(out, n), "main;memcpy;<GC>");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(gc_frame_goes_above_the_leaf_python_frame),
		cmocka_unit_test(gil_hand_over_is_marked),
		cmocka_unit_test(one_eval_frame_per_python_frame),
		cmocka_unit_test(one_eval_frame_runs_several_python_frames),
		cmocka_unit_test(partial_native_walk_merges_the_leaf_side),
		cmocka_unit_test(complete_match_with_incomplete_root_is_marked_at_the_root),
		cmocka_unit_test(mismatch_is_marked_not_reordered),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
