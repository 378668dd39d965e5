/* test_profile.c - the profile as pure aggregation (user/profile/profile.c):
 * counts per (stack, thread, kernel stack), the stable sample order, counts
 * of keys never announced, intervals (reset) and forgotten processes, the
 * per-image code cache, and kernel frames named after the fact.  No process,
 * file or BPF map is involved: every input is built here. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "profile.h"
#include "profutil.h"

static struct func f_a = { "a", "/w/a.py", 1, 0, NULL, 0, FN_PYTHON, NULL, 0 };
static struct func f_b = { "b", "/w/b.py", 2, 0, NULL, 0, FN_PYTHON, NULL, 0 };

static const struct psample *find(struct psample **v, size_t n, uint32_t tid, const struct func *leaf,
				  const struct kstack *ks)
{
	for (size_t i = 0; i < n; i++)
		if (v[i]->tid == tid && v[i]->stack->frames[0].fn == leaf && v[i]->kstack == ks)
			return v[i];
	return NULL;
}

static void counts_sum_per_stack_thread_and_kernel_stack(void **state)
{
	static const uint64_t k1[] = { 0xffffffff81000010, 0xffffffff81000020 };
	static const uint64_t k1_again[] = { 0xffffffff81000010, 0xffffffff81000020 };
	struct profile p;
	struct psample **v;
	size_t n;

	(void)state;
	profile_init(&p);
	add_stack(&p, 10, 1, 100, 0, 3, NULL, 0, 1, &f_a, 0u);
	add_stack(&p, 10, 1, 100, 0, 2, NULL, 0, 1, &f_a, 0u);     /* same: summed */
	add_stack(&p, 10, 1, 101, 0, 5, NULL, 0, 1, &f_a, 0u);     /* other thread */
	add_stack(&p, 10, 3, 100, 0, 7, k1, 2, 1, &f_a, 0u);       /* in the kernel */
	add_stack(&p, 10, 3, 100, 0, 1, k1_again, 2, 1, &f_a, 0u); /* same kernel stack */
	add_stack(&p, 10, 2, 100, 0, 4, NULL, 0, 1, &f_b, 0u);
	add_stack(&p, 11, 2, 200, 0, 6, NULL, 0, 1, &f_b, 0u);     /* another process */
	v = profile_samples(&p, &n);
	assert_int_equal(n, 5);
	assert_int_equal(find(v, n, 100, &f_a, NULL)->count, 5);
	assert_int_equal(find(v, n, 101, &f_a, NULL)->count, 5);
	assert_non_null(find(v, n, 100, &f_b, NULL));
	/* the order: pid, then tid, then heavier first */
	assert_int_equal(v[0]->stack->pid, 10);
	assert_int_equal(v[0]->tid, 100);
	assert_int_equal(v[0]->count, 8); /* the kernel one: 7 + 1 */
	assert_int_equal(v[0]->kstack->n, 2);
	assert_int_equal(v[1]->count, 5);
	assert_int_equal(v[2]->count, 4);
	assert_int_equal(v[3]->tid, 101);
	assert_int_equal(v[4]->stack->pid, 11);
	free(v);
	assert_int_equal(p.total, 3 + 2 + 5 + 7 + 1 + 4 + 6);
	assert_int_equal(profile_proc(&p, 10)->samples, 22);
	assert_int_equal(profile_nprocs_seen(&p), 2);
	assert_int_equal(p.unattributed, 0);
	profile_free(&p);
}

/* name p's unnamed kernel addresses, in address order, with the n names
 * given (NULL: no symbol); returns how many addresses there were */
static size_t name_kernel(struct profile *p, size_t n, ...)
{
	char **names = calloc(n + 1, sizeof(*names));
	size_t got;
	uint64_t *addrs = profile_unnamed_kernel(p, &got);
	va_list ap;

	va_start(ap, n);
	for (size_t i = 0; i < n && i < got; i++) {
		const char *s = va_arg(ap, const char *);

		names[i] = s ? strdup(s) : NULL;
	}
	va_end(ap);
	profile_set_kernel_names(p, addrs, names, got < n ? got : n);
	free(addrs);
	free(names);
	return got;
}

