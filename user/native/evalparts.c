/* evalparts.c - see evalparts.h. */
#include "evalparts.h"

#include "unwind_table.h"

#include <capstone/capstone.h>
#include <gelf.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

enum {
	CODE_MAX = 1 << 20,          /* bytes of the exported part read at most */
	TARGETS_MAX = 256,           /* jumps out of it followed */
};

/* the bytes of [start, end) from the code section holding them */
static const uint8_t *code_at(Elf *elf, uint64_t start, uint64_t end, size_t *len)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(elf, scn))) {
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
		    !(sh.sh_flags & SHF_EXECINSTR) || start < sh.sh_addr ||
		    start >= sh.sh_addr + sh.sh_size)
			continue;
		if (!(d = elf_getdata(scn, NULL)) || !d->d_buf || d->d_size != sh.sh_size)
			return NULL;
		if (end > sh.sh_addr + sh.sh_size)
			end = sh.sh_addr + sh.sh_size;
		*len = end - start < CODE_MAX ? end - start : CODE_MAX;
		return (const uint8_t *)d->d_buf + (start - sh.sh_addr);
	}
	return NULL;
}

static int cmp_part(const void *a, const void *b)
{
	const struct evalpart *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

size_t evalparts_find(Elf *elf, uint64_t start, uint64_t end, evalparts_is_func is_func,
		      void *ctx, struct evalpart *out, size_t cap)
{
	uint64_t targets[TARGETS_MAX], addr = start;
	struct fde_range ranges[TARGETS_MAX];
	size_t len = 0, nt = 0, n = 0;
	const uint8_t *code;
	cs_insn *insn;
	csh cs;

	if (!elf || end <= start || !(code = code_at(elf, start, end, &len)))
		return 0;
	if (cs_open(CS_ARCH_X86, CS_MODE_64, &cs) != CS_ERR_OK)
		return 0;
	cs_option(cs, CS_OPT_DETAIL, CS_OPT_ON);
	if (!(insn = cs_malloc(cs))) {
		cs_close(&cs);
		return 0;
	}
	/* gcc puts no data in .text on x86-64: a linear sweep sees every
	 * instruction */
	while (nt < TARGETS_MAX && cs_disasm_iter(cs, &code, &len, &addr, insn)) {
		const cs_x86 *x = &insn->detail->x86;
		uint64_t target;

		if (!cs_insn_group(cs, insn, X86_GRP_JUMP) || x->op_count != 1 ||
		    x->operands[0].type != X86_OP_IMM)
			continue;
		target = (uint64_t)x->operands[0].imm;
		if ((target < start || target >= end) && !(is_func && is_func(ctx, target)))
			targets[nt++] = target;
	}
	cs_free(insn, 1);
	cs_close(&cs);
	if (!nt || unwind_fde_ranges(elf, targets, nt, ranges) != 0)
		return 0;
	for (size_t i = 0; i < nt; i++) {
		bool known = ranges[i].lo == ranges[i].hi || (ranges[i].lo < end && start < ranges[i].hi);

		for (size_t k = 0; k < n && !known; k++)
			known = out[k].start == ranges[i].lo;
		if (known || n == cap)
			continue;
		out[n].start = ranges[i].lo;
		out[n].end = ranges[i].hi;
		n++;
	}
	if (n > 1)
		qsort(out, n, sizeof(*out), cmp_part);
	return n;
}
