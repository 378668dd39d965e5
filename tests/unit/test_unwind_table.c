/* test_unwind_table.c - cmocka tests for user/native/unwind_table.c against real
 * binaries, with binutils' readelf as the independent ground truth.
 *
 * How it works: `readelf --debug-dump=frames-interp FILE` prints, for every
 * FDE of .eh_frame and .debug_frame, the table of rules it computes (LOC,
 * CFA like rsp+8 / rbp+16 / exp, and a column per register mentioned: c-16,
 * u, ...).  Every such row is looked up with unwind_table_find and must map
 * to the same unwind_row (mapping in expect_row).  An "exp" CFA is CFA_PLT
 * only when the FDE's raw instructions (`readelf --debug-dump=frames`) hold
 * the standard PLT expression, whose threshold must equal cfa_off; anything
 * else is CFA_UNSUPPORTED.  FDEs without instructions get the rules of their
 * CIE, which readelf prints with the CIE.  Rows of an FDE overlapped by an
 * earlier-starting FDE of the same section, and .debug_frame rows that an
 * .eh_frame FDE covers, are not compared (the table gives those bytes to the
 * other FDE, see unwind_table.h).  Every FDE start must be covered by a real
 * row and every FDE end followed by a gap must map to CFA_NONE.
 *
 * Edge cases build their inputs at test time in a temporary directory (a
 * tiny C program with only .debug_frame for its own code, plain and with
 * compressed debug sections; copies of libz truncated, stripped of .eh_frame,
 * with the machine changed, with .eh_frame bytes scrambled; hand-written
 * .debug_frame programs for single DWARF rules, good and bad, and one with
 * every byte value in an opcode's place).  Needs cc, readelf and objcopy.
 * libc is required; the other binaries are skipped with a message when
 * missing.
 *
 * Build: cc -std=c11 -D_GNU_SOURCE -Wall -Wextra -Ibpf -Iuser/native -Iuser/lib \
 *        user/native/unwind_table.c user/lib/errmsg.c tests/unit/test_unwind_table.c \
 *        -lelf -lcmocka -o /tmp/t */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "testutil.h"
#include "unwind_table.h"


/* ---- helpers ----------------------------------------------------------- */

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Address of the function symbol `name` in `readelf -Ws` output, or 0. */
static uint64_t func_addr(const char *readelf_ws, const char *name)
{
	for (const char *line = readelf_ws; line && *line;
	     line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
		char val[32], type[32], sym[64];

		if (sscanf(line, " %*[0-9]: %31s %*s %31s %*s %*s %*s %63s", val, type, sym) == 3 &&
		    strcmp(type, "FUNC") == 0 && strcmp(sym, name) == 0)
			return strtoull(val, NULL, 16);
	}
	return 0;
}

/* Build the table of `path`; fails the test on error.  Also checks the fd's
 * offset is left alone and the table's own invariants. */
static void build_table(const char *path, struct unwind_table *t, double *ms)
{
	char err[512] = "";
	double t0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		fail_msg("open %s: %s", path, strerror(errno));
	assert_int_equal(lseek(fd, 123, SEEK_SET), 123);
	t0 = now_ms();
	if (unwind_table_build(fd, path, t, err, sizeof(err)) != 0) {
		close(fd);
		fail_msg("unwind_table_build(%s): %s", path, err);
	}
	if (ms)
		*ms = now_ms() - t0;
	assert_int_equal(lseek(fd, 0, SEEK_CUR), 123);
	close(fd);
}

/* Rows strictly increasing by pc, kinds in range, unsupported counted
 * right, find() consistent.  (Neighbours may share a rule only where a
 * function starts; the readelf comparison checks rows start at FDEs.) */
static void check_invariants(const char *path, const struct unwind_table *t)
{
	size_t unsup = 0;

	if (t->n > 0)
		assert_non_null(t->rows);
	for (size_t i = 0; i < t->n; i++) {
		const struct unwind_row *r = &t->rows[i];

		if (r->cfa_kind > CFA_RBP_DEREF) /* rbp_kind's 2 bits are all kinds */
			fail_msg("%s: row %zu has CFA kind %u", path, i, (unsigned)r->cfa_kind);
		if (r->cfa_kind == CFA_UNSUPPORTED || r->rbp_kind == RBP_LOST)
			unsup++;
		if (unwind_table_find(t, r->pc) != (long)i)
			fail_msg("%s: find(%#x) != %zu", path, r->pc, i);
		if (i == 0) {
			if (r->pc > 0 && unwind_table_find(t, r->pc - 1) != -1)
				fail_msg("%s: find below the first row is not -1", path);
			continue;
		}
		if (r->pc <= t->rows[i - 1].pc)
			fail_msg("%s: rows %zu and %zu not increasing (%#x, %#x)", path,
				 i - 1, i, t->rows[i - 1].pc, r->pc);
		if (unwind_table_find(t, r->pc - 1) != (long)i - 1)
			fail_msg("%s: find(%#x) != %zu", path, r->pc - 1, i - 1);
	}
	if (unsup != t->unsupported)
		fail_msg("%s: unsupported = %zu, counted %zu", path, t->unsupported, unsup);
	if (t->n > 0 && t->rows[t->n - 1].cfa_kind != CFA_NONE)
		fail_msg("%s: the last row is not a gap", path);
	if (t->n > 0)
		assert_int_equal(unwind_table_find(t, UINT64_MAX), (long)t->n - 1);
}

/* ---- readelf's view ---------------------------------------------------- */

enum { SEC_OTHER, SEC_EH, SEC_DEBUG };

struct fde {
	int sec;
	unsigned long off;     /* entry offset in its section */
	unsigned long cie;     /* its CIE's offset */
	uint64_t lo, hi;
	size_t seq;
	int plt;               /* PLT threshold from the raw dump, or -1 */
	int deref;             /* N of its "CFA = *(rbp - N)" rule (stack realignment),
				* -1 none, -2 several different ones */
	int rbp_at_rbp;        /* N of "rbp saved at rbp + N", INT_MIN none, -1 several */
	uint64_t owned_from;   /* rows below this belong to an earlier FDE */
	bool has_rows;
};

struct cie_row {
	int sec;
	unsigned long off;
	char cfa[32], rbp[32], ra[32];
	bool have;
};

struct truth {
	struct fde *fdes;
	size_t nfdes, capfdes;
	struct cie_row *cies;
	size_t ncies, capcies;
};

static int section_of(const char *line, int cur)
{
	if (strncmp(line, "Contents of the ", 16) != 0)
		return cur;
	if (strstr(line, " .eh_frame section"))
		return SEC_EH;
	if (strstr(line, " .debug_frame section"))
		return SEC_DEBUG;
	return SEC_OTHER;
}

static struct fde *find_fde(struct truth *tr, int sec, unsigned long off)
{
	for (size_t i = tr->nfdes; i > 0; i--)
		if (tr->fdes[i - 1].sec == sec && tr->fdes[i - 1].off == off)
			return &tr->fdes[i - 1];
	return NULL;
}

static struct cie_row *find_cie(struct truth *tr, int sec, unsigned long off)
{
	for (size_t i = 0; i < tr->ncies; i++)
		if (tr->cies[i].sec == sec && tr->cies[i].off == off)
			return &tr->cies[i];
	return NULL;
}

