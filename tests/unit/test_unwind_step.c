/* test_unwind_step.c - the native unwinder's step (bpf/unwind_step.h), the
 * one definition the BPF program and `dump` share, fed hand-built stacks:
 * each CFA rule finds the caller's pc, sp and rbp where the row says, the
 * leaf-only rbx rule holds for the leaf alone, the outermost frame ends the
 * walk, and an unreadable word stops it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "pyperf.h"

/* a fake stack: 64 words from BASE */
#define BASE 0x7ffd0000ull
struct mem {
	__u64 w[64];
	int reads;
};

static int fake_read(struct mem *m, __u64 addr, __u64 *dst)
{
	m->reads++;
	if (addr < BASE || addr + 8 > BASE + sizeof(m->w) || (addr - BASE) % 8)
		return -1;
	*dst = m->w[(addr - BASE) / 8];
	return 0;
}

#define UNWIND_READ(ctx, addr, dst) fake_read((struct mem *)(ctx), (addr), (dst))
#include "unwind_step.h"
#include "testutil.h"

static struct unwind_row rule(unsigned cfa_kind, unsigned cfa_off, unsigned rbp_kind, int off8)
{
	struct unwind_row r;

	memset(&r, 0, sizeof(r));
	r.cfa_kind = cfa_kind;
	r.cfa_off = cfa_off;
	r.rbp_kind = rbp_kind;
	r.rbp_off8 = off8;
	return r;
}

#define SLOT(i) (BASE + 8 * (i))

static void test_rsp_rule_with_saved_rbp(void **state)
{
	struct mem m = { 0 };
	struct unwind_regs g = { .pc = 0x401000, .sp = SLOT(2), .bp = 0x1234, .bx = 7 };
	struct unwind_row r = rule(CFA_RSP, 32, RBP_AT_CFA, -2); /* push rbp; sub $16 */

	(void)state;
	m.w[6 - 2] = SLOT(20);  /* saved rbp at CFA - 16 */
	m.w[6 - 1] = 0x402345;  /* return address at CFA - 8 */
	assert_int_equal(unwind_cfi_step(&m, &r, &g), UNWIND_STEPPED);
	assert_int_equal(g.pc, 0x402345);
	assert_int_equal(g.sp, SLOT(6));
	assert_int_equal(g.bp, SLOT(20));
	assert_int_equal(g.bx, 0); /* only the leaf's rbx is known */
}

static void test_rbp_rule_and_same_rbp(void **state)
{
	struct mem m = { 0 };
	struct unwind_regs g = { .pc = 0x401000, .sp = SLOT(1), .bp = SLOT(10) };
	struct unwind_row r = rule(CFA_RBP, 16, RBP_SAME, 0);

	(void)state;
	m.w[11] = 0x40aaaa;
	assert_int_equal(unwind_cfi_step(&m, &r, &g), UNWIND_STEPPED);
	assert_int_equal(g.pc, 0x40aaaa);
	assert_int_equal(g.sp, SLOT(12));
	assert_int_equal(g.bp, SLOT(10));
	g.bp = 0; /* no frame pointer to start from: stop */
	assert_int_equal(unwind_cfi_step(&m, &r, &g), UNWIND_STOP);
}

static void test_plt_rule_depends_on_the_pc(void **state)
{
	struct mem m = { 0 };
	struct unwind_row r = rule(CFA_PLT, 11, RBP_SAME, 0);
	struct unwind_regs before = { .pc = 0x401005, .sp = SLOT(4) };  /* pc & 15 = 5 < 11 */
	struct unwind_regs after = { .pc = 0x40100c, .sp = SLOT(4) };   /* 12 >= 11: pushed */

	(void)state;
	m.w[4] = 0x4000a0;
	m.w[5] = 0x4000b0;
	assert_int_equal(unwind_cfi_step(&m, &r, &before), UNWIND_STEPPED);
	assert_int_equal(before.pc, 0x4000a0);
	assert_int_equal(before.sp, SLOT(5));
	assert_int_equal(unwind_cfi_step(&m, &r, &after), UNWIND_STEPPED);
	assert_int_equal(after.pc, 0x4000b0);
	assert_int_equal(after.sp, SLOT(6));
}

