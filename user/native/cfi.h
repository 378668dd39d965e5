/* cfi.h - what the files of the CFI-to-rows build share (unwind_table.c
 * says how the build works): cfi_read.c reads the entries of .eh_frame and
 * .debug_frame and decides which FDE describes which bytes (steps 1 and
 * 2), cfi_run.c runs each FDE's program into rows (step 3), unwind_table.c
 * opens the ELF file, adds the PLT's rows (step 4) and lays the table out
 * for the sampler. */
#ifndef PYPERF_CFI_H
#define PYPERF_CFI_H

#include "unwind_table.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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

/* ---- cfi_read.c -------------------------------------------------------- */

/* Append row to r; false when out of memory. */
bool cfi_push_row(struct row_vec *r, const struct unwind_row *row);
/* Little-endian unsigned value of `len` bytes at p. */
uint64_t cfi_get_le(const uint8_t *p, size_t len);
/* (S)LEB128 at *pp, not reading at or past end; advances *pp.  false when
 * the bytes run out. */
bool cfi_uleb(const uint8_t **pp, const uint8_t *end, uint64_t *out);
bool cfi_sleb(const uint8_t **pp, const uint8_t *end, int64_t *out);
/* One value in DW_EH_PE format fmt (low 4 bits of an encoding) at *pp;
 * advances *pp.  false when the format is unknown or the bytes run out. */
bool cfi_read_value(const uint8_t **pp, const uint8_t *end, uint8_t fmt, uint64_t *out);
void cfi_section_free(struct cfi_section *s);
/* Step 1: s's FDEs (and the CIEs they name), counting those left out in t. */
int cfi_collect_fdes(struct cfi_section *s, struct unwind_table *t);
/* Step 2: the bytes of s's FDEs that taken leaves free, as sorted disjoint
 * pieces; two sorted piece lists merged into one. */
bool cfi_make_pieces(struct cfi_section *s, const struct piece_vec *taken, bool debug,
		     struct piece_vec *out);
bool cfi_merge_pieces(const struct piece_vec *x, const struct piece_vec *y,
		      struct piece_vec *out);

/* ---- cfi_run.c --------------------------------------------------------- */

/* Step 3: the rows of every piece of all, in pc order, from the programs of
 * the FDEs that own them (in eh or dbg). */
bool cfi_build_rows(struct cfi_section *eh, struct cfi_section *dbg,
		    const struct piece_vec *all, struct row_vec *rows);

#endif
