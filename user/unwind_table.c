/* unwind_table.c - x86-64 CFI to sorted unwind rows, via libdw.  See
 * unwind_table.h.
 *
 * How it works:
 *  1. Find the FDEs.  dwarf_next_cfi walks the raw entries of .eh_frame and
 *     .debug_frame.  libdw gives an FDE only as bytes, so its address range
 *     is decoded here: in .debug_frame two 8-byte absolute values; in
 *     .eh_frame the pointer encoding named by the 'R' letter of its CIE's
 *     augmentation ("zR", "zPLR", ...; none means absptr), pc-relative to
 *     the field's own address (section sh_addr + offset) or data-relative
 *     (base 0 on x86-64 Linux, as in libgcc and libdw), and the length in
 *     the same format without the relative part.  Every value read here is
 *     bounds-checked against its entry.
 *  2. Decide who describes which bytes.  .eh_frame FDEs are sorted by start;
 *     where two overlap, the one starting first keeps the overlap.  Then
 *     .debug_frame FDEs, likewise among themselves, and only for bytes no
 *     .eh_frame FDE covers.  The result is a sorted list of disjoint pieces,
 *     each owned by one section.
 *  3. Walk each piece with libdw: dwarf_cfi_addrframe at the piece start
 *     gives the rules there and, with dwarf_frame_info, where they stop
 *     holding; continue from that end until the piece end.  Each rule set
 *     becomes one row (mapping below).  After a piece, unless the next piece
 *     starts right there, a CFA_NONE row marks the gap.  Rows come out in
 *     pc order, so no sort is needed; consecutive equal rows of one piece
 *     are merged (a piece's first row is kept: leaf frames are keyed by row).
 *
 * Mapping libdw's answers (libdw.h): the CFA is one DW_OP_bregx (reg, off)
 * for the usual def_cfa rules, or the parsed expression; a register rule
 * is nothing with a NULL ops pointer for same-value, nothing with non-NULL
 * ops for undefined, and DW_OP_call_frame_cfa [+ DW_OP_plus_uconst N] for
 * "saved at CFA + N" (N is stored as an unsigned 64-bit value: -16 comes back
 * as 2^64 - 16).  libdw's x86-64 ABI defaults make callee-saved registers
 * such as rbp same-value until the CFI says otherwise, so "never saved" and
 * explicit same-value are both RBP_SAME; an explicit DW_CFA_undefined for
 * rbp is RBP_LOST.
 *
 * Limits: FDEs whose range ends above 4 GiB are left out (rows hold 32-bit
 * pcs) and counted in `skipped`, as are FDEs whose CIE uses a pointer
 * encoding other than the ones above (indirect, text/func-relative,
 * aligned).  A file without section headers has no CFI found here even if
 * PT_GNU_EH_FRAME points at some.  Signal frames are treated like any other
 * frame. */
#include "unwind_table.h"
#include "errmsg.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define REG_RBP 6
#define REG_RSP 7
#define REG_RA 16

/* ---- growable arrays --------------------------------------------------- */

/* Make room for one more element in *v (n used of *cap). */
static bool grow(void **v, size_t *cap, size_t n, size_t size)
{
	size_t ncap;
	void *p;

	if (n < *cap)
		return true;
	ncap = *cap ? *cap * 2 : 256;
	if (ncap > SIZE_MAX / size)
		return false;
	p = realloc(*v, ncap * size);
	if (!p)
		return false;
	*v = p;
	*cap = ncap;
	return true;
}

struct fde_range {
	uint64_t lo, hi;  /* [lo, hi) */
	size_t seq;       /* order in the section, for a stable sort */
};

struct range_vec {
	struct fde_range *v;
	size_t n, cap;
};

struct piece {
	uint32_t lo, hi;  /* [lo, hi), non-empty */
	bool debug;       /* owned by .debug_frame (else .eh_frame) */
};

struct piece_vec {
	struct piece *v;
	size_t n, cap;
};

struct row_vec {
	struct unwind_row *v;
	size_t n, cap;
};

static bool push_range(struct range_vec *r, uint64_t lo, uint64_t hi)
{
	if (!grow((void **)&r->v, &r->cap, r->n, sizeof(*r->v)))
		return false;
	r->v[r->n] = (struct fde_range){ .lo = lo, .hi = hi, .seq = r->n };
	r->n++;
	return true;
}

