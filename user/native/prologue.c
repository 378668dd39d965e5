/* prologue.c - unwind rules for x86-64 functions without CFI (prologue.h).
 *
 * The walk keeps what a CFI row would say after each instruction: where the
 * CFA is (rsp, rbp or rbx plus an offset) and where the caller's rbp was
 * saved.  It knows the instructions hand-written prologues are made of
 * (push, sub/add/lea on rsp, mov of rsp into rbx or rbp, and rsp, stores of
 * registers to the stack, loads from it, nops, endbr64, vzeroupper) and
 * stops at the first other one: from there on, the rule it reached. */
#include "prologue.h"

#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum {
	CODE_BYTES = 160,   /* bytes of a function's start read */
	MAX_INSNS = 48,     /* instructions followed */
	R_RSP = 4, R_RBX = 3, R_RBP = 5,
};

struct state {
	int base;           /* R_RSP, R_RBP or R_RBX: CFA = base + off */
	int64_t off;
	bool rsp_known;     /* rsp = CFA - rsp_off (always, while base is rsp) */
	int64_t rsp_off;
	bool rbp_saved;     /* caller's rbp at CFA + rbp_at */
	int64_t rbp_at;
	bool lost;          /* the rule can no longer be told */
};

static struct unwind_row row_of(const struct state *s, uint32_t pc)
{
	struct unwind_row r;

	memset(&r, 0, sizeof(r));
	r.pc = pc;
	if (s->lost || s->off < 0 || s->off > UNWIND_CFA_OFF_MAX) {
		r.cfa_kind = CFA_UNSUPPORTED;
		return r;
	}
	r.cfa_kind = s->base == R_RSP ? CFA_RSP : s->base == R_RBP ? CFA_RBP : CFA_RBX;
	r.cfa_off = (uint32_t)s->off;
	r.rbp_kind = RBP_SAME;
	if (s->rbp_saved) {
		if (s->rbp_at % 8 || s->rbp_at / 8 < UNWIND_RBP_OFF8_MIN ||
		    s->rbp_at / 8 > UNWIND_RBP_OFF8_MAX) {
			r.rbp_kind = RBP_LOST;
		} else {
			r.rbp_kind = RBP_AT_CFA;
			r.rbp_off8 = (int32_t)(s->rbp_at / 8);
		}
	}
	return r;
}

static int64_t le_s32(const uint8_t *p)
{
	int32_t v;

	memcpy(&v, p, 4); /* x86-64: little-endian */
	return v;
}

/* Length of a ModRM operand (modrm byte included) at p, or 0 if p[0..n)
 * does not hold it; *disp gets the displacement, *sib_rsp whether the
 * memory operand is [rsp + disp] (SIB 0x24). */
static size_t modrm_len(const uint8_t *p, size_t n, int64_t *disp, bool *sib_rsp)
{
	uint8_t mod, rm;
	size_t len = 1;

	*disp = 0;
	*sib_rsp = false;
	if (n < 1)
		return 0;
	mod = p[0] >> 6;
	rm = p[0] & 7;
	if (mod == 3)
		return 1;
	if (rm == 4) { /* a SIB byte */
		if (n < 2)
			return 0;
		*sib_rsp = p[1] == 0x24;
		if (mod == 0 && (p[1] & 7) == 5)
			return n >= 6 ? (*disp = le_s32(p + 2), 6) : 0;
		len = 2;
	} else if (mod == 0 && rm == 5) { /* rip + disp32 */
		return n >= 5 ? (*disp = le_s32(p + 1), 5) : 0;
	}
	if (mod == 1) {
		if (n < len + 1)
			return 0;
		*disp = (int8_t)p[len];
		return len + 1;
	}
	if (mod == 2) {
		if (n < len + 4)
			return 0;
		*disp = le_s32(p + len);
		return len + 4;
	}
	return len;
}

/* rsp moved down by d (d < 0: up) */
static void rsp_moved(struct state *s, int64_t d)
{
	if (!s->rsp_known) {
		if (s->base == R_RSP)
			s->lost = true;
		return;
	}
	s->rsp_off += d;
	if (s->base == R_RSP)
		s->off = s->rsp_off;
}

/* Follow one instruction at p[0..n).  Returns its length, or 0 for one this
 * walk does not follow (the walk ends before it). */