static void test_realigned_frame_reads_the_cfa_below_rbp(void **state)
{
	struct mem m = { 0 };
	struct unwind_regs g = { .pc = 0x401000, .sp = SLOT(0), .bp = SLOT(8) };
	struct unwind_row r = rule(CFA_RBP_DEREF, 8, RBP_AT_RBP, 0); /* CFA = *(rbp - 8) */

	(void)state;
	m.w[7] = SLOT(30);      /* the caller's rsp, kept below rbp */
	m.w[8] = SLOT(40);      /* saved rbp at [rbp] */
	m.w[29] = 0x40cccc;
	assert_int_equal(unwind_cfi_step(&m, &r, &g), UNWIND_STEPPED);
	assert_int_equal(g.pc, 0x40cccc);
	assert_int_equal(g.sp, SLOT(30));
	assert_int_equal(g.bp, SLOT(40));
}

static void test_rbx_rule_holds_for_the_leaf_only(void **state)
{
	struct mem m = { 0 };
	struct unwind_regs g = { .pc = 0x401000, .sp = SLOT(0), .bx = SLOT(3) };
	struct unwind_row r = rule(CFA_RBX, 8, RBP_SAME, 0);

	(void)state;
	m.w[3] = 0x40dddd;
	assert_int_equal(unwind_cfi_step(&m, &r, &g), UNWIND_STEPPED);
	assert_int_equal(g.pc, 0x40dddd);
	/* the caller's rbx is unknown: the same rule one frame up stops */
	assert_int_equal(unwind_cfi_step(&m, &r, &g), UNWIND_STOP);
}

static void test_end_unsupported_and_unreadable(void **state)
{
	struct mem m = { 0 };
	struct unwind_regs g = { .pc = 0x401000, .sp = SLOT(60), .bp = 1 };
	struct unwind_row end = rule(CFA_END, 0, RBP_SAME, 0);
	struct unwind_row bad = rule(CFA_UNSUPPORTED, 0, RBP_SAME, 0);
	struct unwind_row off = rule(CFA_RSP, 64, RBP_SAME, 0); /* past the stack */
	struct unwind_regs keep = g;

	(void)state;
	assert_int_equal(unwind_cfi_step(&m, &end, &g), UNWIND_END);
	assert_int_equal(unwind_cfi_step(&m, &bad, &g), UNWIND_STOP);
	assert_int_equal(unwind_cfi_step(&m, &off, &g), UNWIND_STOP);
	assert_memory_equal(&g, &keep, sizeof(g)); /* nothing was read into the frame */
}

static void test_frame_pointer_step(void **state)
{
	struct mem m = { 0 };
	struct unwind_regs g = { .pc = 0x7f0000001000, .sp = SLOT(2), .bp = SLOT(6), .bx = 5 };

	(void)state;
	m.w[6] = SLOT(12);
	m.w[7] = 0x40eeee;
	assert_int_equal(unwind_fp_step(&m, &g), UNWIND_STEPPED);
	assert_int_equal(g.pc, 0x40eeee);
	assert_int_equal(g.sp, SLOT(8));
	assert_int_equal(g.bp, SLOT(12));
	assert_int_equal(g.bx, 0);
	g.bp = SLOT(1); /* below rsp: not a frame pointer */
	assert_int_equal(unwind_fp_step(&m, &g), UNWIND_STOP);
}

/* The call check the stack scan uses, against the assembler: every call
 * form ends where a return address would point, and the jumps, pushes and
 * moves around them (ending there too) are not calls. */