static bool push_piece(struct piece_vec *p, uint64_t lo, uint64_t hi, bool debug)
{
	if (!grow((void **)&p->v, &p->cap, p->n, sizeof(*p->v)))
		return false;
	p->v[p->n++] = (struct piece){ .lo = (uint32_t)lo, .hi = (uint32_t)hi,
				       .debug = debug };
	return true;
}

static bool push_row(struct row_vec *r, const struct unwind_row *row)
{
	if (!grow((void **)&r->v, &r->cap, r->n, sizeof(*r->v)))
		return false;
	r->v[r->n++] = *row;
	return true;
}

/* ---- encoded values ---------------------------------------------------- */

/* Little-endian unsigned value of `len` bytes at p. */
static uint64_t get_le(const uint8_t *p, size_t len)
{
	uint64_t v = 0;

	for (size_t i = len; i > 0; i--)
		v = (v << 8) | p[i - 1];
	return v;
}

/* Read one value in DW_EH_PE format `fmt` (low 4 bits of an encoding) from
 * *pp, not reading at or past `end`; advances *pp.  false when the format is
 * unknown or the bytes run out. */
static bool read_value(const uint8_t **pp, const uint8_t *end, uint8_t fmt,
		       uint64_t *out)
{
	const uint8_t *p = *pp;
	size_t len;
	bool sign = false;

	switch (fmt & 0x0f) {
	case DW_EH_PE_absptr:
	case DW_EH_PE_udata8:
	case DW_EH_PE_sdata8:
		len = 8;
		break;
	case DW_EH_PE_udata4:
		len = 4;
		break;
	case DW_EH_PE_sdata4:
		len = 4;
		sign = true;
		break;
	case DW_EH_PE_udata2:
		len = 2;
		break;
	case DW_EH_PE_sdata2:
		len = 2;
		sign = true;
		break;
	case DW_EH_PE_uleb128:
	case DW_EH_PE_sleb128: {
		uint64_t v = 0;
		unsigned shift = 0;
		uint8_t b;

		do {
			if (p >= end)
				return false;
			b = *p++;
			if (shift < 64)
				v |= (uint64_t)(b & 0x7f) << shift;
			shift += 7;
		} while (b & 0x80);
		if ((fmt & 0x0f) == DW_EH_PE_sleb128 && shift < 64 && (b & 0x40))
			v |= ~(uint64_t)0 << shift;
		*out = v;
		*pp = p;
		return true;
	}
	default:
		return false;
	}
	if (end - p < (ptrdiff_t)len)
		return false;
	*out = get_le(p, len);
	if (sign && len < 8 && (*out >> (len * 8 - 1)) & 1)
		*out |= ~(uint64_t)0 << (len * 8);
	*pp = p + len;
	return true;
}

/* The FDE pointer encoding an .eh_frame CIE announces, from its augmentation
 * string and data.  false when it cannot be known (an augmentation without
 * 'z' other than "", an unreadable or aligned personality pointer before the
 * 'R', an unknown letter before the 'R', or bytes running out). */
static bool cie_fde_encoding(const Dwarf_CIE *cie, uint8_t *enc)
{
	const char *a = cie->augmentation;
	const uint8_t *p, *end;

	*enc = DW_EH_PE_absptr;
	if (!a || a[0] == '\0')
		return true;
	if (a[0] != 'z')
		return false;
	if (!strchr(a, 'R'))
		return true;
	p = cie->augmentation_data;
	if (!p)
		return false;
	end = p + cie->augmentation_data_size;
	for (a++; *a; a++) {
		uint8_t e;
		uint64_t dummy;

		switch (*a) {
		case 'R':
			if (p >= end)
				return false;
			*enc = *p;
			return true;
		case 'L':
			if (p >= end)
				return false;
			p++;
			break;
		case 'P':
			if (p >= end)
				return false;
			e = *p++;
			if ((e & 0x70) == DW_EH_PE_aligned ||
			    !read_value(&p, end, e & 0x0f, &dummy))
				return false;
			break;
		case 'S':
		case 'B':
		case 'G':
			break;
		default:
			return false;
		}
	}
	return false;
}