static void kernel_frames_are_named_after_the_fact(void **state)
{
	static const uint64_t k1[] = { 0x30, 0x10 }, k2[] = { 0x20, 0x10, 0x40 };
	struct profile p;
	struct psample **v;
	uint64_t *addrs;
	size_t n;

	(void)state;
	profile_init(&p);
	add_stack(&p, 10, 1, 1, 0, 1, k1, 2, 1, &f_a, 0u);
	add_stack(&p, 10, 2, 1, 0, 1, k2, 3, 1, &f_a, 0u);
	addrs = profile_unnamed_kernel(&p, &n);
	assert_int_equal(n, 4); /* distinct, sorted */
	assert_int_equal(addrs[0], 0x10);
	assert_int_equal(addrs[1], 0x20);
	assert_int_equal(addrs[2], 0x30);
	assert_int_equal(addrs[3], 0x40);
	free(addrs);
	/* 0x40: no symbol */
	assert_int_equal(name_kernel(&p, 4, "do_sys", "vfs_read", "copy_page", NULL), 4);
	v = profile_samples(&p, &n);
	for (size_t i = 0; i < n; i++) {
		const struct kstack *ks = v[i]->kstack;

		if (ks->n == 2) {
			assert_string_equal(ks->names[0], "copy_page");
			assert_string_equal(ks->names[1], "do_sys");
		} else {
			assert_string_equal(ks->names[0], "vfs_read");
			assert_string_equal(ks->names[2], "[unknown]");
		}
	}
	free(v);
	/* only addresses not named yet are asked for again */
	addrs = profile_unnamed_kernel(&p, &n);
	assert_int_equal(n, 1);
	assert_int_equal(addrs[0], 0x40);
	free(addrs);
	profile_free(&p);
}

static void intervals_keep_stacks_and_forget_gone_processes(void **state)
{
	struct stack_ref ref = { .pid = 10, .gen = 1, .hash = 1 };
	struct profile p;

	(void)state;
	profile_init(&p);
	add_stack(&p, 10, 1, 100, 0, 3, NULL, 0, 1, &f_a, 0u);
	assert_int_equal(profile_forget_proc(&p, 10), -1); /* its samples point at its stacks */
	profile_reset_counts(&p);
	assert_int_equal(p.total, 0);
	profile_add_count(&p, &ref, 100, 2); /* announced in an earlier interval */
	assert_int_equal(p.total, 2);
	profile_reset_counts(&p);
	assert_int_equal(profile_forget_proc(&p, 10), 0);
	assert_int_equal(profile_forget_proc(&p, 10), -1); /* unknown now */
	profile_add_count(&p, &ref, 100, 2);
	assert_int_equal(p.unattributed, 2);
	assert_int_equal(p.total, 0);
	profile_free(&p);
}

static struct func *new_func(const char *name)
{
	struct func *f = calloc(1, sizeof(*f));

	f->name = strdup(name);
	f->file = strdup("/w/x.py");
	return f;
}