/* FDE headers and PLT expressions from `readelf --debug-dump=frames`. */
static void read_raw_dump(const char *path, struct truth *tr)
{
	char cmd[1024], *out, *line, *save = NULL;
	int sec = SEC_OTHER;
	struct fde *cur = NULL;

	snprintf(cmd, sizeof(cmd), "readelf --debug-dump=frames,no-follow-links '%s' 2>/dev/null", path);
	out = command_output(cmd);
	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		unsigned long off, cie;
		uint64_t lo, hi;
		int n;
		const char *e;

		sec = section_of(line, sec);
		if (sscanf(line, "%lx %*x %*x FDE cie=%lx pc=%" SCNx64 "..%" SCNx64, &off,
			   &cie, &lo, &hi) == 4) {
			if (tr->nfdes == tr->capfdes) {
				tr->capfdes = tr->capfdes ? tr->capfdes * 2 : 1024;
				tr->fdes = realloc(tr->fdes, tr->capfdes * sizeof(*tr->fdes));
				assert_non_null(tr->fdes);
			}
			cur = &tr->fdes[tr->nfdes];
			*cur = (struct fde){ .sec = sec, .off = off, .cie = cie, .lo = lo,
					     .hi = hi, .seq = tr->nfdes, .plt = -1,
					     .deref = -1, .rbp_at_rbp = INT_MIN };
			tr->nfdes++;
			continue;
		}
		if (line[0] != ' ')
			cur = NULL;
		/* the PLT rule, as readelf spells it */
		e = strstr(line, "DW_CFA_def_cfa_expression (DW_OP_breg7 (rsp): 8; "
				 "DW_OP_breg16 (rip): 0; DW_OP_lit15; DW_OP_and; DW_OP_lit");
		if (cur && (e = strstr(line, "DW_CFA_expression: r6 (rbp) (DW_OP_breg6 (rbp): "))) {
			char tail[8] = "";

			if (sscanf(e + strlen("DW_CFA_expression: r6 (rbp) (DW_OP_breg6 (rbp): "),
				   "%d%7[^\n]", &n, tail) == 2 && !strcmp(tail, ")") && n % 8 == 0 &&
			    n / 8 >= UNWIND_RBP_OFF8_MIN && n / 8 <= UNWIND_RBP_OFF8_MAX &&
			    (cur->rbp_at_rbp == INT_MIN || cur->rbp_at_rbp == n))
				cur->rbp_at_rbp = n;
			else
				cur->rbp_at_rbp = -1; /* several or unusual: not checked */
			continue;
		}
		if (cur && (e = strstr(line, "DW_CFA_def_cfa_expression (DW_OP_breg6 (rbp): -"))) {
			char tail[64] = "";

			if (sscanf(e + strlen("DW_CFA_def_cfa_expression (DW_OP_breg6 (rbp): -"),
				   "%d%63[^\n]", &n, tail) == 2 && n > 0 && n <= UNWIND_CFA_OFF_MAX &&
			    strcmp(tail, "; DW_OP_deref)") == 0)
				cur->deref = cur->deref == -1 || cur->deref == n ? n : -2;
			else
				cur->deref = -2;
			continue;
		}
		e = strstr(line, "DW_CFA_def_cfa_expression (DW_OP_breg7 (rsp): 8; "
			   "DW_OP_breg16 (rip): 0; DW_OP_lit15; DW_OP_and; DW_OP_lit");
		if (cur && e) {
			char tail[64] = "";

			e = strstr(e, "DW_OP_and; DW_OP_lit") + strlen("DW_OP_and; DW_OP_lit");
			if (sscanf(e, "%d%63[^\n]", &n, tail) == 2 && n >= 0 && n < 32 &&
			    strcmp(tail, "; DW_OP_ge; DW_OP_lit3; DW_OP_shl; DW_OP_plus)") == 0)
				cur->plt = n;
		}
	}
	free(out);
}