static void test_code_is_call_as_assembled(void **state)
{
	static const char *const src =
		"call .+0x100\n call *%rax\n call *%r11\n call *(%rax)\n call *(%r12)\n"
		"call *0x8(%rsp)\n call *0x12345(%rbx)\n call *0x10(%rip)\n"
		"call *0x7fff0000(,%rcx,8)\n call *(%rax,%rbx,2)\n call *-0x8(%rbp)\n"
		"jmp *%rax\n jmp *0x10(%rip)\n push %rbp\n ret\n nop\n"
		"mov %rsp,%rbp\n add $0x8,%rsp\n jmp .+0x100\n";
	char cmd[512], *out, *line, *save = NULL;
	FILE *f;
	__u8 text[4096] = { 0 };
	unsigned calls = 0, others = 0;

	(void)state;
	f = fopen("/tmp/test_unwind_step.s", "w");
	assert_non_null(f);
	fprintf(f, ".text\n.fill 16, 1, 0x90\n%s", src);
	fclose(f);
	run("as -o /tmp/test_unwind_step.o /tmp/test_unwind_step.s && "
	    "objcopy -O binary -j .text /tmp/test_unwind_step.o /tmp/test_unwind_step.bin");
	f = fopen("/tmp/test_unwind_step.bin", "rb");
	assert_non_null(f);
	assert_true(fread(text, 1, sizeof(text) - 16, f) > 16);
	fclose(f);
	/* objdump -d gives each instruction's start; the next start is its end */
	snprintf(cmd, sizeof(cmd), "objdump -d --no-show-raw-insn /tmp/test_unwind_step.o");
	out = command_output(cmd);
	{
		unsigned starts[64], n = 0;
		char mnems[64][32];

		for (line = strtok_r(out, "\n", &save); line && n < 64;
		     line = strtok_r(NULL, "\n", &save)) {
			unsigned at;

			if (sscanf(line, " %x: %31s", &at, mnems[n]) == 2 && at >= 16)
				starts[n++] = at;
		}
		for (unsigned i = 0; i + 1 < n; i++) {
			__u8 b[16] = { 0 };
			unsigned end = starts[i + 1];
			int is_call = !strncmp(mnems[i], "call", 4);

			memcpy(b, text + end - 8, 8);
			if (unwind_code_is_call(b) != is_call)
				fail_msg("%s ending at %#x: taken for %s", mnems[i], end,
					 is_call ? "no call" : "a call");
			calls += is_call;
			others += !is_call;
		}
	}
	free(out);
	assert_int_equal(calls, 11);
	assert_true(others >= 7);
}

/* A frame-pointer step is plausible when the caller's rbp is above this
 * one, and not too far, or 0 (the outermost frame) */
static void test_fp_plausible(void **state)
{
	struct unwind_regs a = { .bp = 0x7ffd0000 }, b = a;

	(void)state;
	b.bp = a.bp + 0x40;
	assert_true(unwind_fp_plausible(&a, &b));
	b.bp = 0;
	assert_true(unwind_fp_plausible(&a, &b));
	b.bp = a.bp;
	assert_false(unwind_fp_plausible(&a, &b));
	b.bp = a.bp - 0x10;
	assert_false(unwind_fp_plausible(&a, &b));
	b.bp = a.bp + UNWIND_FP_FRAME_MAX + 8;
	assert_false(unwind_fp_plausible(&a, &b));
}

/* after a scan: rbp kept when it points into the stack above, else the
 * first pushed word below the return address that does */
static void test_scan_bp(void **state)
{
	struct mem m = { 0 };
	struct unwind_regs g = { .pc = 0x401000, .sp = SLOT(10), .bp = SLOT(30) };

	(void)state;
	unwind_scan_bp(&m, &g);
	assert_int_equal(g.bp, SLOT(30)); /* kept */
	g.bp = 0x1234;                    /* data */
	m.w[10 - 2] = 77;                 /* a pushed register, not a frame pointer */
	m.w[10 - 3] = SLOT(40);           /* the caller's rbp */
	unwind_scan_bp(&m, &g);
	assert_int_equal(g.bp, SLOT(40));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rsp_rule_with_saved_rbp),
		cmocka_unit_test(test_rbp_rule_and_same_rbp),
		cmocka_unit_test(test_plt_rule_depends_on_the_pc),
		cmocka_unit_test(test_realigned_frame_reads_the_cfa_below_rbp),
		cmocka_unit_test(test_rbx_rule_holds_for_the_leaf_only),
		cmocka_unit_test(test_end_unsupported_and_unreadable),
		cmocka_unit_test(test_frame_pointer_step),
		cmocka_unit_test(test_code_is_call_as_assembled),
		cmocka_unit_test(test_fp_plausible),
		cmocka_unit_test(test_scan_bp),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
