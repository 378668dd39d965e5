/* linetable_check.c - check linetable_addr2line() against ground truth
 * printed by tests/unit/linetable_dump.py from a real interpreter.
 *
 * How it works: reads the dump on stdin.  A "C kind firstlineno hex name"
 * line starts a code object (its table is decoded from hex into a buffer of
 * exactly its size); each following "O offset truth capi" line is one byte
 * offset with the line Python reports for it (co_lines() or
 * dis.findlinestarts()) and the line PyCode_Addr2Line returns, either being
 * "?" when unknown.  Every known value must equal linetable_addr2line()'s
 * answer.  The first mismatch is printed and the exit status is 1; a
 * malformed dump, or one with no offsets at all, exits 2.  On success it
 * prints how many offsets were checked.
 *
 * Build: gcc -std=c11 -D_GNU_SOURCE -Wall -Wextra -Iuser/python user/python/linetable.c \
 *        tests/unit/linetable_check.c -o /tmp/linetable_check */
#ifndef _GNU_SOURCE
#define _POSIX_C_SOURCE 200809L	/* getline */
#endif
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "linetable.h"

struct code {
	int kind;
	int first;
	uint8_t *table;
	size_t len;
	char *desc;	/* "name@file", for messages */
};

struct counts {
	long codes, offsets, capi;
};

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Decode hex ("-" = empty) into an exact-size buffer; -1 if malformed. */
static int unhex(const char *s, uint8_t **out, size_t *len)
{
	size_t n = strcmp(s, "-") == 0 ? 0 : strlen(s);

	if (n % 2)
		return -1;
	*out = malloc(n / 2 ? n / 2 : 1);
	if (!*out)
		return -1;
	for (size_t i = 0; i < n; i += 2) {
		int hi = hexval(s[i]), lo = hexval(s[i + 1]);
		if (hi < 0 || lo < 0)
			return -1;
		(*out)[i / 2] = (uint8_t)(hi << 4 | lo);
	}
	*len = n / 2;
	return 0;
}

static int parse_int(const char *s, int *v)
{
	char *end;
	errno = 0;
	long x = strtol(s, &end, 10);
	if (errno || end == s || *end || x < INT_MIN || x > INT_MAX)
		return -1;
	*v = (int)x;
	return 0;
}

/* "?" -> *known = 0; an integer -> *known = 1. */
static int parse_opt_int(const char *s, int *v, int *known)
{
	*known = strcmp(s, "?") != 0;
	return *known ? parse_int(s, v) : 0;
}

static void code_free(struct code *c)
{
	free(c->table);
	free(c->desc);
	memset(c, 0, sizeof(*c));
}

/* "C kind first hex desc" (after the "C "). */
static int parse_code(char *rest, struct code *c)
{
	char *kind = strtok(rest, " "), *first = strtok(NULL, " ");
	char *hex = strtok(NULL, " "), *desc = strtok(NULL, "");

	code_free(c);
	if (!kind || !first || !hex || parse_int(kind, &c->kind) || parse_int(first, &c->first))
		return -1;
	c->desc = strdup(desc ? desc : "?");
	return c->desc ? unhex(hex, &c->table, &c->len) : -1;
}

static void print_table(const struct code *c)
{
	fprintf(stderr, "  table (%zu bytes):", c->len);
	for (size_t i = 0; i < c->len && i < 64; i++)
		fprintf(stderr, " %02x", c->table[i]);
	fprintf(stderr, "%s\n", c->len > 64 ? " ..." : "");
}

static int mismatch(const struct code *c, int off, int got, const char *what, int want)
{
	fprintf(stderr, "MISMATCH in %s (kind %d, firstlineno %d) at offset %d: "
		"linetable_addr2line=%d, %s=%d\n", c->desc, c->kind, c->first, off, got, what, want);
	print_table(c);
	return 1;
}

/* "O offset truth capi" (after the "O "): 0 ok, 1 mismatch, -1 malformed. */
static int check_offset(char *rest, const struct code *c, struct counts *n)
{
	char *o = strtok(rest, " "), *t = strtok(NULL, " "), *a = strtok(NULL, " ");
	int off, truth, capi, has_truth, has_capi;

	if (!c->desc || !o || !t || !a || parse_int(o, &off) ||
	    parse_opt_int(t, &truth, &has_truth) || parse_opt_int(a, &capi, &has_capi) ||
	    !(has_truth || has_capi))
		return -1;
	int got = linetable_addr2line((enum py_linetable_kind)c->kind, c->table, c->len,
				      c->first, off);
	if (has_truth && got != truth)
		return mismatch(c, off, got, "python", truth);
	if (has_capi && got != capi)
		return mismatch(c, off, got, "PyCode_Addr2Line", capi);
	n->offsets++;
	n->capi += has_capi;
	return 0;
}

/* One input line: 0 ok, 1 mismatch, -1 malformed. */
static int handle_line(char *line, struct code *c, struct counts *n)
{
	line[strcspn(line, "\r\n")] = '\0';
	if (line[0] == '#' || line[0] == '\0')
		return 0;
	if (strncmp(line, "C ", 2) == 0) {
		n->codes++;
		return parse_code(line + 2, c);
	}
	if (strncmp(line, "O ", 2) == 0)
		return check_offset(line + 2, c, n);
	return -1;
}

int main(void)
{
	struct code c = {0};
	struct counts n = {0};
	char *line = NULL;
	size_t cap = 0;
	long lineno = 0;
	int rc = 0;

	while (rc == 0 && getline(&line, &cap, stdin) >= 0) {
		lineno++;
		rc = handle_line(line, &c, &n);
	}
	if (rc < 0)
		fprintf(stderr, "malformed input at line %ld\n", lineno);
	else if (rc == 0 && n.offsets == 0)
		fprintf(stderr, "no offsets in the input: nothing was checked\n");
	else if (rc == 0)
		printf("checked %ld offsets (%ld also against PyCode_Addr2Line) in %ld code objects\n",
		       n.offsets, n.capi, n.codes);
	free(line);
	code_free(&c);
	if (rc < 0 || (rc == 0 && n.offsets == 0))
		return 2;
	return rc;
}
