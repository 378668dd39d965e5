/* unwind_table.c - x86-64 CFI to sorted unwind rows.  See unwind_table.h.
 * Steps 1 and 2 are in cfi_read.c, step 3 in cfi_run.c (cfi.h).
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
#include "cfi.h"
#include "errmsg.h"

#include <dwarf.h>  /* the DWARF constants' names only */
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

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

		if (!cfi_push_row(&out, r))
			goto nomem;
		if (r->cfa_kind == CFA_NONE)
			continue;
		for (size_t k = 0; k < nplt; k++) {
			/* the entries of section k after r's start and before the next row */
			uint64_t a = r->pc < lo[k] ? lo[k] : lo[k] + ((r->pc - lo[k]) / esz[k] + 1) * esz[k];

			for (; a < hi[k] && a < next; a += esz[k]) {
				struct unwind_row split = *r;

				split.pc = (uint32_t)a;
				if (!cfi_push_row(&out, &split))
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
		if (cfi_collect_fdes(&eh, out) != 0)
			goto nomem;
	}
	if ((d = section_data(dbg_scn)) != NULL) {
		dbg.buf = d->d_buf;
		dbg.size = d->d_size;
		if (cfi_collect_fdes(&dbg, out) != 0)
			goto nomem;
	}

	/* step 2 */
	if (!cfi_make_pieces(&eh, NULL, false, &eh_p) ||
	    !cfi_make_pieces(&dbg, &eh_p, true, &dbg_p) ||
	    !cfi_merge_pieces(&eh_p, &dbg_p, &all))
		goto nomem;

	/* step 3, then 4 */
	if (!cfi_build_rows(&eh, &dbg, &all, &rows) || !split_plt_rows(elf, &rows))
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
	cfi_section_free(&eh);
	cfi_section_free(&dbg);
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
	if (cfi_collect_fdes(&eh, &counts) == 0) {
		for (size_t i = 0; i < n; i++)
			for (size_t k = 0; k < eh.nfdes; k++)
				if (eh.fdes[k].lo <= pcs[i] && pcs[i] < eh.fdes[k].hi) {
					out[i].lo = eh.fdes[k].lo;
					out[i].hi = eh.fdes[k].hi;
					break;
				}
		ret = 0;
	}
	cfi_section_free(&eh);
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

