/* unwind_table.c - x86-64 CFI to sorted unwind rows.  See unwind_table.h.
 *
 * How it works:
 *  1. Read the entries.  Each CIE and FDE of .eh_frame and .debug_frame is
 *     parsed here (DWARF 4 section 6.4.1, and the LSB's .eh_frame format):
 *     a CIE gives the alignment factors, the return-address column, the
 *     FDE pointer encoding (the 'R' letter of a "z..." augmentation; none
 *     means absptr) and its initial instructions; an FDE gives its CIE, its
 *     address range and its instructions.  In .debug_frame addresses are two
 *     8-byte absolute values; in .eh_frame they are in the CIE's encoding,
 *     pc-relative to the field's own address (section sh_addr + offset) or
 *     data-relative (base 0 on x86-64 Linux, as in libgcc and libdw), and
 *     the length in the same format without the relative part.  Every value
 *     read here is bounds-checked against its entry.
 *  2. Decide who describes which bytes.  .eh_frame FDEs are sorted by start;
 *     where two overlap, the one starting first keeps the overlap.  Then
 *     .debug_frame FDEs, likewise among themselves, and only for bytes no
 *     .eh_frame FDE covers.  The result is a sorted list of disjoint pieces,
 *     each owned by one FDE.
 *  3. Run each FDE's program once (section 6.4.2), from the state its CIE's
 *     initial instructions leave, and keep a row each time the location
 *     moves past the last row's start: a row holds the rules in force when
 *     the program first moves beyond its pc (so a program that moves
 *     backwards, or by 0, changes the row it is in rather than adding
 *     rows), up to the FDE's end.  Each row is mapped to an unwind_row
 *     (below) and equal neighbours merged.  A piece takes the FDE's rows
 *     that fall in it, its first row restarted at the piece's start; after
 *     a piece, unless the next piece starts right there, a CFA_NONE row
 *     marks the gap.  Rows come out in pc order, so no sort is needed.
 *  4. PLT sections: a row starts at every stub (split_plt_rows).
 *
 * The state the interpreter keeps is only what the rows need: the CFA rule
 * and the rules of rbp (column 6) and the return address (column 16).
 * Every register starts as the x86-64 ABI defaults that libdw (which this
 * file used before) applies: the callee-saved rbx, rbp, r12-r15 and the
 * return-address column same-value, the others undefined, the CFA
 * undefined; so "never saved" and explicit same-value are both RBP_SAME.
 * A CFA or register expression is decoded only as far as needed to
 * recognise the forms unwind_table.h lists; any other expression is simply
 * not one of them.
 *
 * Bad CFI (section 6.4.2's rules broken, or input that may be hostile):
 * an unknown opcode, an operand running past its entry, advance_loc,
 * set_loc or restore among a CIE's initial instructions, restore_state
 * without a remembered state, more than REMEMBER_MAX remembered states, a
 * register column of 2^28 - 1 or more (libdw's bound), an FDE whose
 * augmentation data overruns it: the row being built and the rest of the
 * FDE become one CFA_UNSUPPORTED row (rows before it stay).
 * def_cfa_register or def_cfa_offset on a CFA that is not register +
 * offset makes the CFA unusable (CFA_UNSUPPORTED rows) until the next
 * def_cfa or def_cfa_expression.  Entries whose length is wrong end the
 * walk of their section; FDEs with an unusable CIE are counted in
 * `skipped`.  Every loop moves forward through bounded bytes, so nothing
 * can loop; nothing is read outside its entry.
 *
 * Limits: FDEs whose range ends above 4 GiB are left out (rows hold 32-bit
 * pcs) and counted in `skipped`, as are FDEs whose CIE uses a pointer
 * encoding other than the ones above (indirect, text/func-relative,
 * aligned).  A .debug_frame CIE whose augmentation has 'L', 'P' or 'R'
 * without a leading 'z' gives CFA_UNSUPPORTED rows (where its FDEs' data
 * starts is unknown).  A file without section headers has no CFI found
 * here even if PT_GNU_EH_FRAME points at some.  Signal frames ('S') are
 * treated like any other frame. */
#include "unwind_table.h"
#include "errmsg.h"

#include <dwarf.h>  /* the DWARF constants' names only */
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define REG_RBP 6
#define REG_RSP 7
#define REG_RA 16

/* Register columns at or above this are bad CFI (libdw's bound too). */
#define REG_COLUMN_MAX (INT32_MAX / 8)

/* DW_CFA_remember_state nesting beyond this is bad CFI: compilers nest one
 * or two deep, and each level costs a copy of the state. */
#define REMEMBER_MAX 64

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

struct piece {
	uint32_t lo, hi;  /* [lo, hi), non-empty */
	bool debug;       /* owned by .debug_frame (else .eh_frame) */
	uint32_t fde;     /* its FDE: index in that section's fdes */
};

struct piece_vec {
	struct piece *v;
	size_t n, cap;
};

struct row_vec {
	struct unwind_row *v;
	size_t n, cap;
};