/* ---- step 1: FDE ranges of one section --------------------------------- */

struct cfi_section {
	Elf_Data *data;
	uint64_t addr;    /* sh_addr */
	bool eh;          /* .eh_frame format */
};

struct cie_info {
	Dwarf_Off off;
	uint8_t enc;
	bool ok;
};

/* Encoding for the CIE at section offset `off`: from the CIEs seen so far
 * (sorted by offset), else by reading it now.  false if there is no usable
 * CIE there. */
static bool cie_lookup(const struct cfi_section *s, const unsigned char *ident,
		       const struct cie_info *cies, size_t n, Dwarf_Off off,
		       uint8_t *enc)
{
	size_t lo = 0, hi = n;
	Dwarf_CFI_Entry e;
	Dwarf_Off next;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (cies[mid].off < off) {
			lo = mid + 1;
		} else if (cies[mid].off > off) {
			hi = mid;
		} else {
			*enc = cies[mid].enc;
			return cies[mid].ok;
		}
	}
	if (off >= s->data->d_size)
		return false;
	if (dwarf_next_cfi(ident, s->data, s->eh, off, &next, &e) != 0 ||
	    !dwarf_cfi_cie_p(&e))
		return false;
	if (!s->eh) {
		*enc = DW_EH_PE_absptr;
		return true;
	}
	return cie_fde_encoding(&e.cie, enc);
}

/* [*lo, *hi) of an FDE whose CIE says `enc`. */
static bool fde_range(const struct cfi_section *s, const Dwarf_FDE *fde,
		      uint8_t enc, uint64_t *lo, uint64_t *hi)
{
	const uint8_t *p = fde->start, *end = fde->end;
	const uint8_t *base = s->data->d_buf;
	uint64_t loc, len;

	if (!p || !end || p < base || end > base + s->data->d_size || p > end)
		return false;
	if (!s->eh) {
		if (end - p < 16)
			return false;
		loc = get_le(p, 8);
		len = get_le(p + 8, 8);
	} else {
		uint64_t field = s->addr + (uint64_t)(p - base);

		if (enc == DW_EH_PE_omit || (enc & DW_EH_PE_indirect))
			return false;
		if (!read_value(&p, end, enc & 0x0f, &loc) ||
		    !read_value(&p, end, enc & 0x0f, &len))
			return false;
		switch (enc & 0x70) {
		case DW_EH_PE_absptr:
			break;
		case DW_EH_PE_pcrel:
			loc += field;
			break;
		case DW_EH_PE_datarel:
			break; /* data-relative base is 0 on x86-64 Linux */
		default:
			return false;
		}
	}
	*lo = loc;
	*hi = loc + len;
	return true;
}

/* Append the ranges of every FDE in section `s` to *out. */
static int collect_fdes(const struct cfi_section *s, const unsigned char *ident,
			struct range_vec *out, struct unwind_table *t)
{
	struct cie_info *cies = NULL;
	size_t ncies = 0, ciecap = 0;
	Dwarf_Off off = 0, next;
	int ret = 0;

	for (;; off = next) {
		Dwarf_CFI_Entry e;
		uint64_t lo, hi;
		uint8_t enc = DW_EH_PE_absptr;
		int r;

		next = (Dwarf_Off)-1;
		r = dwarf_next_cfi(ident, s->data, s->eh, off, &next, &e);
		if (r > 0)
			break;
		if (next == (Dwarf_Off)-1 || next <= off)
			break; /* no way to go on */
		if (r < 0)
			continue; /* unusable entry, but its length is known */
		if (dwarf_cfi_cie_p(&e)) {
			struct cie_info ci = { .off = off, .enc = DW_EH_PE_absptr, .ok = true };

			if (s->eh)
				ci.ok = cie_fde_encoding(&e.cie, &ci.enc);
			if (!grow((void **)&cies, &ciecap, ncies, sizeof(*cies))) {
				ret = -1;
				break;
			}
			cies[ncies++] = ci;
			continue;
		}
		t->fdes++;
		if (!cie_lookup(s, ident, cies, ncies, e.fde.CIE_pointer, &enc) ||
		    !fde_range(s, &e.fde, enc, &lo, &hi)) {
			t->skipped++;
			continue;
		}
		if (hi == lo)
			continue; /* empty: describes nothing */
		if (hi < lo || hi > UINT32_MAX) {
			t->skipped++;
			continue;
		}
		if (!push_range(out, lo, hi)) {
			ret = -1;
			break;
		}
	}
	free(cies);
	return ret;
}