static size_t step(struct state *s, const uint8_t *p, size_t n)
{
	uint8_t rex = 0;
	size_t i = 0, m;
	int64_t disp;
	bool at_rsp;
	int reg, rm;

	if (n >= 4 && p[0] == 0xf3 && p[1] == 0x0f && p[2] == 0x1e && p[3] == 0xfa)
		return 4; /* endbr64 */
	if (n >= 3 && p[0] == 0xc5 && p[1] == 0xf8 && p[2] == 0x77)
		return 3; /* vzeroupper */
	if (p[0] == 0x90)
		return 1;
	while (i < n && p[i] == 0x66) /* operand size: nops only */
		i++;
	if (i + 2 <= n && p[i] == 0x0f && p[i + 1] == 0x1f) { /* nopw/nopl */
		m = modrm_len(p + i + 2, n - i - 2, &disp, &at_rsp);
		return m ? i + 2 + m : 0;
	}
	if (i)
		return i < n && p[i] == 0x90 ? i + 1 : 0;
	if (p[0] >= 0x40 && p[0] <= 0x4f) {
		rex = p[0];
		i = 1;
	}
	if (i >= n)
		return 0;
	if (p[i] >= 0x50 && p[i] <= 0x57 && !(rex & 8)) { /* push */
		reg = (p[i] & 7) | (rex & 1 ? 8 : 0);
		rsp_moved(s, 8);
		if (reg == R_RBP && s->rsp_known && !s->rbp_saved) {
			s->rbp_saved = true;
			s->rbp_at = -s->rsp_off;
		}
		return i + 1;
	}
	if (!(rex & 8) || i + 2 > n)
		return 0; /* all that follows is 64-bit (REX.W) */
	reg = ((p[i + 1] >> 3) & 7) | (rex & 4 ? 8 : 0);
	rm = (p[i + 1] & 7) | (rex & 1 ? 8 : 0);
	switch (p[i]) {
	case 0x83: /* op r/m64, imm8 */
	case 0x81: /* op r/m64, imm32 */
		if ((p[i + 1] >> 6) != 3 || rm != R_RSP)
			return 0;
		m = p[i] == 0x83 ? 1 : 4;
		if (i + 2 + m > n)
			return 0;
		disp = p[i] == 0x83 ? (int8_t)p[i + 2] : le_s32(p + i + 2);
		if (reg == 5) /* sub */
			rsp_moved(s, disp);
		else if (reg == 0) /* add */
			rsp_moved(s, -disp);
		else if (reg == 4) /* and: aligned, by an unknown amount */
			s->rsp_known = false, s->lost |= s->base == R_RSP;
		else if (reg != 7) /* cmp */
			return 0;
		return i + 2 + m;
	case 0x8d: /* lea m, r64 */
		m = modrm_len(p + i + 1, n - i - 1, &disp, &at_rsp);
		if (!m || reg != R_RSP)
			return m && reg != R_RBX && reg != R_RBP ? i + 1 + m : 0;
		if (!at_rsp)
			return 0;
		rsp_moved(s, -disp);
		return i + 1 + m;
	case 0x89: /* mov r64, r/m64 */
	case 0x8b: /* mov r/m64, r64 */
		if ((p[i + 1] >> 6) == 3) { /* register to register */
			int src = p[i] == 0x89 ? reg : rm, dst = p[i] == 0x89 ? rm : reg;

			if (dst == R_RSP || dst == s->base)
				return 0;
			if (src == R_RSP && (dst == R_RBX || dst == R_RBP) && s->rsp_known &&
			    s->base == R_RSP) {
				s->base = dst;
				s->off = s->rsp_off;
			} else if (dst == R_RBP && !s->rbp_saved) {
				return 0; /* the caller's rbp overwritten, not saved */
			}
			return i + 2;
		}
		m = modrm_len(p + i + 1, n - i - 1, &disp, &at_rsp);
		if (!m)
			return 0;
		if (p[i] == 0x89) { /* a store */
			if (reg == R_RBP && at_rsp && s->rsp_known && !s->rbp_saved) {
				s->rbp_saved = true;
				s->rbp_at = disp - s->rsp_off;
			}
			return i + 1 + m;
		}
		/* a load: not into what holds the CFA or the caller's rbp */
		if (reg == R_RSP || reg == s->base || (reg == R_RBP && !s->rbp_saved))
			return 0;
		return i + 1 + m;
	}
	return 0;
}

static bool same_rule(const struct unwind_row *a, const struct unwind_row *b)
{
	return a->cfa_kind == b->cfa_kind && a->cfa_off == b->cfa_off &&
	       a->rbp_kind == b->rbp_kind && a->rbp_off8 == b->rbp_off8;
}

size_t prologue_rows(const uint8_t *code, size_t len, uint32_t start, struct unwind_row *out,
		     size_t cap)
{
	struct state s = { .base = R_RSP, .off = 8, .rsp_known = true, .rsp_off = 8 };
	size_t k = 0, at = 0;

	if (!cap)
		return 0;
	out[k++] = row_of(&s, start);
	for (int i = 0; i < MAX_INSNS && at < len && !s.lost; i++) {
		size_t l = step(&s, code + at, len - at);
		struct unwind_row r;

		if (!l)
			break;
		at += l;
		r = row_of(&s, start + (uint32_t)at);
		if (same_rule(&r, &out[k - 1]))
			continue;
		if (k == cap)
			break;
		out[k++] = r;
	}
	return k;
}

/* ---- gaps of a table ---------------------------------------------------- */

struct sized_fn {
	uint64_t start, end;
};

static int cmp_func(const void *a, const void *b)
{
	const struct sized_fn *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->end > y->end ? -1 : x->end < y->end; /* the longest first */
}