static bool push_piece(struct piece_vec *p, uint64_t lo, uint64_t hi, bool debug,
		       uint32_t fde)
{
	if (!grow((void **)&p->v, &p->cap, p->n, sizeof(*p->v)))
		return false;
	p->v[p->n++] = (struct piece){ .lo = (uint32_t)lo, .hi = (uint32_t)hi,
				       .debug = debug, .fde = fde };
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

/* LEB128 at *pp, not reading at or past `end`; advances *pp.  Bits beyond
 * 64 are dropped.  false when the bytes run out. */
static bool get_leb(const uint8_t **pp, const uint8_t *end, bool sign, uint64_t *out)
{
	const uint8_t *p = *pp;
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
	if (sign && shift < 64 && (b & 0x40))
		v |= ~(uint64_t)0 << shift;
	*out = v;
	*pp = p;
	return true;
}

static bool uleb(const uint8_t **pp, const uint8_t *end, uint64_t *out)
{
	return get_leb(pp, end, false, out);
}

static bool sleb(const uint8_t **pp, const uint8_t *end, int64_t *out)
{
	uint64_t v;

	if (!get_leb(pp, end, true, &v))
		return false;
	*out = (int64_t)v;
	return true;
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
		return get_leb(pp, end, false, out);
	case DW_EH_PE_sleb128:
		return get_leb(pp, end, true, out);
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

/* ---- rules ------------------------------------------------------------- */

/* What the interpreter keeps for one register column. */
enum reg_how {
	RULE_UNDEF,       /* undefined (also: never mentioned, not callee-saved) */
	RULE_SAME,        /* same value */
	RULE_AT_CFA,      /* saved at CFA + n */
	RULE_IS_CFA,      /* value is CFA + n */
	RULE_IN_REG,      /* in another register */
	RULE_AT_EXPR,     /* saved at the address expr computes */
	RULE_IS_EXPR,     /* value is what expr computes */
};

struct reg_rule {
	uint8_t how;      /* enum reg_how */
	int64_t n;
	const uint8_t *expr;
	uint64_t len;
};

enum cfa_how {
	CFA_RULE_UNDEF,   /* no rule yet */
	CFA_RULE_REG,     /* reg + off */
	CFA_RULE_EXPR,    /* expr */
	CFA_RULE_BAD,     /* def_cfa_register/offset on a non reg + off CFA */
};

/* The rules of one row, as far as the unwind rows need them. */
struct rules {
	uint8_t cfa;      /* enum cfa_how */
	uint64_t cfa_reg, cfa_off;
	const uint8_t *cfa_expr;
	uint64_t cfa_len;
	struct reg_rule rbp, ra;
};

/* ---- sections, entries, CIEs ------------------------------------------- */

struct cie {
	uint64_t off;            /* section offset: the key FDEs name it by */
	bool valid;              /* a well-formed CIE is there */
	bool enc_ok;             /* FDE addresses decodable: enc is known */
	bool rules_ok;           /* where FDE instructions start is known */
	bool z;                  /* FDEs carry sized augmentation data */
	uint8_t enc;             /* FDE pointer encoding */
	uint8_t init;            /* initial state: 0 not run, 1 ok, 2 bad CFI */
	uint64_t caf;            /* code alignment factor */
	int64_t daf;             /* data alignment factor */
	uint64_t ra_col;         /* return address column */
	const uint8_t *insns, *insns_end;
	struct rules state;      /* after the initial instructions (init == 1) */
};

struct fde {
	uint32_t lo, hi;         /* [lo, hi) */
	uint32_t cie;            /* index in the section's cies */
	const uint8_t *insns, *end;  /* after the address range (augmentation
				      * data, if any, first) */
};

struct cfi_section {
	const uint8_t *buf;
	size_t size;
	uint64_t addr;           /* sh_addr: base of pc-relative values */
	bool eh;                 /* .eh_frame format */
	struct cie *cies;        /* in the order first met */
	size_t ncies, ciecap;
	uint32_t *hash;          /* open addressing: index + 1 in cies, 0 empty */
	size_t hashcap;          /* power of two, at least 2 * ncies */
	struct fde *fdes;        /* in section order */
	size_t nfdes, fdecap;
	uint64_t *order;         /* lo << 32 | index in fdes, sorted */
};

static void section_free(struct cfi_section *s)
{
	free(s->cies);
	free(s->hash);
	free(s->fdes);
	free(s->order);
}

/* One raw entry (CIE or FDE) of a section. */
struct entry {
	uint64_t next;           /* offset of the entry after it */
	bool is_cie;
	uint64_t cie_off;        /* FDE: section offset of its CIE */
	const uint8_t *body;     /* after the CIE id / CIE pointer */
	const uint8_t *end;
};

enum { ENTRY_OK, ENTRY_END, ENTRY_BAD, ENTRY_STOP };

/* The entry at `off`: ENTRY_OK, ENTRY_END (no more: end of data or a zero
 * terminator), ENTRY_BAD (unusable, but e->next is known) or ENTRY_STOP
 * (its length is wrong: nothing after it can be found). */
static int read_entry(const struct cfi_section *s, uint64_t off, struct entry *e)
{
	const uint8_t *p, *limit = s->buf + s->size;
	uint64_t len, id, pos;
	unsigned unit = 4;

	if (off >= s->size || s->size - off <= 4)
		return ENTRY_END;
	p = s->buf + off;
	len = get_le(p, 4);
	p += 4;
	if (len == 0xffffffffu) {
		/* 64-bit DWARF: an 8-byte length and CIE id / pointer */
		if (limit - p < 8)
			return ENTRY_STOP;
		len = get_le(p, 8);
		p += 8;
		unit = 8;
	}
	if (len == 0)
		return ENTRY_END;
	if ((uint64_t)(limit - p) < len || len < unit + 1)
		return ENTRY_STOP;
	e->next = (uint64_t)(p - s->buf) + len;
	e->end = p + len;
	pos = (uint64_t)(p - s->buf);
	id = get_le(p, unit);
	e->body = p + unit;
	if (s->eh) {
		e->is_cie = id == 0;
		if (!e->is_cie) {
			/* the distance back from this field to the CIE */
			if (id > pos || pos <= unit)
				return ENTRY_BAD;
			e->cie_off = pos - id;
		}
	} else {
		e->is_cie = unit == 4 ? id == 0xffffffffu : id == UINT64_MAX;
		e->cie_off = id;
	}
	return ENTRY_OK;
}

/* The FDE pointer encoding a CIE announces, from its augmentation string
 * and data.  false when it cannot be known (an augmentation without 'z'
 * other than "", an unreadable or aligned personality pointer before the
 * 'R', an unknown letter before the 'R', or bytes running out). */
static bool cie_fde_encoding(const char *a, const uint8_t *p, const uint8_t *end,
			     uint8_t *enc)
{
	*enc = DW_EH_PE_absptr;
	if (a[0] == '\0')
		return true;
	if (a[0] != 'z')
		return false;
	if (!strchr(a, 'R'))
		return true;
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

/* Bytes the augmentation letters after "z" take, as far as they are known
 * (an unknown letter ends the known part); false when a pointer's size
 * cannot be told. */
static bool aug_known_size(const char *a, const uint8_t *p, const uint8_t *end,
			   uint64_t *size)
{
	const uint8_t *start = p;

	for (a++; *a; a++) {
		uint64_t dummy;
		uint8_t e;

		if (*a == 'L' || *a == 'R') {
			if (p >= end)
				return false;
			p++;
		} else if (*a == 'P') {
			if (p >= end)
				return false;
			e = *p++;
			if (!read_value(&p, end, e & 0x0f, &dummy))
				return false;
		} else if (*a != 'S') {
			break;
		}
	}
	*size = (uint64_t)(p - start);
	return true;
}

/* Whether a .debug_frame CIE's augmentation leaves its FDEs readable:
 * "z..." (sized data, skipped), or letters without data: 'S', and
 * anything from an unknown letter on ("eh" included), which libdw ignores
 * too.  'L', 'P', 'R' without 'z' would need data nobody says where. */
static bool debug_aug_ok(const char *a)
{
	if (a[0] == 'z')
		return true;
	for (; *a; a++) {
		if (*a == 'L' || *a == 'P' || *a == 'R' || *a == 'z')
			return false;
		if (*a != 'S')
			return true;
	}
	return true;
}

/* Parse the CIE whose entry is e (at section offset off) into *c. */
static void parse_cie(const struct cfi_section *s, uint64_t off, const struct entry *e,
		      struct cie *c)
{
	const uint8_t *p = e->body, *end = e->end, *aug_data;
	const char *aug;
	uint64_t aug_size = 0, known;
	uint8_t version;

	memset(c, 0, sizeof(*c));
	c->off = off;
	if (p >= end)
		return;
	version = *p++;
	if (version != 1 && version != 3 && version != 4)
		return;
	aug = (const char *)p;
	p = memchr(p, '\0', (size_t)(end - p));
	if (!p)
		return;
	p++;
	if (version == 4) {
		/* address size 8, no segment selectors */
		if (end - p < 5 || p[0] != 8 || p[1] != 0)
			return;
		p += 2;
	}
	if (aug[0] == 'e' && aug[1] == 'h') {
		/* g++ 2's "eh": a pointer follows the string */
		if (end - p <= 8)
			return;
		p += 8;
	}
	if (!uleb(&p, end, &c->caf) || !sleb(&p, end, &c->daf))
		return;
	if (version == 1) {
		if (p >= end)
			return;
		c->ra_col = *p++;
	} else if (!uleb(&p, end, &c->ra_col)) {
		return;
	}
	aug_data = p;
	if (aug[0] == 'z') {
		if (!uleb(&p, end, &aug_size) || aug_size > (uint64_t)(end - p))
			return;
		aug_data = p;
		if (!aug_known_size(aug, aug_data, aug_data + aug_size, &known) ||
		    known > aug_size)
			return;
		p = aug_data + aug_size;
		c->z = true;
	}
	c->valid = true;
	c->insns = p;
	c->insns_end = end;
	if (s->eh) {
		c->enc_ok = cie_fde_encoding(aug, aug_data, aug_data + aug_size, &c->enc);
		c->rules_ok = true;
	} else {
		c->enc = DW_EH_PE_absptr;
		c->enc_ok = true;
		c->rules_ok = debug_aug_ok(aug);
	}
}

/* Hash slot of section offset `off`. */
static size_t cie_slot(const struct cfi_section *s, uint64_t off)
{
	size_t mask = s->hashcap - 1, i = (size_t)((off * 0x9e3779b97f4a7c15ull) >> 20) & mask;

	while (s->hash[i] && s->cies[s->hash[i] - 1].off != off)
		i = (i + 1) & mask;
	return i;
}

/* Add *c to the section's CIEs; false on memory exhaustion. */
static bool add_cie(struct cfi_section *s, const struct cie *c, size_t *idx)
{
	if (s->ncies >= UINT32_MAX - 1)
		return false;
	if (2 * (s->ncies + 1) > s->hashcap) {
		size_t ncap = s->hashcap ? s->hashcap * 2 : 64;
		uint32_t *old = s->hash;
		size_t oldcap = s->hashcap;

		s->hash = calloc(ncap, sizeof(*s->hash));
		if (!s->hash) {
			s->hash = old;
			return false;
		}
		s->hashcap = ncap;
		for (size_t i = 0; i < oldcap; i++)
			if (old[i])
				s->hash[cie_slot(s, s->cies[old[i] - 1].off)] = old[i];
		free(old);
	}
	if (!grow((void **)&s->cies, &s->ciecap, s->ncies, sizeof(*s->cies)))
		return false;
	s->cies[s->ncies] = *c;
	s->hash[cie_slot(s, c->off)] = (uint32_t)(s->ncies + 1);
	*idx = s->ncies++;
	return true;
}

/* Index of the CIE at section offset `off`, read now if not met yet (an
 * offset without a valid CIE gets an entry with valid = false).  false only
 * on memory exhaustion. */
static bool find_cie(struct cfi_section *s, uint64_t off, size_t *idx)
{
	struct entry e;
	struct cie c;

	if (s->hashcap) {
		size_t i = cie_slot(s, off);

		if (s->hash[i]) {
			*idx = s->hash[i] - 1;
			return true;
		}
	}
	memset(&c, 0, sizeof(c));
	c.off = off;
	if (read_entry(s, off, &e) == ENTRY_OK && e.is_cie)
		parse_cie(s, off, &e, &c);
	return add_cie(s, &c, idx);
}

/* ---- step 1: FDEs of one section --------------------------------------- */

/* [*lo, *hi) of an FDE whose CIE says `enc`, and where its instructions
 * (with any augmentation data) start. */
static bool fde_range(const struct cfi_section *s, const struct entry *e, uint8_t enc,
		      uint64_t *lo, uint64_t *hi, const uint8_t **insns)
{
	const uint8_t *p = e->body, *end = e->end;
	uint64_t loc, len;

	if (!s->eh) {
		if (end - p < 16)
			return false;
		loc = get_le(p, 8);
		len = get_le(p + 8, 8);
		p += 16;
	} else {
		uint64_t field = s->addr + (uint64_t)(p - s->buf);

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
	*insns = p;
	return true;
}

/* Read every CIE and FDE of section `s`, keeping the FDEs that describe
 * something.  -1 on memory exhaustion. */
static int collect_fdes(struct cfi_section *s, struct unwind_table *t)
{
	uint64_t off = 0;

	for (;;) {
		struct entry e;
		const uint8_t *insns;
		uint64_t lo, hi, cur = off;
		size_t ci;
		int r = read_entry(s, off, &e);

		if (r == ENTRY_END || r == ENTRY_STOP)
			break;
		off = e.next;
		if (r == ENTRY_BAD)
			continue;
		if (e.is_cie) {
			/* kept now: the FDEs after it usually name it */
			if (!find_cie(s, cur, &ci))
				return -1;
			continue;
		}
		t->fdes++;
		if (!find_cie(s, e.cie_off, &ci))
			return -1;
		if (!s->cies[ci].valid || !s->cies[ci].enc_ok ||
		    !fde_range(s, &e, s->cies[ci].enc, &lo, &hi, &insns)) {
			t->skipped++;
			continue;
		}
		if (hi == lo)
			continue; /* empty: describes nothing */
		if (hi < lo || hi > UINT32_MAX) {
			t->skipped++;
			continue;
		}
		if (s->nfdes >= UINT32_MAX ||
		    !grow((void **)&s->fdes, &s->fdecap, s->nfdes, sizeof(*s->fdes)))
			return -1;
		s->fdes[s->nfdes] = (struct fde){ .lo = (uint32_t)lo, .hi = (uint32_t)hi,
						  .cie = (uint32_t)ci, .insns = insns,
						  .end = e.end };
		s->nfdes++;
	}
	return 0;
}

/* ---- step 2: pieces ---------------------------------------------------- */

/* Sort s->fdes by start, equal starts in section order, into s->order:
 * an LSD radix sort on the start's four bytes (stable, and the keys begin in
 * section order).  A sorted section (common) costs one pass. */
static bool sort_fdes(struct cfi_section *s)
{
	size_t n = s->nfdes;
	uint64_t *tmp;
	bool sorted = true;

	s->order = malloc((n ? n : 1) * sizeof(*s->order));
	if (!s->order)
		return false;
	for (size_t i = 0; i < n; i++) {
		s->order[i] = (uint64_t)s->fdes[i].lo << 32 | i;
		if (i > 0 && s->fdes[i].lo < s->fdes[i - 1].lo)
			sorted = false;
	}
	if (sorted)
		return true;
	tmp = malloc(n * sizeof(*tmp));
	if (!tmp)
		return false;
	for (unsigned shift = 32; shift < 64; shift += 8) {
		size_t count[257] = { 0 };

		for (size_t i = 0; i < n; i++)
			count[((s->order[i] >> shift) & 0xff) + 1]++;
		for (size_t b = 1; b < 257; b++)
			count[b] += count[b - 1];
		for (size_t i = 0; i < n; i++)
			tmp[count[(s->order[i] >> shift) & 0xff]++] = s->order[i];
		memcpy(s->order, tmp, n * sizeof(*tmp));
	}
	free(tmp);
	return true;
}

/* Pieces of the FDEs of s (sorted here) not covered by an earlier-starting
 * FDE of s nor by any piece in `taken` (sorted, disjoint; may be NULL). */
static bool make_pieces(struct cfi_section *s, const struct piece_vec *taken,
			bool debug, struct piece_vec *out)
{
	uint64_t maxend = 0;
	size_t k = 0;

	if (!sort_fdes(s))
		return false;
	for (size_t o = 0; o < s->nfdes; o++) {
		uint32_t i = (uint32_t)s->order[o];
		uint64_t a = s->fdes[i].lo > maxend ? s->fdes[i].lo : maxend;
		uint64_t b = s->fdes[i].hi;

		if (b > maxend)
			maxend = b;
		if (a >= b)
			continue;
		if (!taken || taken->n == 0) {
			if (!push_piece(out, a, b, debug, i))
				return false;
			continue;
		}
		/* a only grows from one FDE to the next, so k does too */
		while (k < taken->n && taken->v[k].hi <= a)
			k++;
		for (size_t j = k; a < b; j++) {
			if (j >= taken->n || taken->v[j].lo >= b) {
				if (!push_piece(out, a, b, debug, i))
					return false;
				break;
			}
			if (taken->v[j].lo > a && !push_piece(out, a, taken->v[j].lo, debug, i))
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
		if (!push_piece(out, p->lo, p->hi, p->debug, p->fde))
			return false;
	}
	return true;
}

/* ---- step 3: rules to rows --------------------------------------------- */

/* One decoded DWARF expression operation, of the few the rows recognise. */
struct op {
	uint8_t atom;
	uint64_t reg;     /* DW_OP_bregx */
	uint64_t num;     /* breg offset, plus_uconst operand */
};

/* Decode the expression [p, p + len) into at most `max` ops.  -1 when it
 * holds more, an operation outside the recognised forms' ones (which then
 * cannot match), or an operand running past its end. */
static int decode_ops(const uint8_t *p, uint64_t len, struct op *ops, int max)
{
	const uint8_t *end = p + len;
	int n = 0;

	while (p < end) {
		struct op *o = &ops[n];
		int64_t s;

		if (n == max)
			return -1;
		o->atom = *p++;
		o->reg = o->num = 0;
		if (o->atom >= DW_OP_breg0 && o->atom <= DW_OP_breg31) {
			if (!sleb(&p, end, &s))
				return -1;
			o->num = (uint64_t)s;
		} else if (o->atom == DW_OP_bregx) {
			if (!uleb(&p, end, &o->reg) || !sleb(&p, end, &s))
				return -1;
			o->num = (uint64_t)s;
		} else if (o->atom == DW_OP_plus_uconst) {
			if (!uleb(&p, end, &o->num))
				return -1;
		} else if (!(o->atom >= DW_OP_lit0 && o->atom <= DW_OP_lit31) &&
			   o->atom != DW_OP_deref && o->atom != DW_OP_and &&
			   o->atom != DW_OP_ge && o->atom != DW_OP_shl &&
			   o->atom != DW_OP_plus) {
			return -1;
		}
		n++;
	}
	return n;
}

/* The PLT rule: breg7 8; breg16 0; lit15; and; litN; ge; lit3; shl; plus.
 * Sets *n = N. */
static bool ops_plt(const struct op *ops, int nops, int *n)
{
	static const uint8_t want[9] = {
		DW_OP_breg7, DW_OP_breg16, DW_OP_lit15, DW_OP_and, 0,
		DW_OP_ge, DW_OP_lit3, DW_OP_shl, DW_OP_plus,
	};

	if (nops != 9)
		return false;
	for (int i = 0; i < 9; i++)
		if (i != 4 && ops[i].atom != want[i])
			return false;
	if (ops[0].num != 8 || ops[1].num != 0 ||
	    ops[4].atom < DW_OP_lit0 || ops[4].atom > DW_OP_lit31)
		return false;
	*n = ops[4].atom - DW_OP_lit0;
	return true;
}

/* CFA rule as row->cfa_kind/cfa_off; false when it is none of the kinds. */
static bool cfa_row(const struct rules *st, struct unwind_row *row)
{
	struct op ops[9];
	uint64_t reg;
	int64_t off;
	int n, plt;

	if (st->cfa == CFA_RULE_REG) {
		reg = st->cfa_reg;
		off = (int64_t)st->cfa_off;
	} else if (st->cfa == CFA_RULE_EXPR) {
		n = decode_ops(st->cfa_expr, st->cfa_len, ops, 9);
		if (n <= 0)
			return false;
		if (ops_plt(ops, n, &plt)) {
			row->cfa_kind = CFA_PLT;
			row->cfa_off = plt;
			return true;
		}
		off = (int64_t)ops[0].num;
		if (n == 2 && ops[0].atom == DW_OP_breg6 && ops[1].atom == DW_OP_deref &&
		    off < 0 && off >= -UNWIND_CFA_OFF_MAX) {
			/* stack realignment: DW_OP_breg6 (rbp) -N; DW_OP_deref */
			row->cfa_kind = CFA_RBP_DEREF;
			row->cfa_off = (uint32_t)-off;
			return true;
		}
		if (n != 1)
			return false;
		if (ops[0].atom == DW_OP_bregx)
			reg = ops[0].reg;
		else if (ops[0].atom >= DW_OP_breg0 && ops[0].atom <= DW_OP_breg31)
			reg = ops[0].atom - DW_OP_breg0;
		else
			return false;
	} else {
		return false;
	}
	if ((reg != REG_RSP && reg != REG_RBP) || off < 0 || off > UNWIND_CFA_OFF_MAX)
		return false;
	row->cfa_kind = reg == REG_RSP ? CFA_RSP : CFA_RBP;
	row->cfa_off = (uint32_t)off;
	return true;
}

/* Where the rule says the register is saved, when that is CFA + *off: an
 * offset rule, or DW_CFA_expression with DW_OP_plus_uconst N (pushed on the
 * CFA). */
static bool saved_at_cfa(const struct reg_rule *r, int64_t *off)
{
	struct op op;

	if (r->how == RULE_AT_CFA) {
		*off = r->n;
		return true;
	}
	if (r->how == RULE_AT_EXPR && decode_ops(r->expr, r->len, &op, 1) == 1 &&
	    op.atom == DW_OP_plus_uconst) {
		*off = (int64_t)op.num;
		return true;
	}
	return false;
}

/* rbp rule as row->rbp_kind/rbp_off8. */
static void rbp_row(const struct reg_rule *r, struct unwind_row *row)
{
	struct op op;
	int64_t off;

	row->rbp_kind = RBP_LOST;
	if (r->how == RULE_SAME) {
		row->rbp_kind = RBP_SAME;
	} else if (saved_at_cfa(r, &off)) {
		if (off % 8 == 0 && off / 8 >= UNWIND_RBP_OFF8_MIN &&
		    off / 8 <= UNWIND_RBP_OFF8_MAX) {
			row->rbp_kind = RBP_AT_CFA;
			row->rbp_off8 = (int32_t)(off / 8);
		}
	} else if (r->how == RULE_AT_EXPR && decode_ops(r->expr, r->len, &op, 1) == 1 &&
		   op.atom == DW_OP_breg6) {
		/* DW_CFA_expression rbp (DW_OP_breg6 N): saved at rbp + N, as
		 * stack-realigning functions say */
		off = (int64_t)op.num;
		if (off % 8 == 0 && off / 8 >= UNWIND_RBP_OFF8_MIN &&
		    off / 8 <= UNWIND_RBP_OFF8_MAX) {
			row->rbp_kind = RBP_AT_RBP;
			row->rbp_off8 = (int32_t)(off / 8);
		}
	}
}

/* The rules `st` (return address in column ra_col) as a row. */
static void rules_row(const struct rules *st, uint64_t ra_col, struct unwind_row *row)
{
	const struct reg_rule *ra = &st->ra;
	int64_t off;

	row->cfa_kind = CFA_UNSUPPORTED;
	row->cfa_off = 0;
	row->rbp_kind = RBP_SAME;
	row->rbp_off8 = 0;
	if (ra_col != REG_RA)
		return;
	/* undefined return address: the outermost frame (an empty expression
	 * describes nothing, so it is undefined too) */
	if (ra->how == RULE_UNDEF ||
	    ((ra->how == RULE_AT_EXPR || ra->how == RULE_IS_EXPR) && ra->len == 0)) {
		row->cfa_kind = CFA_END;
		return;
	}
	if (!saved_at_cfa(ra, &off) || off != -8)
		return;
	if (!cfa_row(st, row)) {
		row->cfa_kind = CFA_UNSUPPORTED;
		row->cfa_off = 0;
		return;
	}
	rbp_row(&st->rbp, row);
}

static bool same_rule(const struct unwind_row *a, const struct unwind_row *b)
{
	return a->nrows == b->nrows; /* the whole rule word */
}

/* ---- step 3: the CFA-instruction interpreter --------------------------- */

/* How a run stopped (RUN_ON: it goes on). */
enum { RUN_ON = -1, RUN_END, RUN_FULL, RUN_BAD, RUN_NOMEM };

/* One run of a CIE's initial instructions (fde == NULL) or of an FDE's
 * program from its CIE's initial state. */
struct cfi_run {
	const struct cfi_section *s;
	const struct cie *cie;
	const struct fde *fde;
	struct rules st;
	struct rules saved[REMEMBER_MAX];  /* DW_CFA_remember_state stack */
	size_t depth;
	uint64_t loc;            /* the program's location */
	uint64_t addr;           /* FDE: start of the row being built */
	struct row_vec *rows;    /* FDE: where rows go, merged */
};

/* Close the row being built (it ends where the program moved to). */
static bool close_row(struct cfi_run *r, const struct unwind_row *row)
{
	struct row_vec *v = r->rows;

	if (v->n > 0 && same_rule(&v->v[v->n - 1], row))
		return true;
	return push_row(v, row);
}

/* The program moved to r->loc. */
static int moved(struct cfi_run *r)
{
	struct unwind_row row;

	if (!r->fde)
		return RUN_BAD; /* a CIE's instructions describe no addresses */
	if (r->loc <= r->addr)
		return RUN_ON;  /* still in the row being built */
	row.pc = (uint32_t)r->addr;
	rules_row(&r->st, r->cie->ra_col, &row);
	if (!close_row(r, &row))
		return RUN_NOMEM;
	r->addr = r->loc;
	return r->addr >= r->fde->hi ? RUN_FULL : RUN_ON;
}

/* The rule of column `reg`, or NULL for a column the rows ignore; *bad on
 * a column beyond any register. */
static struct reg_rule *column(struct cfi_run *r, uint64_t reg, bool *bad)
{
	*bad = reg >= REG_COLUMN_MAX;
	if (reg == REG_RBP)
		return &r->st.rbp;
	if (reg == REG_RA)
		return &r->st.ra;
	return NULL;
}

/* Set column reg's rule; false on a bad column. */
static bool set_rule(struct cfi_run *r, uint64_t reg, uint8_t how, int64_t n,
		     const uint8_t *expr, uint64_t len)
{
	bool bad;
	struct reg_rule *c = column(r, reg, &bad);

	if (bad)
		return false;
	if (c)
		*c = (struct reg_rule){ .how = how, .n = n, .expr = expr, .len = len };
	return true;
}

/* Read DW_CFA_set_loc's operand, in the FDE pointer encoding. */
static bool set_loc(struct cfi_run *r, const uint8_t **pp, const uint8_t *end)
{
	uint64_t field = r->s->addr + (uint64_t)(*pp - r->s->buf), v;
	uint8_t enc = r->cie->enc;

	if (!read_value(pp, end, enc & 0x0f, &v))
		return false;
	if (r->s->eh && (enc & 0x70) == DW_EH_PE_pcrel)
		v += field;
	r->loc = v;
	return true;
}

/* A saved-register rule: DW_CFA_offset and its extended, signed, negative
 * and val_ forms (offsets in data alignment units).  false on bad CFI. */
static bool offset_rule(struct cfi_run *r, uint8_t opcode, const uint8_t **pp,
			const uint8_t *end)
{
	bool is_val = opcode == DW_CFA_val_offset || opcode == DW_CFA_val_offset_sf;
	uint64_t reg = opcode & 0x3f, u;
	int64_t n;

	if (!(opcode & 0xc0) && !uleb(pp, end, &reg))
		return false;
	if (opcode == DW_CFA_offset_extended_sf || opcode == DW_CFA_val_offset_sf) {
		if (!sleb(pp, end, &n))
			return false;
	} else {
		if (!uleb(pp, end, &u))
			return false;
		n = (int64_t)(opcode == DW_CFA_GNU_negative_offset_extended ? 0 - u : u);
	}
	n = (int64_t)((uint64_t)n * (uint64_t)r->cie->daf);
	return set_rule(r, reg, is_val ? RULE_IS_CFA : RULE_AT_CFA, n, NULL, 0);
}

/* A CFA rule: DW_CFA_def_cfa and its forms.  false on bad CFI. */
static bool cfa_rule(struct cfi_run *r, uint8_t opcode, const uint8_t **pp,
		     const uint8_t *end)
{
	struct rules *st = &r->st;
	uint64_t reg = st->cfa_reg, off = st->cfa_off, len;
	int64_t n;

	switch (opcode) {
	case DW_CFA_def_cfa_expression:
		if (!uleb(pp, end, &len) || len > (uint64_t)(end - *pp))
			return false;
		st->cfa = CFA_RULE_EXPR;
		st->cfa_expr = *pp;
		st->cfa_len = len;
		*pp += len;
		return true;
	case DW_CFA_def_cfa:
	case DW_CFA_def_cfa_sf:
	case DW_CFA_def_cfa_register:
		if (!uleb(pp, end, &reg))
			return false;
		break;
	}
	if (opcode == DW_CFA_def_cfa || opcode == DW_CFA_def_cfa_offset) {
		if (!uleb(pp, end, &off))
			return false;
	} else if (opcode == DW_CFA_def_cfa_sf || opcode == DW_CFA_def_cfa_offset_sf) {
		if (!sleb(pp, end, &n))
			return false;
		off = (uint64_t)n * (uint64_t)r->cie->daf;
	}
	if (opcode == DW_CFA_def_cfa || opcode == DW_CFA_def_cfa_sf)
		st->cfa = CFA_RULE_REG;
	else if (st->cfa != CFA_RULE_REG)
		st->cfa = CFA_RULE_BAD; /* changing half of a rule that has none */
	st->cfa_reg = reg;
	st->cfa_off = off;
	return true;
}

/* Execute [p, end).  RUN_END when the program ends, RUN_FULL when the FDE's
 * rows reach its end, RUN_BAD on bad CFI, RUN_NOMEM. */
static int execute(struct cfi_run *r, const uint8_t *p, const uint8_t *end)
{
	const struct cie *cie = r->cie;

	while (p < end) {
		uint8_t opcode = *p++;
		uint64_t reg, u, len;
		struct reg_rule *c;
		bool ok = true, bad;
		int m;

		switch (opcode & 0xc0 ? opcode & 0xc0 : opcode) {
		case DW_CFA_advance_loc:
			r->loc += (opcode & 0x3f) * cie->caf;
			goto moved;
		case DW_CFA_advance_loc1:
		case DW_CFA_advance_loc2:
		case DW_CFA_advance_loc4:
		case DW_CFA_MIPS_advance_loc8:
			len = opcode == DW_CFA_advance_loc1 ? 1 : opcode == DW_CFA_advance_loc2 ? 2 :
			      opcode == DW_CFA_advance_loc4 ? 4 : 8;
			if ((uint64_t)(end - p) < len)
				return RUN_BAD;
			r->loc += get_le(p, len) * cie->caf;
			p += len;
			goto moved;
		case DW_CFA_set_loc:
			if (!set_loc(r, &p, end))
				return RUN_BAD;
			goto moved;

		case DW_CFA_def_cfa:
		case DW_CFA_def_cfa_sf:
		case DW_CFA_def_cfa_register:
		case DW_CFA_def_cfa_offset:
		case DW_CFA_def_cfa_offset_sf:
		case DW_CFA_def_cfa_expression:
			ok = cfa_rule(r, opcode, &p, end);
			break;
		case DW_CFA_offset:
		case DW_CFA_offset_extended:
		case DW_CFA_offset_extended_sf:
		case DW_CFA_GNU_negative_offset_extended:
		case DW_CFA_val_offset:
		case DW_CFA_val_offset_sf:
			ok = offset_rule(r, opcode, &p, end);
			break;
		case DW_CFA_undefined:
		case DW_CFA_same_value:
			ok = uleb(&p, end, &reg) &&
			     set_rule(r, reg, opcode == DW_CFA_undefined ? RULE_UNDEF : RULE_SAME,
				      0, NULL, 0);
			break;
		case DW_CFA_register:
			ok = uleb(&p, end, &reg) && uleb(&p, end, &u) &&
			     set_rule(r, reg, RULE_IN_REG, (int64_t)u, NULL, 0);
			break;
		case DW_CFA_expression:
		case DW_CFA_val_expression:
			ok = uleb(&p, end, &reg) && uleb(&p, end, &len) &&
			     len <= (uint64_t)(end - p) &&
			     set_rule(r, reg, opcode == DW_CFA_expression ? RULE_AT_EXPR : RULE_IS_EXPR,
				      0, p, len);
			if (ok)
				p += len;
			break;
		case DW_CFA_restore:
		case DW_CFA_restore_extended:
			reg = opcode & 0x3f;
			if (opcode == DW_CFA_restore_extended && !uleb(&p, end, &reg))
				return RUN_BAD;
			/* back to the CIE's rule: there is none while running it */
			c = column(r, reg, &bad);
			if (!r->fde || bad)
				return RUN_BAD;
			if (c)
				*c = reg == REG_RBP ? cie->state.rbp : cie->state.ra;
			break;

		case DW_CFA_remember_state:
			if (r->depth == REMEMBER_MAX)
				return RUN_BAD;
			r->saved[r->depth++] = r->st;
			break;
		case DW_CFA_restore_state:
			/* the location is not part of the state: it stays */
			if (r->depth == 0)
				return RUN_BAD;
			r->st = r->saved[--r->depth];
			break;

		case DW_CFA_nop:
			break;
		case DW_CFA_GNU_args_size:
			ok = uleb(&p, end, &u);
			break;
		case DW_CFA_GNU_window_save:
			/* SPARC's shorthand (libdw applies it on any machine): it
			 * puts column 16 at CFA + 0 */
			r->st.ra = (struct reg_rule){ .how = RULE_AT_CFA, .n = 0 };
			break;
		default:
			return RUN_BAD;
		}
		if (!ok)
			return RUN_BAD;
		continue;
moved:
		m = moved(r);
		if (m != RUN_ON)
			return m;
	}
	return RUN_END;
}

/* Run c's initial instructions once, from the x86-64 ABI defaults: CFA
 * unknown, rbp (callee-saved) and the return-address column same-value. */
static void cie_init(const struct cfi_section *s, struct cie *c, struct cfi_run *r)
{
	if (c->init)
		return;
	r->s = s;
	r->cie = c;
	r->fde = NULL;
	r->depth = 0;
	r->st = (struct rules){ .cfa = CFA_RULE_UNDEF, .rbp = { .how = RULE_SAME },
				.ra = { .how = RULE_SAME } };
	c->init = execute(r, c->insns, c->insns_end) == RUN_END ? 1 : 2;
	if (c->init == 1)
		c->state = r->st;
}

/* Skip an FDE's augmentation data (CIE augmentation "z..."). */
static bool skip_fde_aug(const struct cie *c, const uint8_t **pp, const uint8_t *end)
{
	uint64_t len;

	if (!c->z)
		return true;
	if (!uleb(pp, end, &len) || len > (uint64_t)(end - *pp))
		return false;
	*pp += len;
	return true;
}

/* The rows of FDE f from pc `from` (inside it) to its end, merged, into
 * *rows (emptied first).  Bad CFI ends them with one CFA_UNSUPPORTED row.
 * false on memory exhaustion. */
static bool fde_rows(struct cfi_section *s, const struct fde *f, uint64_t from,
		     struct cfi_run *r, struct row_vec *rows)
{
	struct cie *c = &s->cies[f->cie];
	const uint8_t *p = f->insns;
	struct unwind_row row;
	int res = RUN_BAD;

	rows->n = 0;
	cie_init(s, c, r);
	r->s = s;
	r->cie = c;
	r->fde = f;
	r->depth = 0;
	r->loc = f->lo;
	r->addr = from;
	r->rows = rows;
	if (c->init == 1 && c->rules_ok && skip_fde_aug(c, &p, f->end)) {
		r->st = c->state;
		res = execute(r, p, f->end);
	}
	if (res == RUN_NOMEM)
		return false;
	if (res == RUN_FULL)
		return true;
	/* the last row holds to the FDE's end */
	row.pc = (uint32_t)r->addr;
	if (res == RUN_END) {
		rules_row(&r->st, c->ra_col, &row);
	} else {
		row.cfa_kind = CFA_UNSUPPORTED;
		row.cfa_off = 0;
		row.rbp_kind = RBP_SAME;
		row.rbp_off8 = 0;
	}
	return close_row(r, &row);
}

/* The rows of one FDE, kept while its pieces are emitted (a .debug_frame
 * FDE can be split by .eh_frame pieces: its program runs once). */
struct fde_cache {
	const struct fde *fde;   /* whose rows these are, or NULL */
	struct row_vec rows;
	size_t cursor;           /* row covering the last piece's start */
};

/* Append the rows of piece p to *out: the FDE's rows in [lo, hi), the
 * first one starting at lo. */
static bool emit_piece(const struct piece *p, struct fde_cache *fc, struct row_vec *out)
{
	const struct row_vec *v = &fc->rows;
	struct unwind_row row;
	size_t k = fc->cursor;

	if (v->n == 0)
		return true;
	while (k + 1 < v->n && v->v[k + 1].pc <= p->lo)
		k++;
	fc->cursor = k;
	row = v->v[k];
	row.pc = p->lo;
	if (!push_row(out, &row))
		return false;
	for (k++; k < v->n && v->v[k].pc < p->hi; k++)
		if (!push_row(out, &v->v[k]))
			return false;
	return true;
}

/* Step 3 for every piece, gaps marked.  false on memory exhaustion. */
static bool build_rows(struct cfi_section *eh, struct cfi_section *dbg,
		       const struct piece_vec *all, struct row_vec *rows)
{
	struct fde_cache fc = { 0 };
	struct cfi_run *run = malloc(sizeof(*run));
	bool ok = run != NULL;

	for (size_t i = 0; ok && i < all->n; i++) {
		const struct piece *p = &all->v[i];
		struct cfi_section *s = p->debug ? dbg : eh;
		const struct fde *f = &s->fdes[p->fde];

		if (fc.fde != f) {
			fc.fde = f;
			fc.cursor = 0;
			ok = fde_rows(s, f, p->lo, run, &fc.rows);
		}
		ok = ok && emit_piece(p, &fc, rows);
		if (ok && (i + 1 == all->n || all->v[i + 1].lo != p->hi)) {
			struct unwind_row gap = { .pc = p->hi, .cfa_kind = CFA_NONE,
						  .rbp_kind = RBP_SAME };

			ok = push_row(rows, &gap);
		}
	}
	free(fc.rows.v);
	free(run);
	return ok;
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

/* ---- step 4: a row per PLT stub ----------------------------------------- */

/* The linker gives a PLT section one FDE whose last row covers every stub;
 * the sampler keys a leaf frame by its row, so all stubs would be named
 * after the first.  Each stub gets a row of its own (the same rule):
 * rows starting at every entry of .plt, .plt.sec and .plt.got. */
static bool split_plt_rows(Elf *elf, struct row_vec *rows)
{
	struct row_vec out = { 0 };
	uint64_t lo[8], hi[8], esz[8];
	size_t shstrndx, nplt = 0;
	Elf_Scn *scn = NULL;

	if (!rows->n || elf_getshdrstrndx(elf, &shstrndx) != 0)
		return true;
	while ((scn = elf_nextscn(elf, scn)) != NULL && nplt < 8) {
		GElf_Shdr sh;
		const char *sname;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
		    !(sh.sh_flags & SHF_EXECINSTR) || sh.sh_addr + sh.sh_size > UINT32_MAX ||
		    !(sname = elf_strptr(elf, shstrndx, sh.sh_name)) ||
		    (strcmp(sname, ".plt") && strcmp(sname, ".plt.sec") && strcmp(sname, ".plt.got")))
			continue;
		/* kept in address order: the rows come out in pc order */
		size_t at = nplt++;

		for (; at > 0 && lo[at - 1] > sh.sh_addr; at--) {
			lo[at] = lo[at - 1];
			hi[at] = hi[at - 1];
			esz[at] = esz[at - 1];
		}
		lo[at] = sh.sh_addr;
		hi[at] = sh.sh_addr + sh.sh_size;
		esz[at] = sh.sh_entsize == 8 || sh.sh_entsize == 16 ? sh.sh_entsize :
			  !strcmp(sname, ".plt.got") ? 8 : 16;
	}
	if (!nplt)
		return true;
	for (size_t i = 0; i < rows->n; i++) {
		const struct unwind_row *r = &rows->v[i];
		uint64_t next = i + 1 < rows->n ? rows->v[i + 1].pc : UINT32_MAX;

		if (!push_row(&out, r))
			goto nomem;
		if (r->cfa_kind == CFA_NONE)
			continue;
		for (size_t k = 0; k < nplt; k++) {
			/* the entries of section k after r's start and before the next row */
			uint64_t a = r->pc < lo[k] ? lo[k] : lo[k] + ((r->pc - lo[k]) / esz[k] + 1) * esz[k];

			for (; a < hi[k] && a < next; a += esz[k]) {
				struct unwind_row split = *r;

				split.pc = (uint32_t)a;
				if (!push_row(&out, &split))
					goto nomem;
			}
		}
	}
	free(rows->v);
	*rows = out;
	return true;
nomem:
	free(out.v);
	return false;
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
	struct cfi_section eh = { .eh = true }, dbg = { .eh = false };
	struct piece_vec eh_p = { 0 }, dbg_p = { 0 }, all = { 0 };
	struct row_vec rows = { 0 };
	Elf *elf = NULL;
	Elf_Scn *eh_scn, *dbg_scn;
	GElf_Shdr eh_shdr = { 0 };
	GElf_Ehdr ehdr;
	const unsigned char *ident;
	Elf_Data *d;
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
	if ((d = section_data(eh_scn)) != NULL) {
		eh.buf = d->d_buf;
		eh.size = d->d_size;
		eh.addr = eh_shdr.sh_addr;
		if (collect_fdes(&eh, out) != 0)
			goto nomem;
	}
	if ((d = section_data(dbg_scn)) != NULL) {
		dbg.buf = d->d_buf;
		dbg.size = d->d_size;
		if (collect_fdes(&dbg, out) != 0)
			goto nomem;
	}

	/* step 2 */
	if (!make_pieces(&eh, NULL, false, &eh_p) ||
	    !make_pieces(&dbg, &eh_p, true, &dbg_p) ||
	    !merge_pieces(&eh_p, &dbg_p, &all))
		goto nomem;

	/* step 3, then 4 */
	if (!build_rows(&eh, &dbg, &all, &rows) || !split_plt_rows(elf, &rows))
		goto nomem;
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
	section_free(&eh);
	section_free(&dbg);
	elf_end(elf);
	return ret;
}

int unwind_fde_ranges(Elf *elf, const uint64_t *pcs, size_t n, struct fde_range *out)
{
	struct cfi_section eh = { .eh = true };
	struct unwind_table counts = { 0 };
	Elf_Scn *eh_scn, *dbg_scn;
	GElf_Shdr eh_shdr = { 0 };
	Elf_Data *d;
	char err[8];
	int ret = -1;

	memset(out, 0, n * sizeof(*out));
	if (find_sections(elf, &eh_scn, &eh_shdr, &dbg_scn, "", err, sizeof(err)) != 0 ||
	    !(d = section_data(eh_scn)))
		return -1;
	eh.buf = d->d_buf;
	eh.size = d->d_size;
	eh.addr = eh_shdr.sh_addr;
	if (collect_fdes(&eh, &counts) == 0) {
		for (size_t i = 0; i < n; i++)
			for (size_t k = 0; k < eh.nfdes; k++)
				if (eh.fdes[k].lo <= pcs[i] && pcs[i] < eh.fdes[k].hi) {
					out[i].lo = eh.fdes[k].lo;
					out[i].hi = eh.fdes[k].hi;
					break;
				}
		ret = 0;
	}
	section_free(&eh);
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

/* Index entry k of a laid-out table v (see bpf/pyperf.h). */
static uint32_t index_entry(const struct unwind_row *v, uint32_t nrows, uint32_t k)
{
	uint32_t e[2];

	memcpy(e, &v[unwind_index_elem(nrows, k)], sizeof(e));
	return e[k & 1];
}

struct unwind_row *unwind_table_layout(const struct unwind_table *t, uint32_t id, size_t *len)
{
	uint32_t nrows = (uint32_t)t->n, shift = UNWIND_INDEX_SHIFT_MIN, base = 0, npages = 0;
	size_t n = 1 + t->n, r = 0;
	struct unwind_row *v;
	uint32_t *e;

	if (t->n) {
		/* pages of 4 KiB, or larger until the index is at most half the
		 * size of the rows (sparse tables) */
		uint32_t lo = t->rows[0].pc, hi = t->rows[t->n - 1].pc;

		while ((((uint64_t)hi - (lo & ~((1ull << shift) - 1))) >> shift) + 1 >
			       (t->n > 64 ? t->n : 64) ||
		       (((uint64_t)hi - lo) >> shift) + 1 >= UNWIND_INDEX_PAGES_MAX)
			shift++;
		base = lo & (uint32_t)~((1ull << shift) - 1);
		npages = (uint32_t)(((uint64_t)hi - base) >> shift) + 1;
		n += 1 + (npages + 2) / 2; /* meta, then npages + 1 entries */
	}
	v = calloc(n, sizeof(*v));
	if (!v)
		return NULL;
	v[0].pc = id;
	v[0].nrows = nrows;
	if (t->n)
		memcpy(v + 1, t->rows, t->n * sizeof(*v));
	*len = n;
	if (!t->n)
		return v;
	v[1 + nrows].pc = base;
	v[1 + nrows].nrows = npages | shift << 24;
	e = (uint32_t *)(void *)&v[2 + nrows];
	for (uint32_t k = 0; k <= npages; k++) {
		uint64_t page = (uint64_t)base + ((uint64_t)k << shift);

		while (r < t->n && t->rows[r].pc < page)
			r++;
		e[k] = (uint32_t)r;
	}
	return v;
}

const struct unwind_row *unwind_layout_find(const struct unwind_row *v, uint32_t pc)
{
	uint32_t nrows = v[0].nrows, lo = 1, hi = 1 + nrows, k;

	if (unwind_index_page(&v[1 + nrows], pc, &k)) {
		lo = index_entry(v, nrows, k) + 1;
		hi = index_entry(v, nrows, k + 1) + 1;
	}
	/* rows [1, lo) lie at or below pc, rows [hi, 1 + nrows) above it */
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (v[mid].pc <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo == 1 ? NULL : &v[lo - 1];
}