static int cmp_fde(const void *a, const void *b)
{
	const struct fde *x = a, *y = b;

	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

struct cover {
	uint64_t *lo, *hi; /* sorted disjoint intervals */
	size_t n;
};

/* Union of the ranges of the FDEs of section `sec` (or all when -1). */
static void make_cover(const struct truth *tr, int sec, struct cover *c)
{
	struct fde *v = calloc(tr->nfdes + 1, sizeof(*v));
	size_t m = 0;

	assert_non_null(v);
	c->lo = calloc(tr->nfdes + 1, sizeof(uint64_t));
	c->hi = calloc(tr->nfdes + 1, sizeof(uint64_t));
	assert_true(c->lo && c->hi);
	c->n = 0;
	for (size_t i = 0; i < tr->nfdes; i++)
		if ((sec < 0 || tr->fdes[i].sec == sec) && tr->fdes[i].hi > tr->fdes[i].lo &&
		    tr->fdes[i].sec != SEC_OTHER)
			v[m++] = tr->fdes[i];
	qsort(v, m, sizeof(*v), cmp_fde);
	for (size_t i = 0; i < m; i++) {
		if (c->n > 0 && v[i].lo <= c->hi[c->n - 1]) {
			if (v[i].hi > c->hi[c->n - 1])
				c->hi[c->n - 1] = v[i].hi;
			continue;
		}
		c->lo[c->n] = v[i].lo;
		c->hi[c->n] = v[i].hi;
		c->n++;
	}
	free(v);
}

static bool covered(const struct cover *c, uint64_t pc)
{
	size_t lo = 0, hi = c->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (c->hi[mid] <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < c->n && c->lo[lo] <= pc;
}

static void free_cover(struct cover *c)
{
	free(c->lo);
	free(c->hi);
}

/* For each FDE, the first address not covered by an earlier-starting FDE of
 * its section (rows below it are owned by that earlier FDE). */
static void set_ownership(struct truth *tr)
{
	for (int sec = SEC_EH; sec <= SEC_DEBUG; sec++) {
		struct fde **v = calloc(tr->nfdes + 1, sizeof(*v));
		size_t m = 0;
		uint64_t maxend = 0;

		assert_non_null(v);
		for (size_t i = 0; i < tr->nfdes; i++)
			if (tr->fdes[i].sec == sec)
				v[m++] = &tr->fdes[i];
		/* insertion-free: sort pointers by (lo, seq) */
		for (size_t i = 1; i < m; i++) {
			struct fde *x = v[i];
			size_t j = i;

			while (j > 0 && cmp_fde(v[j - 1], x) > 0) {
				v[j] = v[j - 1];
				j--;
			}
			v[j] = x;
		}
		for (size_t i = 0; i < m; i++) {
			v[i]->owned_from = maxend > v[i]->lo ? maxend : v[i]->lo;
			if (v[i]->hi > maxend)
				maxend = v[i]->hi;
		}
		free(v);
	}
}

/* The row readelf's columns stand for.  *strict: whether offsets and rbp
 * must match too (not for CFA_END / CFA_UNSUPPORTED rows). */
static void expect_row(const char *cfa, const char *rbp, const char *ra, int plt, int deref,
		       int rbp_at_rbp, struct unwind_row *want, bool *strict)
{
	long v;
	char c;

	memset(want, 0, sizeof(*want));
	*strict = false;
	if (strcmp(ra, "u") == 0) {
		want->cfa_kind = CFA_END;
		return;
	}
	if (strcmp(ra, "c-8") != 0) {
		want->cfa_kind = CFA_UNSUPPORTED;
		return;
	}
	if (sscanf(cfa, "rsp+%ld%c", &v, &c) == 1 && v >= 0 && v <= UNWIND_CFA_OFF_MAX) {
		want->cfa_kind = CFA_RSP;
		want->cfa_off = (uint32_t)v;
	} else if (sscanf(cfa, "rbp+%ld%c", &v, &c) == 1 && v >= 0 && v <= UNWIND_CFA_OFF_MAX) {
		want->cfa_kind = CFA_RBP;
		want->cfa_off = (uint32_t)v;
	} else if (strcmp(cfa, "exp") == 0 && plt >= 0) {
		want->cfa_kind = CFA_PLT;
		want->cfa_off = plt;
	} else if (strcmp(cfa, "exp") == 0 && deref > 0) {
		want->cfa_kind = CFA_RBP_DEREF;
		want->cfa_off = (uint32_t)deref;
	} else {
		want->cfa_kind = CFA_UNSUPPORTED;
		return;
	}
	*strict = true;
	if (!rbp || strcmp(rbp, "u") == 0 || strcmp(rbp, "s") == 0) {
		want->rbp_kind = RBP_SAME;
	} else if (strcmp(rbp, "exp") == 0 && rbp_at_rbp != INT_MIN && rbp_at_rbp != -1) {
		want->rbp_kind = RBP_AT_RBP;
		want->rbp_off8 = rbp_at_rbp / 8;
	} else if (sscanf(rbp, "c%ld%c", &v, &c) == 1 && v % 8 == 0 &&
		   v / 8 >= UNWIND_RBP_OFF8_MIN && v / 8 <= UNWIND_RBP_OFF8_MAX) {
		want->rbp_kind = RBP_AT_CFA;
		want->rbp_off8 = (int32_t)(v / 8);
	} else {
		want->rbp_kind = RBP_LOST;
	}
}

struct compare_stats {
	size_t rows;        /* readelf rows compared */
	size_t mismatches;
	size_t starts;      /* FDE starts checked */
	size_t gaps;        /* FDE ends followed by a gap checked */
	size_t debug_rows;  /* rows compared from .debug_frame */
};

static const char *kind_name(unsigned k)
{
	static const char *const names[] = { "NONE", "RSP", "RBP", "PLT", "END", "UNSUPPORTED",
					      "RBP_DEREF" };

	return k < 7 ? names[k] : "?";
}

static void report_mismatch(struct compare_stats *st, const char *path, const char *what,
			    uint64_t pc, const struct unwind_row *want, bool strict,
			    const struct unwind_table *t, long idx)
{
	st->mismatches++;
	if (st->mismatches > 8)
		return;
	if (idx < 0) {
		print_message("%s: %s at %#" PRIx64 ": no row (want %s %d rbp %u %d)\n",
			      path, what, pc, kind_name(want->cfa_kind), (int)want->cfa_off,
			      (unsigned)want->rbp_kind, 8 * (int)want->rbp_off8);
		return;
	}
	print_message("%s: %s at %#" PRIx64 ": row pc %#x %s %d rbp %u %d, want %s %d rbp %u %d%s\n",
		      path, what, pc, t->rows[idx].pc, kind_name(t->rows[idx].cfa_kind),
		      (int)t->rows[idx].cfa_off, (unsigned)t->rows[idx].rbp_kind,
		      8 * (int)t->rows[idx].rbp_off8, kind_name(want->cfa_kind), (int)want->cfa_off,
		      (unsigned)want->rbp_kind, 8 * (int)want->rbp_off8, strict ? "" : " (kind only)");
}

static void compare_one(struct compare_stats *st, const char *path, const char *what,
			uint64_t pc, const char *cfa, const char *rbp, const char *ra,
			int plt, int deref, int rbp_at_rbp, const struct unwind_table *t)
{
	struct unwind_row want;
	bool strict;
	long idx = unwind_table_find(t, pc);

	expect_row(cfa, rbp, ra, plt, deref, rbp_at_rbp, &want, &strict);
	st->rows++;
	if (idx < 0) {
		report_mismatch(st, path, what, pc, &want, strict, t, idx);
		return;
	}
	if (t->rows[idx].cfa_kind != want.cfa_kind ||
	    (strict && (t->rows[idx].cfa_off != want.cfa_off ||
			t->rows[idx].rbp_kind != want.rbp_kind ||
			(want.rbp_kind == RBP_AT_CFA && t->rows[idx].rbp_off8 != want.rbp_off8))))
		report_mismatch(st, path, what, pc, &want, strict, t, idx);
}

/* Split a row line into its columns: whitespace-separated tokens, except
 * that readelf names a register column's value like "r10 (r10)", so a token
 * starting with '(' is glued back to the one before. */
static size_t tokens(char *line, char **tok, size_t max)
{
	size_t n = 0;
	char *save = NULL;

	for (char *p = strtok_r(line, " \t", &save); p; p = strtok_r(NULL, " \t", &save)) {
		if (p[0] == '(' && n > 0) {
			p[-1] = ' '; /* strtok_r put the NUL there */
			continue;
		}
		if (n == max)
			break;
		tok[n++] = p;
	}
	return n;
}

static bool is_hex16(const char *s)
{
	return strlen(s) == 16 && strspn(s, "0123456789abcdef") == 16;
}

/* Compare every row readelf's frames-interp dump shows for `path` with the
 * table; `truth` already holds the FDEs from the raw dump. */
static void compare_with_readelf(const char *path, const struct unwind_table *t,
				 struct truth *tr, struct compare_stats *st)
{
	char cmd[1024], *out, *line, *save = NULL;
	int sec = SEC_OTHER;
	struct fde *cur = NULL;
	struct cie_row *curcie = NULL;
	int col_cfa = -1, col_rbp = -1, col_ra = -1;
	struct cover eh_cover, all_cover;

	set_ownership(tr);
	make_cover(tr, SEC_EH, &eh_cover);
	make_cover(tr, -1, &all_cover);

	snprintf(cmd, sizeof(cmd), "readelf --debug-dump=frames-interp,no-follow-links '%s' 2>/dev/null", path);
	out = command_output(cmd);
	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		unsigned long off, cie;
		char *tok[64];
		size_t n;

		sec = section_of(line, sec);
		if (sscanf(line, "%lx %*x %*x FDE cie=%lx", &off, &cie) == 2) {
			cur = find_fde(tr, sec, off);
			if (!cur)
				fail_msg("%s: FDE %#lx of the interpreted dump not in the raw dump",
					 path, off);
			curcie = NULL;
			col_cfa = col_rbp = col_ra = -1;
			continue;
		}
		if (sscanf(line, "%lx %*x %*x CIE", &off) == 1 && strstr(line, " CIE")) {
			if (tr->ncies == tr->capcies) {
				tr->capcies = tr->capcies ? tr->capcies * 2 : 64;
				tr->cies = realloc(tr->cies, tr->capcies * sizeof(*tr->cies));
				assert_non_null(tr->cies);
			}
			curcie = &tr->cies[tr->ncies++];
			*curcie = (struct cie_row){ .sec = sec, .off = off };
			cur = NULL;
			col_cfa = col_rbp = col_ra = -1;
			continue;
		}
		if (strncmp(line, "   LOC ", 7) == 0) {
			n = tokens(line, tok, 64);
			for (size_t i = 0; i < n; i++) {
				if (strcmp(tok[i], "CFA") == 0)
					col_cfa = (int)i;
				else if (strcmp(tok[i], "rbp") == 0)
					col_rbp = (int)i;
				else if (strcmp(tok[i], "ra") == 0)
					col_ra = (int)i;
			}
			continue;
		}
		n = tokens(line, tok, 64);
		if (n < 2 || !is_hex16(tok[0]) || col_cfa < 0 || col_ra < 0 ||
		    (size_t)col_cfa >= n || (size_t)col_ra >= n ||
		    (col_rbp >= 0 && (size_t)col_rbp >= n))
			continue;
		if (curcie) {
			if (!curcie->have) {
				snprintf(curcie->cfa, sizeof(curcie->cfa), "%s", tok[col_cfa]);
				snprintf(curcie->rbp, sizeof(curcie->rbp), "%s",
					 col_rbp >= 0 ? tok[col_rbp] : "");
				snprintf(curcie->ra, sizeof(curcie->ra), "%s", tok[col_ra]);
				curcie->have = true;
			}
			continue;
		}
		if (!cur || cur->sec == SEC_OTHER)
			continue;
		{
			uint64_t pc = strtoull(tok[0], NULL, 16);

			cur->has_rows = true;
			if (pc < cur->lo || pc >= cur->hi || cur->hi > UINT32_MAX ||
			    pc < cur->owned_from)
				continue;
			if (cur->sec == SEC_DEBUG && covered(&eh_cover, pc))
				continue;
			if (cur->sec == SEC_DEBUG)
				st->debug_rows++;
			compare_one(st, path, cur->sec == SEC_EH ? ".eh_frame row" : ".debug_frame row",
				    pc, tok[col_cfa], col_rbp >= 0 ? tok[col_rbp] : NULL,
				    tok[col_ra], cur->plt, cur->deref, cur->rbp_at_rbp, t);
		}
	}
	free(out);

	/* FDEs without rows follow their CIE; every FDE start is covered; every
	 * FDE end followed by nothing is a gap */
	for (size_t i = 0; i < tr->nfdes; i++) {
		struct fde *f = &tr->fdes[i];
		long idx;

		if (f->sec == SEC_OTHER || f->hi <= f->lo || f->hi > UINT32_MAX)
			continue;
		if (!f->has_rows && f->lo >= f->owned_from &&
		    !(f->sec == SEC_DEBUG && covered(&eh_cover, f->lo))) {
			struct cie_row *c = find_cie(tr, f->sec, f->cie);

			if (!c || !c->have)
				fail_msg("%s: no CIE row for FDE %#lx (cie %#lx)", path, f->off, f->cie);
			compare_one(st, path, "CIE rule of FDE", f->lo, c->cfa,
				    c->rbp[0] ? c->rbp : NULL, c->ra, f->plt, f->deref, f->rbp_at_rbp, t);
		}
		idx = unwind_table_find(t, f->lo);
		st->starts++;
		if (idx < 0 || t->rows[idx].cfa_kind == CFA_NONE) {
			struct unwind_row want = { .cfa_kind = CFA_RSP };

			report_mismatch(st, path, "FDE start not covered", f->lo, &want, false, t, idx);
		} else if (f->lo >= f->owned_from && t->rows[idx].pc != f->lo &&
			   !(f->sec == SEC_DEBUG && covered(&eh_cover, f->lo))) {
			/* a row never spans two functions */
			struct unwind_row want = t->rows[idx];

			want.pc = (uint32_t)f->lo;
			report_mismatch(st, path, "no row starts at the FDE", f->lo, &want, false, t,
					idx);
		}
		if (!covered(&all_cover, f->hi)) {
			struct unwind_row want = { .cfa_kind = CFA_NONE };

			idx = unwind_table_find(t, f->hi);
			st->gaps++;
			if (idx < 0 || t->rows[idx].cfa_kind != CFA_NONE || t->rows[idx].pc != f->hi)
				report_mismatch(st, path, "gap after FDE", f->hi, &want, false, t, idx);
		}
	}
	free_cover(&eh_cover);
	free_cover(&all_cover);
}

static void free_truth(struct truth *tr)
{
	free(tr->fdes);
	free(tr->cies);
	memset(tr, 0, sizeof(*tr));
}

/* Build the table of `path`, compare with readelf, fail on any mismatch. */
static void check_against_readelf(const char *path, struct compare_stats *st_out,
				  const struct unwind_table *given)
{
	struct unwind_table t = { 0 };
	struct truth tr = { 0 };
	struct compare_stats st = { 0 };
	size_t fde_in_range = 0;
	double ms = 0;

	if (given)
		t = *given;
	else
		build_table(path, &t, &ms);
	check_invariants(path, &t);
	read_raw_dump(path, &tr);
	compare_with_readelf(path, &t, &tr, &st);
	for (size_t i = 0; i < tr.nfdes; i++)
		if (tr.fdes[i].sec != SEC_OTHER)
			fde_in_range++;
	print_message("%s: %zu rows (%zu unsupported), %zu FDEs (readelf %zu), %zu skipped, "
		      "built in %.1f ms; compared %zu readelf rows (%zu from .debug_frame), "
		      "%zu FDE starts, %zu gaps: %zu mismatches\n",
		      path, t.n, t.unsupported, t.fdes, fde_in_range, t.skipped, ms, st.rows,
		      st.debug_rows, st.starts, st.gaps, st.mismatches);
	if (t.fdes != fde_in_range)
		fail_msg("%s: %zu FDEs read, readelf shows %zu", path, t.fdes, fde_in_range);
	if (st.rows == 0)
		fail_msg("%s: readelf showed no rows to compare", path);
	if (st.mismatches)
		fail_msg("%s: %zu of %zu readelf rows/checks disagree with the table", path,
			 st.mismatches, st.rows + st.starts + st.gaps);
	if (st_out)
		*st_out = st;
	free_truth(&tr);
	if (!given)
		unwind_table_free(&t);
}

/* ---- real binaries ----------------------------------------------------- */

static void test_libc(void **state)
{
	(void)state;
	require_file(LIBC);
	check_against_readelf(LIBC, NULL, NULL);
}

static void check_optional(const char *path)
{
	if (access(path, R_OK) != 0) {
		print_message("skipping %s: %s\n", path, strerror(errno));
		skip();
	}
	check_against_readelf(path, NULL, NULL);
}

static void test_python311(void **state)
{
	(void)state;
	check_optional(PY311);
}

static void test_libpython312(void **state)
{
	(void)state;
	check_optional(LIBPY312);
}

static void test_libz(void **state)
{
	(void)state;
	check_optional(LIBZ);
}

/* Debian's PyTorch (python3-torch, installed by scripts/setup --test-deps):
 * 220000 FDEs, 1.4 million rows, the size class the tables must handle. */
static void test_libtorch_cpu(void **state)
{
	(void)state;
	check_optional(LIBTORCH_CPU);
}

/* A laid-out table's page-index lookup finds the row the plain search
 * finds: at every row's pc, the byte before it, the byte after it, at page
 * edges and below/above the table. */
static void check_layout(const struct unwind_table *t)
{
	size_t len = 0;
	struct unwind_row *v = unwind_table_layout(t, 0x1234, &len);
	uint32_t shift, npages;

	assert_non_null(v);
	assert_int_equal(v[0].pc, 0x1234);
	assert_int_equal(v[0].nrows, t->n);
	assert_memory_equal(v + 1, t->rows, t->n * sizeof(*v));
	shift = v[1 + t->n].nrows >> 24;
	npages = v[1 + t->n].nrows & UNWIND_INDEX_PAGES_MAX;
	assert_true(shift >= UNWIND_INDEX_SHIFT_MIN);
	assert_true(npages <= (t->n > 64 ? t->n : 64)); /* at most half the rows' bytes */
	assert_int_equal(len, 2 + t->n + (npages + 2) / 2);
	for (size_t i = 0; i < t->n; i++) {
		uint32_t pcs[5] = { t->rows[i].pc, t->rows[i].pc - 1, t->rows[i].pc + 1,
				    t->rows[i].pc & ~((1u << shift) - 1),
				    t->rows[i].pc | ((1u << shift) - 1) };

		for (int j = 0; j < 5; j++) {
			long want = unwind_table_find(t, pcs[j]);
			const struct unwind_row *got = unwind_layout_find(v, pcs[j]);

			if (want < 0 ? got != NULL : got != &v[1 + want])
				fail_msg("pc %#x: row %ld, index lookup gave %ld", pcs[j], want,
					 got ? (long)(got - v) - 1 : -1L);
		}
	}
	assert_null(unwind_layout_find(v, 0));
	assert_true(unwind_layout_find(v, UINT32_MAX) == &v[t->n]);
	free(v);
}

static void test_page_index(void **state)
{
	struct unwind_table t = { 0 };
	struct unwind_row sparse[200];

	(void)state;
	require_file(LIBC);
	build_table(LIBC, &t, NULL);
	check_layout(&t);
	unwind_table_free(&t);
	if (access(LIBTORCH_CPU, R_OK) == 0) {
		build_table(LIBTORCH_CPU, &t, NULL);
		check_layout(&t);
		unwind_table_free(&t);
	} else {
		print_message("page index: %s not installed, libc only\n", LIBTORCH_CPU);
	}
	/* sparse: rows spread over 3 GiB, so the pages grow past 4 KiB */
	memset(sparse, 0, sizeof(sparse));
	for (uint32_t i = 0; i < 200; i++) {
		sparse[i].pc = 0x1000 + i * 0xf00000u + (i % 3) * 7;
		sparse[i].cfa_kind = i % 2 ? CFA_RSP : CFA_NONE;
		sparse[i].cfa_off = 8 + i;
	}
	t.rows = sparse;
	t.n = 200;
	check_layout(&t);
	t.n = 1;
	check_layout(&t);
}

/* The PLT stubs of libz are CFA_PLT rows, and the table has the documented
 * shape for them (PLT0 pushes, then the expression). */
/* Every entry of the PLT sections of `path` (readelf -SW: .plt and
 * .plt.sec in 16-byte entries, .plt.got in its entsize) starts a row of
 * t, with the rule of the row before it: a leaf frame in a stub is keyed
 * by that stub, not by the first one.  Returns the entries checked. */
static size_t expect_row_per_stub(const char *path, const struct unwind_table *t)
{
	char cmd[512], line[512], name[64];
	unsigned long long addr, off, size, es;
	size_t checked = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "readelf -SW '%s'", path);
	assert_non_null(p = popen(cmd, "r"));
	while (fgets(line, sizeof(line), p)) {
		char *b = strchr(line, ']');

		if (!b || sscanf(b + 1, " %63s PROGBITS %llx %llx %llx %llx", name, &addr, &off, &size,
				 &es) != 5 ||
		    (strcmp(name, ".plt") && strcmp(name, ".plt.sec") && strcmp(name, ".plt.got")))
			continue;
		if (es != 8 && es != 16)
			es = strcmp(name, ".plt.got") ? 16 : 8;
		for (unsigned long long a = addr; a < addr + size; a += es) {
			long i = unwind_table_find(t, a);

			if (i < 0 || t->rows[i].pc != a)
				fail_msg("%s: %s entry %#llx starts no row (row %ld at %#x)", path, name,
					 a, i, i < 0 ? 0 : t->rows[i].pc);
			checked++;
		}
	}
	pclose(p);
	return checked;
}