/* ---- step 2: pieces ---------------------------------------------------- */

static int cmp_range(const void *a, const void *b)
{
	const struct fde_range *x = a, *y = b;

	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Pieces of the ranges in r (sorted here) not covered by an earlier-starting
 * range of r nor by any piece in `taken` (sorted, disjoint; may be NULL). */
static bool make_pieces(struct range_vec *r, const struct piece_vec *taken,
			bool debug, struct piece_vec *out)
{
	uint64_t maxend = 0;
	size_t k = 0;

	if (r->n > 1)
		qsort(r->v, r->n, sizeof(*r->v), cmp_range);
	for (size_t i = 0; i < r->n; i++) {
		uint64_t a = r->v[i].lo > maxend ? r->v[i].lo : maxend;
		uint64_t b = r->v[i].hi;

		if (b > maxend)
			maxend = b;
		if (a >= b)
			continue;
		if (!taken || taken->n == 0) {
			if (!push_piece(out, a, b, debug))
				return false;
			continue;
		}
		/* a only grows from one range to the next, so k does too */
		while (k < taken->n && taken->v[k].hi <= a)
			k++;
		for (size_t j = k; a < b; j++) {
			if (j >= taken->n || taken->v[j].lo >= b) {
				if (!push_piece(out, a, b, debug))
					return false;
				break;
			}
			if (taken->v[j].lo > a && !push_piece(out, a, taken->v[j].lo, debug))
				return false;
			if (taken->v[j].hi > a)
				a = taken->v[j].hi;
		}
	}
	return true;
}

/* Merge two sorted disjoint piece lists into one. */
static bool merge_pieces(const struct piece_vec *x, const struct piece_vec *y,
			 struct piece_vec *out)
{
	size_t i = 0, j = 0;

	while (i < x->n || j < y->n) {
		const struct piece *p;

		if (j >= y->n || (i < x->n && x->v[i].lo < y->v[j].lo))
			p = &x->v[i++];
		else
			p = &y->v[j++];
		if (!push_piece(out, p->lo, p->hi, p->debug))
			return false;
	}
	return true;
}

/* ---- step 3: rows ------------------------------------------------------ */

/* Whether ops is "CFA + off" (DW_OP_call_frame_cfa [DW_OP_plus_uconst N]). */
static bool ops_cfa_plus(const Dwarf_Op *ops, size_t nops, int64_t *off)
{
	if (!ops || nops < 1 || nops > 2 || ops[0].atom != DW_OP_call_frame_cfa)
		return false;
	if (nops == 1) {
		*off = 0;
		return true;
	}
	if (ops[1].atom != DW_OP_plus_uconst)
		return false;
	*off = (int64_t)ops[1].number;
	return true;
}

/* The PLT rule: breg7 8; breg16 0; lit15; and; litN; ge; lit3; shl; plus.
 * Sets *n = N. */
static bool ops_plt(const Dwarf_Op *ops, size_t nops, int *n)
{
	static const uint8_t want[9] = {
		DW_OP_breg7, DW_OP_breg16, DW_OP_lit15, DW_OP_and, 0,
		DW_OP_ge, DW_OP_lit3, DW_OP_shl, DW_OP_plus,
	};

	if (nops != 9)
		return false;
	for (size_t i = 0; i < 9; i++)
		if (i != 4 && ops[i].atom != want[i])
			return false;
	if (ops[0].number != 8 || ops[1].number != 0 ||
	    ops[4].atom < DW_OP_lit0 || ops[4].atom > DW_OP_lit31)
		return false;
	*n = ops[4].atom - DW_OP_lit0;
	return true;
}

/* Rules of `frame` (whose return-address column is ra_reg) as a row. */
static void frame_row(Dwarf_Frame *frame, int ra_reg, struct unwind_row *row)
{
	Dwarf_Op mem[3], *ops = NULL;
	size_t nops = 0;
	int64_t off;
	int plt;

	row->cfa_kind = CFA_UNSUPPORTED;
	row->cfa_off = 0;
	row->rbp_kind = RBP_SAME;
	row->rbp_off8 = 0;

	/* return address */
	if (ra_reg != REG_RA ||
	    dwarf_frame_register(frame, REG_RA, mem, &ops, &nops) != 0)
		return;
	if (nops == 0 && ops != NULL) {
		row->cfa_kind = CFA_END;
		return;
	}
	if (!ops_cfa_plus(ops, nops, &off) || off != -8)
		return;

	/* CFA */
	if (dwarf_frame_cfa(frame, &ops, &nops) != 0 || !ops)
		return;
	if (nops == 1) {
		uint64_t reg;

		if (ops[0].atom == DW_OP_bregx) {
			reg = ops[0].number;
			off = (int64_t)ops[0].number2;
		} else if (ops[0].atom >= DW_OP_breg0 && ops[0].atom <= DW_OP_breg31) {
			reg = ops[0].atom - DW_OP_breg0;
			off = (int64_t)ops[0].number;
		} else {
			return;
		}
		if ((reg != REG_RSP && reg != REG_RBP) || off < 0 || off > UNWIND_CFA_OFF_MAX)
			return;
		row->cfa_kind = reg == REG_RSP ? CFA_RSP : CFA_RBP;
		row->cfa_off = (uint32_t)off;
	} else if (ops_plt(ops, nops, &plt)) {
		row->cfa_kind = CFA_PLT;
		row->cfa_off = plt;
	} else if (nops == 2 && ops[0].atom == DW_OP_breg6 && ops[1].atom == DW_OP_deref &&
		   (int64_t)ops[0].number < 0 && -(int64_t)ops[0].number <= UNWIND_CFA_OFF_MAX) {
		/* stack realignment: DW_OP_breg6 (rbp) -N; DW_OP_deref */
		row->cfa_kind = CFA_RBP_DEREF;
		row->cfa_off = (uint32_t)-(int64_t)ops[0].number;
	} else {
		return;
	}

	/* rbp */
	if (dwarf_frame_register(frame, REG_RBP, mem, &ops, &nops) != 0) {
		row->rbp_kind = RBP_LOST;
	} else if (nops == 0 && ops == NULL) {
		row->rbp_kind = RBP_SAME;
	} else if (ops_cfa_plus(ops, nops, &off) && off % 8 == 0 &&
		   off / 8 >= UNWIND_RBP_OFF8_MIN && off / 8 <= UNWIND_RBP_OFF8_MAX) {
		row->rbp_kind = RBP_AT_CFA;
		row->rbp_off8 = (int32_t)(off / 8);
	} else if (nops >= 1 && ops[nops - 1].atom == DW_OP_breg6 &&
		   (nops == 1 || (nops == 2 && ops[0].atom == DW_OP_call_frame_cfa)) &&
		   (int64_t)ops[nops - 1].number % 8 == 0 &&
		   (int64_t)ops[nops - 1].number / 8 >= UNWIND_RBP_OFF8_MIN &&
		   (int64_t)ops[nops - 1].number / 8 <= UNWIND_RBP_OFF8_MAX) {
		/* DW_CFA_expression rbp (DW_OP_breg6 N): saved at rbp + N, as
		 * stack-realigning functions say (libdw puts the CFA first) */
		row->rbp_kind = RBP_AT_RBP;
		row->rbp_off8 = (int32_t)((int64_t)ops[nops - 1].number / 8);
	} else {
		row->rbp_kind = RBP_LOST;
	}
}

/* Rows for [p->lo, p->hi) from `cfi`. */
static bool walk_piece(Dwarf_CFI *cfi, const struct piece *p, struct row_vec *rows)
{
	uint64_t addr = p->lo;

	while (addr < p->hi) {
		Dwarf_Frame *frame = NULL;
		struct unwind_row row = { 0 };
		Dwarf_Addr start = 0, end = 0;
		bool signalp = false;
		int ra_reg;

		row.pc = (uint32_t)addr;
		if (!cfi || dwarf_cfi_addrframe(cfi, addr, &frame) != 0 || !frame) {
			/* libdw cannot tell: the unwinder must stop here */
			row.cfa_kind = CFA_UNSUPPORTED;
			row.cfa_off = 0;
			row.rbp_kind = RBP_SAME;
			row.rbp_off8 = 0;
			free(frame);
			return push_row(rows, &row);
		}
		ra_reg = dwarf_frame_info(frame, &start, &end, &signalp);
		frame_row(frame, ra_reg, &row);
		free(frame);
		if (!push_row(rows, &row))
			return false;
		if (ra_reg < 0 || end <= addr)
			break; /* no progress: the row holds to the piece end */
		addr = end;
	}
	return true;
}

static bool same_rule(const struct unwind_row *a, const struct unwind_row *b)
{
	return a->nrows == b->nrows; /* the whole rule word */
}

/* ---- entry points ------------------------------------------------------ */

/* Locate .eh_frame and .debug_frame (sections with contents). */
static int find_sections(Elf *elf, Elf_Scn **eh, GElf_Shdr *eh_shdr,
			 Elf_Scn **dbg, const char *name, char *err, size_t errlen)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;

	*eh = *dbg = NULL;
	if (elf_getshdrstrndx(elf, &shstrndx) != 0) {
		set_err(err, errlen, "%s: cannot read section headers: %s", name,
			elf_errmsg(-1));
		return -1;
	}
	while ((scn = elf_nextscn(elf, scn)) != NULL) {
		GElf_Shdr sh;
		const char *sname;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
			continue;
		sname = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!sname)
			continue;
		if (!*eh && strcmp(sname, ".eh_frame") == 0) {
			*eh = scn;
			*eh_shdr = sh;
		} else if (!*dbg && strcmp(sname, ".debug_frame") == 0) {
			*dbg = scn;
		}
	}
	return 0;
}

