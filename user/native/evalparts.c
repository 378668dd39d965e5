/* evalparts.c - see evalparts.h. */
#include "evalparts.h"

#include "dynlib.h"
#include "unwind_table.h"

#include <capstone/capstone.h>
#include <gelf.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* capstone's functions used here.  The static build links them; the
 * dynamic one opens the library when a stripped interpreter first needs it
 * (most runs never do): linked, its relocations and tables were 5 MB of
 * every run's RSS and a part of its start-up. */
static struct {
	cs_err (*open)(cs_arch, cs_mode, csh *);
	cs_err (*option)(csh, cs_opt_type, size_t);
	cs_insn *(*malloc)(csh);
	bool (*disasm_iter)(csh, const uint8_t **, size_t *, uint64_t *, cs_insn *);
	bool (*insn_group)(csh, const cs_insn *, unsigned int);
	void (*free)(cs_insn *, size_t);
	cs_err (*close)(csh *);
} cs_fn;

#define CS_STR(x) #x
#define CS_SONAME(major) "libcapstone.so." CS_STR(major)

static void cs_load(void)
{
#ifdef PYPERF_STATIC
	cs_fn.open = cs_open;
	cs_fn.option = cs_option;
	cs_fn.malloc = cs_malloc;
	cs_fn.disasm_iter = cs_disasm_iter;
	cs_fn.insn_group = cs_insn_group;
	cs_fn.free = cs_free;
	cs_fn.close = cs_close;
#else
	static const char *const names[] = { "cs_open", "cs_option", "cs_malloc", "cs_disasm_iter",
					     "cs_insn_group", "cs_free", "cs_close" };
	char why[256];

	/* in the struct's order; nothing is set when one is missing */
	dynlib_open(CS_SONAME(CS_API_MAJOR), names, (void **)&cs_fn,
		    sizeof(names) / sizeof(names[0]), why, sizeof(why));
#endif
}

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

	static pthread_once_t once = PTHREAD_ONCE_INIT;

	if (!elf || end <= start || !(code = code_at(elf, start, end, &len)))
		return 0;
	pthread_once(&once, cs_load);
	if (!cs_fn.open || cs_fn.open(CS_ARCH_X86, CS_MODE_64, &cs) != CS_ERR_OK)
		return 0;
	cs_fn.option(cs, CS_OPT_DETAIL, CS_OPT_ON);
	if (!(insn = cs_fn.malloc(cs))) {
		cs_fn.close(&cs);
		return 0;
	}
	/* gcc puts no data in .text on x86-64: a linear sweep sees every
	 * instruction */
	while (nt < TARGETS_MAX && cs_fn.disasm_iter(cs, &code, &len, &addr, insn)) {
		const cs_x86 *x = &insn->detail->x86;
		uint64_t target;

		if (!cs_fn.insn_group(cs, insn, X86_GRP_JUMP) || x->op_count != 1 ||
		    x->operands[0].type != X86_OP_IMM)
			continue;
		target = (uint64_t)x->operands[0].imm;
		if ((target < start || target >= end) && !(is_func && is_func(ctx, target)))
			targets[nt++] = target;
	}
	cs_fn.free(insn, 1);
	cs_fn.close(&cs);
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