/* sized function symbols of both symbol tables, sorted, one per start */
static struct sized_fn *functions(Elf *elf, size_t *nout)
{
	struct sized_fn *v = NULL;
	size_t n = 0, cap = 0;
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM) ||
		    !sh.sh_entsize || !(d = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 0; i < d->d_size / sh.sh_entsize && i < INT32_MAX; i++) {
			GElf_Sym sym;

			if (!gelf_getsym(d, (int)i, &sym) || GELF_ST_TYPE(sym.st_info) != STT_FUNC ||
			    !sym.st_size || sym.st_shndx == SHN_UNDEF || sym.st_shndx >= SHN_LORESERVE ||
			    sym.st_value + sym.st_size > UINT32_MAX)
				continue;
			if (n == cap) {
				size_t ncap = cap ? cap * 2 : 256;
				struct sized_fn *w = realloc(v, ncap * sizeof(*w));

				if (!w) {
					free(v);
					return NULL;
				}
				v = w;
				cap = ncap;
			}
			v[n].start = sym.st_value;
			v[n++].end = sym.st_value + sym.st_size;
		}
	}
	if (n)
		qsort(v, n, sizeof(*v), cmp_func);
	*nout = n;
	return v ? v : calloc(1, sizeof(*v));
}

/* file offset of ELF address a in an executable PROGBITS section, and how
 * many bytes of the section follow it; false when no section holds it */
static bool code_at(Elf *elf, uint64_t a, uint64_t *off, uint64_t *avail)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_PROGBITS &&
		    (sh.sh_flags & SHF_EXECINSTR) && a >= sh.sh_addr && a < sh.sh_addr + sh.sh_size) {
			*off = sh.sh_offset + (a - sh.sh_addr);
			*avail = sh.sh_addr + sh.sh_size - a;
			return true;
		}
	}
	return false;
}

long prologue_fill_gaps(int fd, struct unwind_table *t)
{
	struct unwind_row *add = NULL, rows[MAX_INSNS + 1];
	size_t nadd = 0, cap = 0, nf = 0;
	struct sized_fn *f = NULL;
	uint64_t last_end = 0;
	long filled = 0;
	Elf *elf;

	if (!t->n || elf_version(EV_CURRENT) == EV_NONE ||
	    !(elf = elf_begin(fd, ELF_C_READ_MMAP, NULL)))
		return 0;
	if (!(f = functions(elf, &nf))) {
		elf_end(elf);
		return -1;
	}
	for (size_t i = 0; i < nf; i++) {
		long at = unwind_table_find(t, f[i].start);
		uint64_t next = at + 1 < (long)t->n ? t->rows[at + 1].pc : UINT32_MAX, off, avail;
		uint8_t code[CODE_BYTES];
		ssize_t got;
		size_t k;

		if (f[i].start < last_end)
			continue; /* an alias, or inside a function already done */
		if (at < 0 || t->rows[at].cfa_kind != CFA_NONE || f[i].end > next ||
		    !code_at(elf, f[i].start, &off, &avail))
			continue;
		got = pread(fd, code, avail < CODE_BYTES ? avail : CODE_BYTES, (off_t)off);
		if (got <= 0)
			continue;
		if ((uint64_t)got > f[i].end - f[i].start)
			got = (ssize_t)(f[i].end - f[i].start);
		k = prologue_rows(code, (size_t)got, (uint32_t)f[i].start, rows, MAX_INSNS);
		while (k > 1 && rows[k - 1].pc >= f[i].end)
			k--; /* a rule for after the last instruction */
		if (nadd && add[nadd - 1].pc == rows[0].pc)
			nadd--; /* the previous function's end is this one's start */
		if (f[i].end < next) { /* the gap goes on after the function */
			memset(&rows[k], 0, sizeof(rows[k]));
			rows[k].pc = (uint32_t)f[i].end;
			rows[k++].cfa_kind = CFA_NONE;
		}
		if (nadd + k > cap) {
			size_t ncap = cap ? cap * 2 : 256;
			struct unwind_row *w;

			while (ncap < nadd + k)
				ncap *= 2;
			if (!(w = realloc(add, ncap * sizeof(*w))))
				goto oom;
			add = w;
			cap = ncap;
		}
		memcpy(add + nadd, rows, k * sizeof(*rows));
		nadd += k;
		last_end = f[i].end;
		filled++;
	}
	if (nadd) {
		/* merge (both sorted: functions are taken by address); at one pc
		 * the new row replaces the gap's CFA_NONE */
		struct unwind_row *m = malloc((t->n + nadd) * sizeof(*m));
		size_t a = 0, b = 0, k = 0;

		if (!m)
			goto oom;
		while (a < t->n || b < nadd) {
			if (b == nadd || (a < t->n && t->rows[a].pc < add[b].pc)) {
				m[k++] = t->rows[a++];
			} else {
				if (a < t->n && t->rows[a].pc == add[b].pc)
					a++;
				m[k++] = add[b++];
			}
		}
		free(t->rows);
		t->rows = m;
		t->n = k;
	}
	free(add);
	free(f);
	elf_end(elf);
	return filled;
oom:
	free(add);
	free(f);
	elf_end(elf);
	return -1;
}