/* Section data, or NULL when empty or unreadable. */
static Elf_Data *section_data(Elf_Scn *scn)
{
	GElf_Shdr sh;
	Elf_Data *d;

	if (!scn || !gelf_getshdr(scn, &sh))
		return NULL;
	if ((sh.sh_flags & SHF_COMPRESSED) && elf_compress(scn, 0, 0) < 0)
		return NULL;
	d = elf_getdata(scn, NULL);
	if (!d || !d->d_buf || d->d_size == 0)
		return NULL;
	return d;
}

int unwind_table_build(int fd, const char *name, struct unwind_table *out,
		       char *err, size_t errlen)
{
	struct range_vec eh_r = { 0 }, dbg_r = { 0 };
	struct piece_vec eh_p = { 0 }, dbg_p = { 0 }, all = { 0 };
	struct row_vec rows = { 0 };
	Elf *elf = NULL;
	Dwarf *dwarf = NULL;
	Dwarf_CFI *eh_cfi = NULL, *dbg_cfi = NULL;
	Elf_Scn *eh_scn, *dbg_scn;
	GElf_Shdr eh_shdr = { 0 };
	GElf_Ehdr ehdr;
	const unsigned char *ident;
	size_t m;
	int ret = -1;

	memset(out, 0, sizeof(*out));
	if (elf_version(EV_CURRENT) == EV_NONE) {
		set_err(err, errlen, "%s: libelf initialisation failed: %s", name,
			elf_errmsg(-1));
		return -1;
	}
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf) {
		set_err(err, errlen, "%s: cannot read as ELF: %s", name, elf_errmsg(-1));
		return -1;
	}
	if (elf_kind(elf) != ELF_K_ELF) {
		set_err(err, errlen, "%s: not an ELF file", name);
		goto out;
	}
	ident = (const unsigned char *)elf_getident(elf, NULL);
	if (!gelf_getehdr(elf, &ehdr) || !ident) {
		set_err(err, errlen, "%s: bad ELF header: %s", name, elf_errmsg(-1));
		goto out;
	}
	if (ident[EI_CLASS] != ELFCLASS64 || ident[EI_DATA] != ELFDATA2LSB ||
	    ehdr.e_machine != EM_X86_64) {
		set_err(err, errlen, "%s: not an x86-64 ELF file (machine %u)", name,
			(unsigned)ehdr.e_machine);
		goto out;
	}
	if (find_sections(elf, &eh_scn, &eh_shdr, &dbg_scn, name, err, errlen) != 0)
		goto out;

	/* step 1 */
	if (eh_scn) {
		struct cfi_section s = { .data = section_data(eh_scn),
					 .addr = eh_shdr.sh_addr, .eh = true };

		if (s.data) {
			if (collect_fdes(&s, ident, &eh_r, out) != 0)
				goto nomem;
			if (eh_r.n > 0)
				eh_cfi = dwarf_getcfi_elf(elf);
		}
	}
	if (dbg_scn) {
		/* libdw decompresses the debug sections it uses when it opens them */
		dwarf = dwarf_begin_elf(elf, DWARF_C_READ, NULL);
		if (dwarf) {
			struct cfi_section s = { .data = section_data(dbg_scn), .eh = false };

			dbg_cfi = dwarf_getcfi(dwarf);
			if (s.data && dbg_cfi && collect_fdes(&s, ident, &dbg_r, out) != 0)
				goto nomem;
		}
	}

	/* step 2 */
	if (!make_pieces(&eh_r, NULL, false, &eh_p) ||
	    !make_pieces(&dbg_r, &eh_p, true, &dbg_p) ||
	    !merge_pieces(&eh_p, &dbg_p, &all))
		goto nomem;

	/* step 3 */
	for (size_t i = 0; i < all.n; i++) {
		const struct piece *p = &all.v[i];
		size_t first = rows.n;

		if (!walk_piece(p->debug ? dbg_cfi : eh_cfi, p, &rows))
			goto nomem;
		/* merge equal neighbours, but never across the start of a piece:
		 * a row's pc then always lies in the function the pc it covers
		 * is in, which the sampler relies on (it keys a leaf frame by
		 * its row) */
		if (rows.n > first) {
			size_t w = first + 1;

			for (size_t k = first + 1; k < rows.n; k++)
				if (!same_rule(&rows.v[w - 1], &rows.v[k]))
					rows.v[w++] = rows.v[k];
			rows.n = w;
		}
		if (i + 1 == all.n || all.v[i + 1].lo != p->hi) {
			struct unwind_row gap = { .pc = p->hi, .cfa_kind = CFA_NONE,
						  .rbp_kind = RBP_SAME };

			if (!push_row(&rows, &gap))
				goto nomem;
		}
	}
	m = rows.n;
	for (size_t i = 0; i < m; i++)
		if (rows.v[i].cfa_kind == CFA_UNSUPPORTED || rows.v[i].rbp_kind == RBP_LOST)
			out->unsupported++;
	if (m > 0 && m < rows.cap) {
		struct unwind_row *shrunk = realloc(rows.v, m * sizeof(*rows.v));

		if (shrunk)
			rows.v = shrunk;
	}
	out->rows = m > 0 ? rows.v : NULL;
	out->n = m;
	if (m == 0)
		free(rows.v);
	rows.v = NULL;
	ret = 0;
	goto out;

nomem:
	set_err(err, errlen, "%s: out of memory building the unwind table", name);
out:
	if (ret != 0)
		memset(out, 0, sizeof(*out));
	free(rows.v);
	free(all.v);
	free(eh_p.v);
	free(dbg_p.v);
	free(eh_r.v);
	free(dbg_r.v);
	if (eh_cfi)
		dwarf_cfi_end(eh_cfi);
	if (dwarf)
		dwarf_end(dwarf);
	elf_end(elf);
	return ret;
}

void unwind_table_free(struct unwind_table *t)
{
	if (!t)
		return;
	free(t->rows);
	memset(t, 0, sizeof(*t));
}

long unwind_table_find(const struct unwind_table *t, uint64_t pc)
{
	size_t lo = 0, hi;

	if (!t || t->n == 0 || pc < t->rows[0].pc)
		return -1;
	hi = t->n;
	/* invariant: rows[lo].pc <= pc, and rows[hi].pc > pc (or hi == n) */
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->rows[mid].pc <= pc)
			lo = mid;
		else
			hi = mid;
	}
	return (long)lo;
}