static void test_plt_rows(void **state)
{
	static const char *const bins[] = { LIBZ, LIBPY312, PY311 };
	size_t plt = 0, stubs = 0;

	(void)state;
	if (access(LIBZ, R_OK) != 0)
		skip();
	for (size_t k = 0; k < sizeof(bins) / sizeof(bins[0]); k++) {
		struct unwind_table t = { 0 };

		if (access(bins[k], R_OK) != 0)
			continue;
		build_table(bins[k], &t, NULL);
		for (size_t i = 0; i < t.n; i++)
			if (t.rows[i].cfa_kind == CFA_PLT) {
				plt++;
				assert_true(t.rows[i].cfa_off >= 0 && t.rows[i].cfa_off < 16);
			}
		stubs += expect_row_per_stub(bins[k], &t);
		unwind_table_free(&t);
	}
	printf("  %zu PLT entries each start a row\n", stubs);
	if (plt == 0)
		fail_msg("%s: no CFA_PLT row", LIBZ);
	assert_true(stubs > 100);
}

/* ---- edge cases -------------------------------------------------------- */

struct tmpdir {
	char path[64];
};

static int tmpdir_setup(void **state)
{
	struct tmpdir *d = calloc(1, sizeof(*d));

	if (!d)
		return -1;
	snprintf(d->path, sizeof(d->path), "/tmp/pyperf-unwind-XXXXXX");
	if (!mkdtemp(d->path)) {
		free(d);
		return -1;
	}
	*state = d;
	return 0;
}

