/* cfi_run.c - step 3 of the CFI-to-rows build (unwind_table.c): each FDE's
 * program run once by a CFA-instruction interpreter that keeps only what
 * the rows need (the CFA, rbp and the return address), and the rules in
 * force mapped to unwind rows. */
#include "cfi.h"

#include <dwarf.h>  /* the DWARF constants' names only */
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
			if (!cfi_sleb(&p, end, &s))
				return -1;
			o->num = (uint64_t)s;
		} else if (o->atom == DW_OP_bregx) {
			if (!cfi_uleb(&p, end, &o->reg) || !cfi_sleb(&p, end, &s))
				return -1;
			o->num = (uint64_t)s;
		} else if (o->atom == DW_OP_plus_uconst) {
			if (!cfi_uleb(&p, end, &o->num))
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
	return cfi_push_row(v, row);
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

	if (!cfi_read_value(pp, end, enc & 0x0f, &v))
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

	if (!(opcode & 0xc0) && !cfi_uleb(pp, end, &reg))
		return false;
	if (opcode == DW_CFA_offset_extended_sf || opcode == DW_CFA_val_offset_sf) {
		if (!cfi_sleb(pp, end, &n))
			return false;
	} else {
		if (!cfi_uleb(pp, end, &u))
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
		if (!cfi_uleb(pp, end, &len) || len > (uint64_t)(end - *pp))
			return false;
		st->cfa = CFA_RULE_EXPR;
		st->cfa_expr = *pp;
		st->cfa_len = len;
		*pp += len;
		return true;
	case DW_CFA_def_cfa:
	case DW_CFA_def_cfa_sf:
	case DW_CFA_def_cfa_register:
		if (!cfi_uleb(pp, end, &reg))
			return false;
		break;
	}
	if (opcode == DW_CFA_def_cfa || opcode == DW_CFA_def_cfa_offset) {
		if (!cfi_uleb(pp, end, &off))
			return false;
	} else if (opcode == DW_CFA_def_cfa_sf || opcode == DW_CFA_def_cfa_offset_sf) {
		if (!cfi_sleb(pp, end, &n))
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
			r->loc += cfi_get_le(p, len) * cie->caf;
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
			ok = cfi_uleb(&p, end, &reg) &&
			     set_rule(r, reg, opcode == DW_CFA_undefined ? RULE_UNDEF : RULE_SAME,
				      0, NULL, 0);
			break;
		case DW_CFA_register:
			ok = cfi_uleb(&p, end, &reg) && cfi_uleb(&p, end, &u) &&
			     set_rule(r, reg, RULE_IN_REG, (int64_t)u, NULL, 0);
			break;
		case DW_CFA_expression:
		case DW_CFA_val_expression:
			ok = cfi_uleb(&p, end, &reg) && cfi_uleb(&p, end, &len) &&
			     len <= (uint64_t)(end - p) &&
			     set_rule(r, reg, opcode == DW_CFA_expression ? RULE_AT_EXPR : RULE_IS_EXPR,
				      0, p, len);
			if (ok)
				p += len;
			break;
		case DW_CFA_restore:
		case DW_CFA_restore_extended:
			reg = opcode & 0x3f;
			if (opcode == DW_CFA_restore_extended && !cfi_uleb(&p, end, &reg))
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
			ok = cfi_uleb(&p, end, &u);
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
	if (!cfi_uleb(pp, end, &len) || len > (uint64_t)(end - *pp))
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
	if (!cfi_push_row(out, &row))
		return false;
	for (k++; k < v->n && v->v[k].pc < p->hi; k++)
		if (!cfi_push_row(out, &v->v[k]))
			return false;
	return true;
}

/* Step 3 for every piece, gaps marked.  false on memory exhaustion. */
bool cfi_build_rows(struct cfi_section *eh, struct cfi_section *dbg,
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

			ok = cfi_push_row(rows, &gap);
		}
	}
	free(fc.rows.v);
	free(run);
	return ok;
}

