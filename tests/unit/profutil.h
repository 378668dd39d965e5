/* profutil.h - hand-built profiles for the output writers' unit tests.
 * Include after <cmocka.h> and profile.h. */
#ifndef PYPERF_PROFUTIL_H
#define PYPERF_PROFUTIL_H

#include <stdarg.h>

/* Insert a stack of n frames (leaf first, each a struct func * and a
 * uint32_t instruction offset) and kernel frames kips[0..nk) of process
 * pid, image 1, and count it for thread tid. */
static inline void add_stack(struct profile *p, uint32_t pid, uint64_t hash, uint32_t tid,
			     uint32_t flags, uint64_t count, const uint64_t *kips, unsigned nk,
			     uint32_t n, ...)
{
	struct pframe frames[16];
	struct stack_ref ref = { .pid = pid, .gen = 1, .hash = hash };
	va_list ap;

	assert_true(n <= 16);
	va_start(ap, n);
	for (uint32_t i = 0; i < n; i++) {
		frames[i].fn = va_arg(ap, struct func *);
		frames[i].instr = va_arg(ap, uint32_t);
	}
	va_end(ap);
	assert_int_equal(profile_insert_stack(p, &ref, flags, frames, n, kips, nk, NULL, 0), 0);
	profile_add_count(p, &ref, tid, count);
}

#endif