static int tmpdir_teardown(void **state)
{
	struct tmpdir *d = *state;
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", d->path);
	if (system(cmd) != 0)
		return -1;
	free(d);
	return 0;
}

/* unwind_table_build on `path`: its return value, message in err. */
static int try_build(const char *path, struct unwind_table *t, char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	int r;

	if (fd < 0)
		fail_msg("open %s: %s", path, strerror(errno));
	err[0] = '\0';
	r = unwind_table_build(fd, path, t, err, errlen);
	close(fd);
	return r;
}

static void write_file(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "we");

	if (!f)
		fail_msg("create %s: %s", path, strerror(errno));
	if (len && fwrite(data, 1, len, f) != len)
		fail_msg("write %s", path);
	fclose(f);
}

/* Assemble `src` into `exe` with cc. */
static void assemble(const char *spath, const char *src, size_t len, const char *exe)
{
	char cmd[512];

	write_file(spath, src, len);
	snprintf(cmd, sizeof(cmd), "cc '%s' -o '%s' 2>&1", spath, exe);
	run(cmd);
}

static void *read_whole(const char *path, size_t *len)
{
	FILE *f = fopen(path, "re");
	struct stat st;
	void *buf;

	if (!f || fstat(fileno(f), &st) != 0)
		fail_msg("read %s: %s", path, strerror(errno));
	buf = malloc((size_t)st.st_size + 1);
	assert_non_null(buf);
	if (fread(buf, 1, (size_t)st.st_size, f) != (size_t)st.st_size)
		fail_msg("short read of %s", path);
	fclose(f);
	*len = (size_t)st.st_size;
	return buf;
}

static void expect_error(const char *path, const char *what)
{
	struct unwind_table t;
	char err[512];

	if (try_build(path, &t, err, sizeof(err)) != -1)
		fail_msg("%s: expected an error", path);
	if (!strstr(err, path) || !strstr(err, what))
		fail_msg("message \"%s\" should name %s and say \"%s\"", err, path, what);
	assert_int_equal(t.n, 0);
	assert_null(t.rows);
	unwind_table_free(&t);
}

static void test_not_elf(void **state)
{
	struct tmpdir *d = *state;
	char path[128];

	snprintf(path, sizeof(path), "%s/text", d->path);
	write_file(path, "just some text, not an ELF file\n", 33);
	expect_error(path, "not an ELF file");
	snprintf(path, sizeof(path), "%s/empty", d->path);
	write_file(path, "", 0);
	expect_error(path, "ELF");
}

static void test_not_x86_64(void **state)
{
	struct tmpdir *d = *state;
	char path[128];
	unsigned char *buf;
	size_t len;

	(void)state;
	require_file(LIBC);
	buf = read_whole(LIBC, &len);
	assert_true(len > 64);
	buf[18] = 183; /* e_machine = EM_AARCH64 */
	buf[19] = 0;
	snprintf(path, sizeof(path), "%s/arm", d->path);
	write_file(path, buf, len);
	free(buf);
	expect_error(path, "x86-64");
}

static void test_truncated(void **state)
{
	struct tmpdir *d = *state;
	const char *src = access(LIBZ, R_OK) == 0 ? LIBZ : LIBC;
	size_t cuts[] = { 4096, 64, 1 };
	unsigned char *buf;
	size_t len;

	require_file(src);
	buf = read_whole(src, &len);
	for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
		struct unwind_table t;
		char path[128], err[512];
		int r;

		snprintf(path, sizeof(path), "%s/trunc%zu", d->path, cuts[i]);
		write_file(path, buf, cuts[i] < len ? cuts[i] : len);
		r = try_build(path, &t, err, sizeof(err));
		print_message("%s (first %zu bytes of %s): %d, n = %zu %s\n", path, cuts[i],
			      src, r, t.n, err);
		if (r == 0)
			assert_int_equal(t.n, 0);
		else if (!strstr(err, path))
			fail_msg("message \"%s\" does not name %s", err, path);
		unwind_table_free(&t);
	}
	free(buf);
}

/* Copies of libz with bytes of .eh_frame / .eh_frame_hdr scrambled: the
 * build may reject or accept them, but must not crash, and what it returns
 * must still be a well-formed table. */
static void test_scrambled_eh_frame(void **state)
{
	struct tmpdir *d = *state;
	const char *src = access(LIBZ, R_OK) == 0 ? LIBZ : LIBC;
	char cmd[512], *out, path[128];
	unsigned long off = 0, size = 0, hoff = 0, hsize = 0;
	unsigned char *orig, *buf;
	size_t len, ok = 0;
	unsigned seed = 12345;

	require_file(src);
	snprintf(cmd, sizeof(cmd), "readelf -SW '%s'", src);
	out = command_output(cmd);
	{
		char *p = strstr(out, " .eh_frame ");
		char *h = strstr(out, " .eh_frame_hdr ");

		if (!p || sscanf(p, " .eh_frame PROGBITS %*x %lx %lx", &off, &size) != 2)
			fail_msg("no .eh_frame in readelf -S %s", src);
		if (h)
			sscanf(h, " .eh_frame_hdr PROGBITS %*x %lx %lx", &hoff, &hsize);
	}
	free(out);
	orig = read_whole(src, &len);
	assert_true(off + size <= len && hoff + hsize <= len);
	buf = malloc(len);
	assert_non_null(buf);
	snprintf(path, sizeof(path), "%s/scrambled", d->path);
	for (int round = 0; round < 200; round++) {
		struct unwind_table t;
		char err[512];
		int flips = 1 + round % 16;

		memcpy(buf, orig, len);
		for (int k = 0; k < flips; k++) {
			unsigned long at;

			seed = seed * 1103515245u + 12345u;
			if (hsize && (seed >> 8) % 4 == 0)
				at = hoff + (seed >> 12) % hsize;
			else
				at = off + (seed >> 12) % size;
			seed = seed * 1103515245u + 12345u;
			buf[at] = round % 3 == 0 ? 0xff : (unsigned char)(seed >> 16);
		}
		write_file(path, buf, len);
		if (try_build(path, &t, err, sizeof(err)) == 0) {
			ok++;
			check_invariants(path, &t);
		}
		unwind_table_free(&t);
	}
	print_message("%s: %zu of 200 scrambled copies built\n", src, ok);
	free(buf);
	free(orig);
}