static void code_cache_is_per_image_and_check(void **state)
{
	struct code_ref c = { .addr = 0x7f00, .check = 42, .gen = 1 };
	struct code_ref other_check = { .addr = 0x7f00, .check = 43, .gen = 1 };
	struct code_ref other_gen = { .addr = 0x7f00, .check = 42, .gen = 2 };
	struct func *f = new_func("cached"), *g = new_func("placeholder");
	struct profile p;

	(void)state;
	profile_init(&p);
	assert_null(profile_code(&p, 10, &c));
	assert_int_equal(profile_keep_func(&p, 10, f, &c), 0);
	assert_int_equal(profile_keep_func(&p, 10, g, NULL), 0); /* kept, not found */
	assert_ptr_equal(profile_code(&p, 10, &c), f);
	assert_null(profile_code(&p, 10, &other_check));
	assert_null(profile_code(&p, 10, &other_gen));
	assert_null(profile_code(&p, 11, &c));
	/* process names: the fallbacks writers print */
	assert_string_equal(profile_proc_label(profile_proc(&p, 10)), "?");
	profile_describe_proc(&p, 10, "python3", "");
	assert_string_equal(profile_proc_label(profile_proc(&p, 10)), "python3");
	profile_describe_proc(&p, 10, "python3", "python3 app.py");
	assert_string_equal(profile_proc_label(profile_proc(&p, 10)), "python3 app.py");
	assert_string_equal(profile_proc_label(NULL), "?");
	profile_free(&p); /* frees f and g: ASan says if not */
}

/* an off-CPU stack carries its kernel frames: every count of it gets them,
 * named without the tracing frames that took it */
static void offcpu_stacks_keep_their_kernel_frames(void **state)
{
	static const uint64_t kips[] = { 0x100, 0x200, 0x300, 0x400, 0x500 };
	struct stack_ref ref = { .pid = 10, .gen = 1, .hash = 7 };
	struct pframe fr[1] = { { &f_a, 0 } };
	struct psample **v;
	size_t n;
	struct profile p;

	(void)state;
	profile_init(&p);
	assert_int_equal(profile_insert_stack(&p, &ref, STACK_OFFCPU, fr, 1, kips, 5, NULL, 0), 0);
	profile_add_count(&p, &ref, 100, 1000);
	profile_add_count(&p, &ref, 100, 500);
	assert_int_equal(name_kernel(&p, 5, "bpf_prog_6d3f_on_switch", "bpf_trace_run4",
				     "__schedule", "schedule", "do_nanosleep"), 5);
	v = profile_samples(&p, &n);
	assert_int_equal(n, 1);
	assert_int_equal(v[0]->count, 1500);
	assert_int_equal(v[0]->kstack->n, 3);
	assert_string_equal(v[0]->kstack->names[0], "__schedule");
	assert_string_equal(v[0]->kstack->names[2], "do_nanosleep");
	free(v);
	profile_free(&p);
}

/* leaks: the allocated bytes move aside, the live ones are counted anew
 * on the same stacks; the oldest age keeps its largest value */
static void leaks_move_counts_to_heap_and_count_again(void **state)
{
	struct stack_ref ref = { .pid = 10, .gen = 1, .hash = 9 };
	struct pframe fr[1] = { { &f_b, 0 } };
	struct psample **v;
	size_t n;
	struct profile p;

	(void)state;
	profile_init(&p);
	assert_int_equal(profile_insert_stack(&p, &ref, 0, fr, 1, NULL, 0, NULL, 0), 0);
	profile_add_count(&p, &ref, 100, 4096);
	profile_counts_to_heap(&p, PROFILE_HEAP_ALLOC_BYTES);
	assert_int_equal(p.total, 0);
	profile_add_count(&p, &ref, 100, 1024);
	profile_add_heap(&p, &ref, 100, PROFILE_HEAP_OLDEST_MS, 300);
	profile_add_heap(&p, &ref, 100, PROFILE_HEAP_OLDEST_MS, 200);
	v = profile_samples(&p, &n);
	assert_int_equal(n, 1);
	assert_int_equal(v[0]->count, 1024);
	assert_int_equal(v[0]->heap[PROFILE_HEAP_ALLOC_BYTES], 4096);
	assert_int_equal(v[0]->heap[PROFILE_HEAP_OLDEST_MS], 300);
	assert_int_equal(p.total, 1024);
	free(v);
	profile_free(&p);
}

/* a malloc'd function of a code object at addr, as naming makes them */
static struct func *code_func(const char *name)
{
	struct func *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	f->name = strdup(name);
	f->file = strdup("/w/gen.py");
	f->kind = FN_PYTHON;
	return f;
}

