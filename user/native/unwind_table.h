/* unwind_table.h - turn an x86-64 ELF file's call frame information (CFI)
 * into the compact table the BPF native unwinder searches.
 *
 * A compiler describes, for every instruction of a function, how to find the
 * caller's frame: where the canonical frame address (CFA) is, where the
 * return address and the saved registers are.  That description lives in
 * .eh_frame (always kept, also used by C++ exceptions) and sometimes in
 * .debug_frame (debug builds without unwind tables).  This module reads both
 * itself, running each FDE's CFA instructions once (DWARF 4 section 6.4),
 * and keeps only what an x86-64 unwinder needs, as a list of
 * `struct unwind_row` (bpf/pyperf.h) sorted by pc: each row holds from its pc
 * up to the next row's pc.  pcs are ELF virtual addresses of the file
 * (st_value space: runtime pc - load bias).
 *
 * Built on libelf, for the sections (link with -lelf).
 *
 * Library code: errors come back as -1 plus a one-line message naming the
 * file in a caller-supplied buffer; nothing here prints or exits. */
#ifndef PYPERF_UNWIND_TABLE_H
#define PYPERF_UNWIND_TABLE_H

#include <libelf.h>
#include <stddef.h>
#include <stdint.h>

#include "pyperf.h"

struct unwind_table {
	struct unwind_row *rows;  /* sorted by pc, strictly increasing, malloc'ed */
	size_t n;
	size_t fdes;              /* FDEs read (.eh_frame and .debug_frame) */
	size_t unsupported;       /* rows with CFA_UNSUPPORTED or RBP_LOST */
	size_t skipped;           /* FDEs left out: range ending above 4 GiB
				   * (row pcs are 32 bits), no valid CIE where
				   * they point, or an address encoding this
				   * reader does not decode */
};

/* Build the table from the ELF file open on `fd`.  The fd is only read with
 * pread/mmap: it is neither closed nor moved.  `name` is used only in error
 * messages.
 *
 * Rules: for each FDE the rows are the ones its instructions give, run
 * from its CIE's initial instructions and the x86-64 ABI's defaults (rbp
 * and the return address same-value, CFA unknown), mapped to unwind_row:
 * CFA = rsp + N / rbp + N (def_cfa, or a one-operation breg expression),
 * the standard PLT expression (CFA_PLT, cfa_off = the PLT's threshold N),
 * *(rbp - N) (CFA_RBP_DEREF, stack realignment), return address undefined
 * (CFA_END), anything else CFA_UNSUPPORTED (the return address must be saved
 * at CFA - 8); rbp same-value or never saved is RBP_SAME, saved at CFA + N
 * is RBP_AT_CFA, at rbp + N (an expression) RBP_AT_RBP, anything else
 * RBP_LOST.  Bad CFI (an unknown opcode, an operand past the end of its
 * entry, restore_state without remember_state, remember_state nested more
 * than 64 deep, ...) turns the row where it happens and the rest of the FDE
 * into one CFA_UNSUPPORTED row.  Where an FDE ends and no other starts, a
 * CFA_NONE row marks the gap.  Where .eh_frame and .debug_frame both
 * describe an address, .eh_frame wins; where FDEs of one section overlap,
 * the one starting first wins (the others keep what lies beyond it).
 * Consecutive rows with identical rules are merged, except that every FDE
 * keeps a row at its start: a row never spans two functions (the sampler
 * keys a leaf frame by its row); for the same reason every stub of .plt,
 * .plt.sec and .plt.got starts a row.
 *
 * Returns 0 (a file without any CFI gives n = 0), or -1 with a message for
 * a file that is not a readable x86-64 ELF file or on memory exhaustion.
 * On error *out is left empty (safe to pass to unwind_table_free). */
int unwind_table_build(int fd, const char *name, struct unwind_table *out,
		       char *err, size_t errlen);

struct fde_range {
	uint64_t lo, hi;          /* [lo, hi); both 0: no FDE */
};

/* For each of pcs[0..n), the range of the .eh_frame FDE of `elf` that holds
 * it (the first one, in section order), into out[0..n).  Returns 0, or -1
 * when the file has no readable .eh_frame or memory ran out. */
int unwind_fde_ranges(Elf *elf, const uint64_t *pcs, size_t n, struct fde_range *out);

/* Free the rows and reset *t to empty. */
void unwind_table_free(struct unwind_table *t);

/* Index of the row covering pc (the last row with row.pc <= pc), or -1 when
 * the table is empty or pc is below the first row.  The reference for the
 * BPF program's binary search. */
long unwind_table_find(const struct unwind_table *t, uint64_t pc);

/* The table as the BPF program reads it (bpf/pyperf.h): a header with the
 * table's id and row count, the rows, then the page index.  Returns a
 * malloc'ed array and its length in *len, or NULL on memory exhaustion. */
struct unwind_row *unwind_table_layout(const struct unwind_table *t, uint32_t id, size_t *len);

/* The row covering pc in such a laid-out table with at least one row,
 * through its page index (NULL: none).  What the BPF program's search
 * finds. */
const struct unwind_row *unwind_layout_find(const struct unwind_row *v, uint32_t pc);

#endif