/* A copy of libz without .eh_frame (and its header) has no CFI left. */
static void test_no_eh_frame(void **state)
{
	struct tmpdir *d = *state;
	char cmd[512], path[128], err[512];
	struct unwind_table t;

	(void)state;
	if (access(LIBZ, R_OK) != 0)
		skip();
	snprintf(path, sizeof(path), "%s/noeh", d->path);
	snprintf(cmd, sizeof(cmd),
		 "objcopy --remove-section .eh_frame --remove-section .eh_frame_hdr '%s' '%s'",
		 LIBZ, path);
	run(cmd);
	if (try_build(path, &t, err, sizeof(err)) != 0)
		fail_msg("%s: %s", path, err);
	assert_int_equal(t.n, 0);
	assert_int_equal(t.fdes, 0);
	unwind_table_free(&t);
}

/* `main` of a program whose own code has CFI only in .debug_frame
 * (-fno-asynchronous-unwind-tables: the C runtime's start code still brings
 * its .eh_frame), optionally with compressed debug sections. */
static void check_debug_frame_program(struct tmpdir *d, const char *name, const char *flags)
{
	static const char src[] =
		"#include <stdio.h>\n"
		"static int __attribute__((noinline)) leaf(int x)\n"
		"{ volatile int a[100]; a[x % 100] = x; return a[(x + 1) % 100] + printf(\"%d\\n\", x); }\n"
		"int main(int argc, char **argv) { (void)argv; return leaf(argc) + leaf(argc + 1); }\n";
	char cpath[160], exe[160], cmd[1024], *out;
	struct unwind_table t = { 0 };
	struct compare_stats st;
	uint64_t main_addr = 0;
	long idx;

	snprintf(cpath, sizeof(cpath), "%s/prog.c", d->path);
	snprintf(exe, sizeof(exe), "%s/%s", d->path, name);
	write_file(cpath, src, sizeof(src) - 1);
	snprintf(cmd, sizeof(cmd),
		 "cc %s -fno-asynchronous-unwind-tables -fno-unwind-tables '%s' -o '%s' 2>&1",
		 flags, cpath, exe);
	run(cmd);

	snprintf(cmd, sizeof(cmd), "readelf -SW '%s'", exe);
	out = command_output(cmd);
	if (!strstr(out, " .debug_frame "))
		fail_msg("%s: the compiler emitted no .debug_frame", exe);
	free(out);
	snprintf(cmd, sizeof(cmd), "readelf -Ws '%s'", exe);
	out = command_output(cmd);
	main_addr = func_addr(out, "main");
	free(out);
	if (main_addr == 0)
		fail_msg("%s: no main in readelf -Ws", exe);

	build_table(exe, &t, NULL);
	idx = unwind_table_find(&t, main_addr);
	if (idx < 0 || t.rows[idx].cfa_kind != CFA_RSP || t.rows[idx].cfa_off != 8)
		fail_msg("%s: main at %#" PRIx64 " not covered by an rsp+8 row", exe, main_addr);
	check_against_readelf(exe, &st, &t);
	if (st.debug_rows == 0)
		fail_msg("%s: no .debug_frame row was compared", exe);
	unwind_table_free(&t);
}

static void test_debug_frame_only(void **state)
{
	check_debug_frame_program(*state, "prog", "-g -O1");
}

static void test_debug_frame_compressed(void **state)
{
	struct tmpdir *d = *state;
	char exe[160], cmd[512], *out;

	check_debug_frame_program(d, "progz", "-g -O0 -gz=zlib");
	snprintf(exe, sizeof(exe), "%s/progz", d->path);
	snprintf(cmd, sizeof(cmd), "readelf -SW '%s' | grep ' .debug_frame '", exe);
	out = command_output(cmd);
	if (!strstr(out, " C "))
		print_message("note: %s: .debug_frame is not compressed here\n", exe);
	free(out);
}

/* .eh_frame wins where both sections describe a function, even when they
 * disagree.  An assembly file gives `main` .eh_frame CFI (CFA rsp+8 all
 * along) and a hand-written .debug_frame FDE saying rsp+40; `helper` has
 * only a .debug_frame FDE (push rbp; mov rsp,rbp; pop rbp; ret). */
static void test_eh_frame_wins(void **state)
{
	static const char src[] =
		"\t.text\n"
		"\t.globl main\n\t.type main, @function\n"
		"main:\n\t.cfi_startproc\n\txorl %eax, %eax\n\tcall helper\n"
		"\txorl %eax, %eax\n\tret\n\t.cfi_endproc\nmain_end:\n\t.size main, .-main\n"
		"\t.globl helper\n\t.type helper, @function\n"
		"helper:\n\tpushq %rbp\n\tmovq %rsp, %rbp\n\tpopq %rbp\n\tret\n"
		"helper_end:\n\t.size helper, .-helper\n"
		"\t.section .debug_frame,\"\",@progbits\n"
		"cie:\n\t.long cie_end - cie_start\ncie_start:\n"
		"\t.long 0xffffffff\n\t.byte 1\n\t.string \"\"\n\t.uleb128 1\n\t.sleb128 -8\n"
		"\t.byte 16\n"
		"\t.byte 0x0c, 7, 8\n"          /* DW_CFA_def_cfa rsp, 8 */
		"\t.byte 0x90, 1\n"             /* DW_CFA_offset rip, cfa-8 */
		"\t.balign 8\ncie_end:\n"
		"\t.long fde1_end - fde1_start\nfde1_start:\n"
		"\t.long cie\n\t.quad main\n\t.quad main_end - main\n"
		"\t.byte 0x0e, 40\n"            /* DW_CFA_def_cfa_offset 40 */
		"\t.balign 8\nfde1_end:\n"
		"\t.long fde2_end - fde2_start\nfde2_start:\n"
		"\t.long cie\n\t.quad helper\n\t.quad helper_end - helper\n"
		"\t.byte 0x41, 0x0e, 16, 0x86, 2\n" /* +1: cfa rsp+16, rbp at cfa-16 */
		"\t.byte 0x43, 0x0d, 6\n"           /* +3: cfa rbp+16 */
		"\t.byte 0x41, 0x0c, 7, 8\n"        /* +1: cfa rsp+8 */
		"\t.balign 8\nfde2_end:\n"
		"\t.section .note.GNU-stack,\"\",@progbits\n";
	struct tmpdir *d = *state;
	char spath[160], exe[160], cmd[512], *out;
	uint64_t main_addr = 0, helper_addr = 0;
	struct unwind_table t = { 0 };
	struct compare_stats st;
	struct {
		uint64_t off;
		struct unwind_row want;
	} checks[] = {
		{ 0, { .cfa_kind = CFA_RSP, .cfa_off = 8, .rbp_kind = RBP_SAME } },
		{ 1, { .cfa_kind = CFA_RSP, .cfa_off = 16, .rbp_kind = RBP_AT_CFA, .rbp_off8 = -2 } },
		{ 4, { .cfa_kind = CFA_RBP, .cfa_off = 16, .rbp_kind = RBP_AT_CFA, .rbp_off8 = -2 } },
		{ 5, { .cfa_kind = CFA_RSP, .cfa_off = 8, .rbp_kind = RBP_AT_CFA, .rbp_off8 = -2 } },
	};

	snprintf(spath, sizeof(spath), "%s/hand.s", d->path);
	snprintf(exe, sizeof(exe), "%s/hand", d->path);
	assemble(spath, src, sizeof(src) - 1, exe);
	snprintf(cmd, sizeof(cmd), "readelf -Ws '%s'", exe);
	out = command_output(cmd);
	main_addr = func_addr(out, "main");
	helper_addr = func_addr(out, "helper");
	free(out);
	if (!main_addr || !helper_addr)
		fail_msg("%s: main or helper missing from readelf -Ws", exe);

	build_table(exe, &t, NULL);
	for (uint64_t pc = main_addr; pc < helper_addr; pc++) {
		long i = unwind_table_find(&t, pc);

		if (i < 0 || t.rows[i].cfa_kind != CFA_RSP || t.rows[i].cfa_off != 8)
			fail_msg("%s: main+%" PRIu64 " should keep .eh_frame's rsp+8",
				 exe, pc - main_addr);
	}
	for (size_t k = 0; k < sizeof(checks) / sizeof(checks[0]); k++) {
		long i = unwind_table_find(&t, helper_addr + checks[k].off);
		const struct unwind_row *w = &checks[k].want;

		if (i < 0 || t.rows[i].cfa_kind != w->cfa_kind || t.rows[i].cfa_off != w->cfa_off ||
		    t.rows[i].rbp_kind != w->rbp_kind || t.rows[i].rbp_off8 != w->rbp_off8)
			fail_msg("%s: wrong row at helper+%" PRIu64, exe, checks[k].off);
	}
	{
		long i = unwind_table_find(&t, helper_addr + 6);

		if (i < 0 || t.rows[i].cfa_kind != CFA_NONE || t.rows[i].pc != helper_addr + 6)
			fail_msg("%s: no gap row after helper", exe);
	}
	check_against_readelf(exe, &st, &t);
	unwind_table_free(&t);
}

