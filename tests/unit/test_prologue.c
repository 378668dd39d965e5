/* test_prologue.c - cmocka tests for user/native/prologue.c: unwind rules guessed
 * from the first instructions of functions without CFI.
 *
 * The byte sequences are real prologues (OpenBLAS's dgemm_kernel_ZEN as
 * objdump shows it in Debian's libopenblas 0.3.21, a classic frame-pointer
 * prologue, a push/sub one) and broken ones (truncated in the middle of an
 * instruction, rsp aligned while it holds the CFA, rbp overwritten before
 * it was saved).  Then the real library: the gaps of its table get rows for
 * the GEMM kernels, every row still sorted, and an address inside
 * dgemm_kernel_ZEN's body resolves to CFA = rbx + 0x68. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "elfsym.h"
#include "prologue.h"
#include "testutil.h"
#include "unwind_table.h"

#ifndef OPENBLAS
#define OPENBLAS "/usr/lib/x86_64-linux-gnu/openblas-pthread/libopenblas.so.0"
#endif

/* the rule at byte `at` of a function whose rows are r[0..n) from pc 0x1000 */
static const struct unwind_row *rule_at(const struct unwind_row *r, size_t n, uint32_t at)
{
	const struct unwind_row *hit = NULL;

	for (size_t i = 0; i < n; i++)
		if (r[i].pc <= 0x1000 + at)
			hit = &r[i];
	return hit;
}

static void expect(const struct unwind_row *r, unsigned kind, unsigned off, unsigned rbp_kind,
		   int rbp_off8)
{
	assert_non_null(r);
	assert_int_equal(r->cfa_kind, kind);
	if (kind == CFA_UNSUPPORTED)
		return;
	assert_int_equal(r->cfa_off, off);
	assert_int_equal(r->rbp_kind, rbp_kind);
	if (rbp_kind == RBP_AT_CFA)
		assert_int_equal(r->rbp_off8, rbp_off8);
}

static const uint8_t dgemm_kernel_zen[] = {
	0x48, 0x83, 0xec, 0x60,                   /* sub $0x60,%rsp */
	0x48, 0x89, 0x1c, 0x24,                   /* mov %rbx,(%rsp) */
	0x48, 0x89, 0x6c, 0x24, 0x08,             /* mov %rbp,0x8(%rsp) */
	0x4c, 0x89, 0x64, 0x24, 0x10,             /* mov %r12,0x10(%rsp) */
	0xc5, 0xf8, 0x77,                         /* vzeroupper */
	0x4c, 0x8b, 0x54, 0x24, 0x68,             /* mov 0x68(%rsp),%r10 */
	0x48, 0x89, 0xe3,                         /* mov %rsp,%rbx */
	0x48, 0x81, 0xec, 0x80, 0x70, 0x00, 0x00, /* sub $0x7080,%rsp */
	0x48, 0x81, 0xe4, 0x00, 0xf0, 0xff, 0xff, /* and $-4096,%rsp */
	0x48, 0x83, 0xff, 0x00,                   /* cmp $0x0,%rdi */
	0x0f, 0x84, 0x00, 0x01, 0x00, 0x00,       /* je ...: not followed */
};

static void test_rsp_kept_in_rbx_before_aligning(void **state)
{
	struct unwind_row r[64];
	size_t n = prologue_rows(dgemm_kernel_zen, sizeof(dgemm_kernel_zen), 0x1000, r, 64);

	(void)state;
	assert_int_equal(r[0].pc, 0x1000);
	expect(rule_at(r, n, 0), CFA_RSP, 8, RBP_SAME, 0);
	expect(rule_at(r, n, 4), CFA_RSP, 0x68, RBP_SAME, 0);
	expect(rule_at(r, n, 13), CFA_RSP, 0x68, RBP_AT_CFA, -12); /* rbp at rsp + 8 */
	expect(rule_at(r, n, 29), CFA_RBX, 0x68, RBP_AT_CFA, -12); /* after mov %rsp,%rbx */
	/* aligning rsp does not matter once rbx holds the CFA; the body keeps
	 * the rule */
	expect(rule_at(r, n, 0x1000), CFA_RBX, 0x68, RBP_AT_CFA, -12);
	for (size_t i = 1; i < n; i++)
		assert_true(r[i].pc > r[i - 1].pc);
}