/* A daemon trims, after each interval, the stacks of live processes not
 * counted for `idle` intervals and the functions only they held; what is
 * still counted stays, with its functions, and a stack dropped is known
 * again once announced again. */
static void idle_stacks_and_their_code_go(void **state)
{
	struct profile p;
	struct stack_ref old = { .pid = 7, .gen = 1, .hash = 1 }, hot = { .pid = 7, .gen = 1, .hash = 2 };
	struct code_ref c_old = { .addr = 0x1000, .check = 1, .gen = 1 };
	struct code_ref c_hot = { .addr = 0x2000, .check = 2, .gen = 1 };
	struct func *f_old = code_func("made_once"), *f_hot = code_func("hot");
	struct pframe fr_old[2] = { { f_old, 0 }, { f_hot, 0 } }, fr_hot[1] = { { f_hot, 0 } };
	size_t stacks, code;

	(void)state;
	profile_init(&p);
	assert_int_equal(profile_keep_func(&p, 7, f_old, &c_old), 0);
	assert_int_equal(profile_keep_func(&p, 7, f_hot, &c_hot), 0);
	assert_int_equal(profile_insert_stack(&p, &old, 0, fr_old, 2, NULL, 0, NULL, 0), 0);
	assert_int_equal(profile_insert_stack(&p, &hot, 0, fr_hot, 1, NULL, 0, NULL, 0), 0);
	profile_add_count(&p, &old, 7, 1);
	profile_add_count(&p, &hot, 7, 1);
	assert_int_equal(profile_trim(&p, 1), 0); /* samples point at stacks: not now */
	for (int i = 0; i < 2; i++) { /* intervals 1 and 2: only `hot` runs */
		profile_reset_counts(&p);
		assert_int_equal(profile_trim(&p, 2), 0);
		profile_add_count(&p, &hot, 7, 1);
	}
	profile_reset_counts(&p);
	assert_int_equal(profile_trim(&p, 2), 1); /* interval 3: `old` idle for 3 */
	assert_null(profile_find_stack(&p, &old));
	assert_non_null(profile_find_stack(&p, &hot));
	assert_null(profile_code(&p, 7, &c_old)); /* held by `old` only: gone */
	assert_ptr_equal(profile_code(&p, 7, &c_hot), f_hot);
	assert_string_equal(f_hot->name, "hot");
	profile_kept(&p, &stacks, &code);
	assert_int_equal(stacks, 1);
	assert_int_equal(code, 1);
	/* a stack announced again (it recurs after a drain) is about to be
	 * counted: a trim before its counts come keeps it */
	for (int i = 0; i < 3; i++)
		profile_reset_counts(&p);
	assert_int_equal(profile_insert_stack(&p, &hot, 0, fr_hot, 1, NULL, 0, NULL, 0), 0);
	profile_reset_counts(&p);
	assert_int_equal(profile_trim(&p, 2), 0);
	assert_non_null(profile_find_stack(&p, &hot));
	/* announced again: named anew, counted */
	f_old = code_func("made_once");
	fr_old[0].fn = f_old;
	assert_int_equal(profile_keep_func(&p, 7, f_old, &c_old), 0);
	assert_int_equal(profile_insert_stack(&p, &old, 0, fr_old, 2, NULL, 0, NULL, 0), 0);
	profile_add_count(&p, &old, 7, 5);
	assert_int_equal(p.total, 5);
	profile_free(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(counts_sum_per_stack_thread_and_kernel_stack),
		cmocka_unit_test(kernel_frames_are_named_after_the_fact),
		cmocka_unit_test(intervals_keep_stacks_and_forget_gone_processes),
		cmocka_unit_test(code_cache_is_per_image_and_check),
		cmocka_unit_test(offcpu_stacks_keep_their_kernel_frames),
		cmocka_unit_test(leaks_move_counts_to_heap_and_count_again),
		cmocka_unit_test(idle_stacks_and_their_code_go),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