/* ---- CFA programs, hand-written ---------------------------------------- */

/* One hand-written .debug_frame FDE (for a 32-byte function cfaN) and the
 * rows it must give: each `at` is a row start (offset in the function),
 * the row holding until the next one listed or the end. */
struct cfa_case {
	const char *what;
	const char *cie;              /* "cie", or "badcie" (advance_loc inside) */
	const char *insns;            /* assembler lines; "%s" is the function */
	size_t nrows;
	struct {
		unsigned at;
		struct unwind_row want;
	} rows[6];
};

#define R_RSP(n) { .cfa_kind = CFA_RSP, .cfa_off = (n), .rbp_kind = RBP_SAME }
#define R_RSP_RBP(n, o8) { .cfa_kind = CFA_RSP, .cfa_off = (n), .rbp_kind = RBP_AT_CFA, \
			   .rbp_off8 = (o8) }
#define R_UNSUP { .cfa_kind = CFA_UNSUPPORTED, .rbp_kind = RBP_SAME }

/* 64 remember_states, then the CFA moves, then 64 restore_states */
#define REMEMBER_64 ".fill 64, 1, 0x0a\n"
#define RESTORE_64 ".fill 64, 1, 0x0b\n"

static const struct cfa_case cfa_cases[] = {
	{ "remember_state / restore_state bring the rules back, not the location", "cie",
	  ".byte 0x41, 0x0e, 16, 0x86, 2\n"   /* +1: cfa rsp+16, rbp at cfa-16 */
	  ".byte 0x41, 0x0a, 0x0d, 6\n"       /* +1: remember; cfa rbp+16 */
	  ".byte 0x41, 0x0b\n"                /* +1: restore */
	  ".byte 0x41, 0x0e, 8\n",            /* +1: cfa rsp+8 */
	  5, { { 0, R_RSP(8) }, { 1, R_RSP_RBP(16, -2) },
	       { 2, { .cfa_kind = CFA_RBP, .cfa_off = 16, .rbp_kind = RBP_AT_CFA, .rbp_off8 = -2 } },
	       { 3, R_RSP_RBP(16, -2) }, { 4, R_RSP_RBP(8, -2) } } },
	{ "an unknown opcode ends the FDE's rows with one unsupported row", "cie",
	  ".byte 0x41, 0x0e, 16, 0x41\n"
	  ".byte 0x2e, 0x8a, 0xcf, 0x95, 0x9a, 0x02\n"  /* args_size: the marker */
	  ".byte 0x3c, 0x0e, 24, 0x41, 0x0e, 8\n",
	  3, { { 0, R_RSP(8) }, { 1, R_RSP(16) }, { 2, R_UNSUP } } },
	{ "restore_state with nothing remembered is bad CFI", "cie",
	  ".byte 0x42, 0x0b, 0x41, 0x0e, 16\n",
	  2, { { 0, R_RSP(8) }, { 2, R_UNSUP } } },
	{ "remember_state 64 deep is followed", "cie",
	  ".byte 0x41\n" REMEMBER_64 ".byte 0x0e, 16, 0x41\n" RESTORE_64 ".byte 0x41\n",
	  3, { { 0, R_RSP(8) }, { 1, R_RSP(16) }, { 2, R_RSP(8) } } },
	{ "remember_state 65 deep is bad CFI", "cie",
	  ".byte 0x41\n" REMEMBER_64 ".byte 0x0a, 0x0e, 16, 0x41\n",
	  2, { { 0, R_RSP(8) }, { 1, R_UNSUP } } },
	{ "def_cfa_offset on an expression CFA leaves no CFA until def_cfa", "cie",
	  ".byte 0x41, 0x0f, 2, 0x77, 16\n"   /* +1: cfa = breg7 16 */
	  ".byte 0x41, 0x0e, 24\n"            /* +1: offset of what? */
	  ".byte 0x41, 0x0c, 7, 8\n",         /* +1: cfa rsp+8 */
	  4, { { 0, R_RSP(8) }, { 1, R_RSP(16) }, { 2, R_UNSUP }, { 3, R_RSP(8) } } },
	{ "advance_loc among a CIE's instructions spoils its FDEs", "badcie",
	  ".byte 0x41, 0x0e, 16\n",
	  1, { { 0, R_UNSUP } } },
	{ "set_loc backwards changes the row it is in", "cie",
	  ".byte 0x44, 0x0e, 16, 0x01\n.quad %s + 2\n"
	  ".byte 0x0e, 24, 0x01\n.quad %s + 8\n.byte 0x0e, 8\n",
	  3, { { 0, R_RSP(8) }, { 4, R_RSP(24) }, { 8, R_RSP(8) } } },
	{ "rbp: val_offset is lost, an expression breg6 N is at rbp + N", "cie",
	  ".byte 0x41, 0x14, 6, 2\n"                  /* +1: rbp = cfa-16 */
	  ".byte 0x41, 0x10, 6, 2, 0x76, 0x70\n"      /* +1: rbp at breg6 -16 */
	  ".byte 0x41, 0x07, 16\n",                   /* +1: return address undefined */
	  4, { { 0, R_RSP(8) }, { 1, { .cfa_kind = CFA_RSP, .cfa_off = 8, .rbp_kind = RBP_LOST } },
	       { 2, { .cfa_kind = CFA_RSP, .cfa_off = 8, .rbp_kind = RBP_AT_RBP, .rbp_off8 = -2 } },
	       { 3, { .cfa_kind = CFA_END } } } },
	{ "stack realignment: CFA = *(rbp - 8)", "cie",
	  ".byte 0x41, 0x0f, 3, 0x76, 0x78, 0x06\n",
	  2, { { 0, R_RSP(8) }, { 1, { .cfa_kind = CFA_RBP_DEREF, .cfa_off = 8 } } } },
	{ "an operand cut off by the end of its FDE is bad CFI", "cie",
	  ".byte 0x41, 0x0e, 0x80\n",                 /* last entry: no padding */
	  2, { { 0, R_RSP(8) }, { 1, R_UNSUP } } },
};

#define NCASES (sizeof(cfa_cases) / sizeof(cfa_cases[0]))

