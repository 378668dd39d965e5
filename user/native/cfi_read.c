/* cfi_read.c - steps 1 and 2 of the CFI-to-rows build (unwind_table.c):
 * the CIEs and FDEs of .eh_frame and .debug_frame, every value
 * bounds-checked against its entry, and the pieces of .text each FDE
 * describes. */
#include "cfi.h"

#include <dwarf.h>  /* the DWARF constants' names only */
#include <stdlib.h>
#include <string.h>

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

static bool push_piece(struct piece_vec *p, uint64_t lo, uint64_t hi, bool debug,
		       uint32_t fde)
{
	if (!grow((void **)&p->v, &p->cap, p->n, sizeof(*p->v)))
		return false;
	p->v[p->n++] = (struct piece){ .lo = (uint32_t)lo, .hi = (uint32_t)hi,
				       .debug = debug, .fde = fde };
	return true;
}

bool cfi_push_row(struct row_vec *r, const struct unwind_row *row)
{
	if (!grow((void **)&r->v, &r->cap, r->n, sizeof(*r->v)))
		return false;
	r->v[r->n++] = *row;
	return true;
}

/* ---- encoded values ---------------------------------------------------- */

/* Little-endian unsigned value of `len` bytes at p. */
uint64_t cfi_get_le(const uint8_t *p, size_t len)
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

bool cfi_uleb(const uint8_t **pp, const uint8_t *end, uint64_t *out)
{
	return get_leb(pp, end, false, out);
}

bool cfi_sleb(const uint8_t **pp, const uint8_t *end, int64_t *out)
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
bool cfi_read_value(const uint8_t **pp, const uint8_t *end, uint8_t fmt,
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
	*out = cfi_get_le(p, len);
	if (sign && len < 8 && (*out >> (len * 8 - 1)) & 1)
		*out |= ~(uint64_t)0 << (len * 8);
	*pp = p + len;
	return true;
}

/* ---- sections, entries, CIEs ------------------------------------------- */

void cfi_section_free(struct cfi_section *s)
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
	len = cfi_get_le(p, 4);
	p += 4;
	if (len == 0xffffffffu) {
		/* 64-bit DWARF: an 8-byte length and CIE id / pointer */
		if (limit - p < 8)
			return ENTRY_STOP;
		len = cfi_get_le(p, 8);
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
	id = cfi_get_le(p, unit);
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
			    !cfi_read_value(&p, end, e & 0x0f, &dummy))
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
			if (!cfi_read_value(&p, end, e & 0x0f, &dummy))
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
	if (!cfi_uleb(&p, end, &c->caf) || !cfi_sleb(&p, end, &c->daf))
		return;
	if (version == 1) {
		if (p >= end)
			return;
		c->ra_col = *p++;
	} else if (!cfi_uleb(&p, end, &c->ra_col)) {
		return;
	}
	aug_data = p;
	if (aug[0] == 'z') {
		if (!cfi_uleb(&p, end, &aug_size) || aug_size > (uint64_t)(end - p))
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
		loc = cfi_get_le(p, 8);
		len = cfi_get_le(p + 8, 8);
		p += 16;
	} else {
		uint64_t field = s->addr + (uint64_t)(p - s->buf);

		if (enc == DW_EH_PE_omit || (enc & DW_EH_PE_indirect))
			return false;
		if (!cfi_read_value(&p, end, enc & 0x0f, &loc) ||
		    !cfi_read_value(&p, end, enc & 0x0f, &len))
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
int cfi_collect_fdes(struct cfi_section *s, struct unwind_table *t)
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
bool cfi_make_pieces(struct cfi_section *s, const struct piece_vec *taken,
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
bool cfi_merge_pieces(const struct piece_vec *x, const struct piece_vec *y,
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