static void test_frame_pointer_and_push_sub_prologues(void **state)
{
	static const uint8_t fp[] = {
		0xf3, 0x0f, 0x1e, 0xfa, /* endbr64 */
		0x55,                   /* push %rbp */
		0x48, 0x89, 0xe5,       /* mov %rsp,%rbp */
		0x48, 0x83, 0xec, 0x20, /* sub $0x20,%rsp */
		0x31, 0xc0,             /* xor %eax,%eax: not followed */
	};
	static const uint8_t push_sub[] = {
		0x41, 0x54,             /* push %r12 */
		0x55,                   /* push %rbp */
		0x53,                   /* push %rbx */
		0x48, 0x83, 0xec, 0x38, /* sub $0x38,%rsp */
		0x64, 0x48, 0x8b, 0x0c, 0x25, 0x28, 0, 0, 0, /* mov %fs:0x28,%rcx */
	};
	struct unwind_row r[64];
	size_t n;

	(void)state;
	n = prologue_rows(fp, sizeof(fp), 0x1000, r, 64);
	expect(rule_at(r, n, 4), CFA_RSP, 8, RBP_SAME, 0);
	expect(rule_at(r, n, 5), CFA_RSP, 16, RBP_AT_CFA, -2);
	expect(rule_at(r, n, 8), CFA_RBP, 16, RBP_AT_CFA, -2);
	expect(rule_at(r, n, 100), CFA_RBP, 16, RBP_AT_CFA, -2); /* sub: rbp holds it */
	n = prologue_rows(push_sub, sizeof(push_sub), 0x1000, r, 64);
	expect(rule_at(r, n, 2), CFA_RSP, 16, RBP_SAME, 0);
	expect(rule_at(r, n, 3), CFA_RSP, 24, RBP_AT_CFA, -3);
	expect(rule_at(r, n, 100), CFA_RSP, 0x58, RBP_AT_CFA, -3);
}

static void test_what_it_cannot_follow(void **state)
{
	static const uint8_t align_rsp[] = {
		0x48, 0x83, 0xe4, 0xe0, /* and $-32,%rsp: the CFA is lost */
	};
	static const uint8_t clobber_rbp[] = {
		0x48, 0x89, 0xfd,       /* mov %rdi,%rbp: caller's rbp gone unsaved */
		0x48, 0x83, 0xec, 0x08,
	};
	struct unwind_row r[64];
	size_t n;

	(void)state;
	n = prologue_rows(align_rsp, sizeof(align_rsp), 0x1000, r, 64);
	expect(rule_at(r, n, 0), CFA_RSP, 8, RBP_SAME, 0);
	expect(rule_at(r, n, 4), CFA_UNSUPPORTED, 0, 0, 0);
	/* stops before the mov: the entry rule holds (right until then) */
	n = prologue_rows(clobber_rbp, sizeof(clobber_rbp), 0x1000, r, 64);
	assert_int_equal(n, 1);
	/* every cut of a real prologue stops cleanly inside its bytes */
	for (size_t len = 0; len <= sizeof(dgemm_kernel_zen); len++) {
		n = prologue_rows(dgemm_kernel_zen, len, 0x1000, r, 64);
		assert_true(n >= 1);
		assert_true(r[n - 1].pc <= 0x1000 + len);
	}
	assert_int_equal(prologue_rows(dgemm_kernel_zen, sizeof(dgemm_kernel_zen), 0x1000, r, 0), 0);
	assert_int_equal(prologue_rows(dgemm_kernel_zen, sizeof(dgemm_kernel_zen), 0x1000, r, 2), 2);
}

static void test_openblas_kernels_get_rows(void **state)
{
	static const char *const names[] = { "dgemm_kernel_ZEN", "dgemm_beta_ZEN" };
	struct unwind_table t = { 0 };
	uint64_t at[2], size[2];
	char err[512];
	size_t before;
	long got, i;
	int fd;

	(void)state;
	if (access(OPENBLAS, R_OK))
		fail_msg("%s is missing (scripts/setup --test-deps installs python3-numpy, "
			 "which brings OpenBLAS)", OPENBLAS);
	if (elf_find_symbols(OPENBLAS, names, 2, at, size, err, sizeof(err)))
		fail_msg("%s", err);
	if (!at[0] || !at[1])
		fail_msg("%s has no dgemm_kernel_ZEN/dgemm_beta_ZEN (another OpenBLAS build?)",
			 OPENBLAS);
	fd = open(OPENBLAS, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(unwind_table_build(fd, OPENBLAS, &t, err, sizeof(err)), 0);
	i = unwind_table_find(&t, at[0] + 0x100);
	assert_true(i >= 0);
	assert_int_equal(t.rows[i].cfa_kind, CFA_NONE); /* no CFI: the gap */
	before = t.n;
	got = prologue_fill_gaps(fd, &t);
	assert_true(got > 10);
	assert_true(t.n > before);
	for (size_t k = 1; k < t.n; k++)
		assert_true(t.rows[k].pc > t.rows[k - 1].pc);
	i = unwind_table_find(&t, at[0] + 0x100);
	assert_int_equal(t.rows[i].cfa_kind, CFA_RBX);
	assert_int_equal(t.rows[i].cfa_off, 0x68);
	assert_int_equal(t.rows[i].rbp_kind, RBP_AT_CFA);
	assert_int_equal(t.rows[i].rbp_off8, -12);
	i = unwind_table_find(&t, at[1] + 0x40); /* dgemm_beta_ZEN touches no rsp */
	assert_int_equal(t.rows[i].cfa_kind, CFA_RSP);
	assert_int_equal(t.rows[i].cfa_off, 8);
	/* past the kernel's end the gap goes on, unless CFI starts there */
	i = unwind_table_find(&t, at[0] + size[0]);
	assert_true(t.rows[i].pc == at[0] + size[0]);
	unwind_table_free(&t);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rsp_kept_in_rbx_before_aligning),
		cmocka_unit_test(test_frame_pointer_and_push_sub_prologues),
		cmocka_unit_test(test_what_it_cannot_follow),
		cmocka_unit_test(test_openblas_kernels_get_rows),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