static const char cfa_cie_text[] =
	"\t.section .debug_frame,\"\",@progbits\n"
	"cie:\t.long cie_end - cie_start\ncie_start:\n"
	"\t.long 0xffffffff\n\t.byte 1\n\t.string \"\"\n\t.uleb128 1\n\t.sleb128 -8\n\t.byte 16\n"
	"\t.byte 0x0c, 7, 8, 0x90, 1\n"               /* rsp+8, rip at cfa-8 */
	"cie_end:\n"
	"badcie:\t.long badcie_end - badcie_start\nbadcie_start:\n"
	"\t.long 0xffffffff\n\t.byte 1\n\t.string \"\"\n\t.uleb128 1\n\t.sleb128 -8\n\t.byte 16\n"
	"\t.byte 0x0c, 7, 8, 0x90, 1, 0x41\n"         /* ... and advance_loc 1 */
	"badcie_end:\n";

/* Assemble the functions cfa0.. and their hand-written .debug_frame into
 * `exe`; the functions' addresses into addr[]. */
static void build_cfa_program(struct tmpdir *d, char *exe, size_t exelen, uint64_t *addr)
{
	size_t cap = 1 << 16, len = 0;
	char *src = malloc(cap), spath[160], cmd[512], *out;

	assert_non_null(src);
	len += snprintf(src + len, cap - len,
			"\t.text\n\t.globl main\n\t.type main, @function\n"
			"main:\n\txorl %%eax, %%eax\n\tret\n\t.size main, .-main\n");
	for (size_t i = 0; i < NCASES; i++)
		len += snprintf(src + len, cap - len,
				"\t.balign 32\n\t.globl cfa%zu\n\t.type cfa%zu, @function\n"
				"cfa%zu:\n\t.fill 31, 1, 0x90\n\tret\n\t.size cfa%zu, 32\n",
				i, i, i, i);
	len += snprintf(src + len, cap - len, "%s", cfa_cie_text);
	for (size_t i = 0; i < NCASES; i++) {
		char fn[16], insns[1024];

		snprintf(fn, sizeof(fn), "cfa%zu", i);
		snprintf(insns, sizeof(insns), cfa_cases[i].insns, fn, fn);
		len += snprintf(src + len, cap - len,
				"\t.long fde%zu_end - fde%zu_start\nfde%zu_start:\n"
				"\t.long %s\n\t.quad %s\n\t.quad 32\n%sfde%zu_end:\n",
				i, i, i, cfa_cases[i].cie, fn, insns, i);
	}
	len += snprintf(src + len, cap - len, "\t.section .note.GNU-stack,\"\",@progbits\n");
	assert_true(len < cap);
	snprintf(spath, sizeof(spath), "%s/cfa.s", d->path);
	snprintf(exe, exelen, "%s/cfa", d->path);
	assemble(spath, src, len, exe);
	free(src);

	snprintf(cmd, sizeof(cmd), "readelf -Ws '%s'", exe);
	out = command_output(cmd);
	for (size_t i = 0; i < NCASES; i++) {
		char fn[16];

		snprintf(fn, sizeof(fn), "cfa%zu", i);
		addr[i] = func_addr(out, fn);
	}
	free(out);
	for (size_t i = 0; i < NCASES; i++)
		if (addr[i] == 0)
			fail_msg("%s: no cfa%zu in readelf -Ws", exe, i);
}

/* Each case's rows, exactly: starts, rules, and the gap after it. */
static void check_cfa_case(const char *exe, const struct unwind_table *t, size_t i,
			   uint64_t base)
{
	const struct cfa_case *c = &cfa_cases[i];

	for (size_t k = 0; k < c->nrows; k++) {
		const struct unwind_row *w = &c->rows[k].want;
		uint64_t pc = base + c->rows[k].at;
		uint64_t end = k + 1 < c->nrows ? base + c->rows[k + 1].at : base + 32;
		long idx = unwind_table_find(t, pc);

		if (idx < 0 || t->rows[idx].pc != pc || unwind_table_find(t, end - 1) != idx ||
		    t->rows[idx].cfa_kind != w->cfa_kind || t->rows[idx].cfa_off != w->cfa_off ||
		    t->rows[idx].rbp_kind != w->rbp_kind || t->rows[idx].rbp_off8 != w->rbp_off8)
			fail_msg("%s: %s: row at +%u should be cfa %s %u, rbp %u %d over [+%u, +%u)",
				 exe, c->what, c->rows[k].at, kind_name(w->cfa_kind), w->cfa_off,
				 (unsigned)w->rbp_kind, (int)w->rbp_off8, c->rows[k].at,
				 (unsigned)(end - base));
	}
}

/* The interpreter on programs that test one DWARF rule each, good and bad
 * (.debug_frame written by hand: the assembler checks .cfi_* directives). */
static void test_cfa_programs(void **state)
{
	struct tmpdir *d = *state;
	uint64_t addr[NCASES] = { 0 };
	struct unwind_table t = { 0 };
	char exe[160];

	build_cfa_program(d, exe, sizeof(exe), addr);
	build_table(exe, &t, NULL);
	check_invariants(exe, &t);
	assert_int_equal(t.skipped, 0);
	for (size_t i = 0; i < NCASES; i++)
		check_cfa_case(exe, &t, i, addr[i]);
	unwind_table_free(&t);
}

/* Every byte value in the unknown-opcode slot of the second case: whatever
 * it is, nothing crashes, the table stays well-formed, and the rows the
 * FDE closed before it stand. */
static void test_every_opcode(void **state)
{
	static const unsigned char marker[] = { 0x2e, 0x8a, 0xcf, 0x95, 0x9a, 0x02 };
	struct tmpdir *d = *state;
	uint64_t addr[NCASES] = { 0 };
	char exe[160], path[192];
	unsigned char *buf, *slot;
	size_t len;

	build_cfa_program(d, exe, sizeof(exe), addr);
	buf = read_whole(exe, &len);
	slot = memmem(buf, len, marker, sizeof(marker));
	if (!slot)
		fail_msg("%s: marker not found", exe);
	slot += sizeof(marker);
	assert_int_equal(*slot, 0x3c);
	snprintf(path, sizeof(path), "%s/opcode", d->path);
	for (unsigned v = 0; v < 256; v++) {
		struct unwind_table t = { 0 };
		char err[512];

		*slot = (unsigned char)v;
		write_file(path, buf, len);
		if (try_build(path, &t, err, sizeof(err)) != 0)
			fail_msg("opcode %#x: %s", v, err);
		check_invariants(path, &t);
		for (unsigned at = 0; at < 2; at++) {
			long idx = unwind_table_find(&t, addr[1] + at);

			if (idx < 0 || t.rows[idx].pc != addr[1] + at ||
			    t.rows[idx].cfa_kind != CFA_RSP || t.rows[idx].cfa_off != 8 + 8 * at)
				fail_msg("opcode %#x: the row at cfa1+%u changed", v, at);
		}
		unwind_table_free(&t);
	}
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_libc),
		cmocka_unit_test(test_python311),
		cmocka_unit_test(test_libpython312),
		cmocka_unit_test(test_libz),
		cmocka_unit_test(test_libtorch_cpu),
		cmocka_unit_test(test_plt_rows),
		cmocka_unit_test(test_page_index),
		cmocka_unit_test_setup_teardown(test_not_elf, tmpdir_setup, tmpdir_teardown),
		cmocka_unit_test_setup_teardown(test_not_x86_64, tmpdir_setup, tmpdir_teardown),
		cmocka_unit_test_setup_teardown(test_truncated, tmpdir_setup, tmpdir_teardown),
		cmocka_unit_test_setup_teardown(test_scrambled_eh_frame, tmpdir_setup, tmpdir_teardown),
		cmocka_unit_test_setup_teardown(test_no_eh_frame, tmpdir_setup, tmpdir_teardown),
		cmocka_unit_test_setup_teardown(test_debug_frame_only, tmpdir_setup, tmpdir_teardown),
		cmocka_unit_test_setup_teardown(test_debug_frame_compressed, tmpdir_setup,
						tmpdir_teardown),
		cmocka_unit_test_setup_teardown(test_eh_frame_wins, tmpdir_setup, tmpdir_teardown),
		cmocka_unit_test_setup_teardown(test_cfa_programs, tmpdir_setup, tmpdir_teardown),
		cmocka_unit_test_setup_teardown(test_every_opcode, tmpdir_setup, tmpdir_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
