/* fuzz_unwind_table.c - an ELF file's CFI (.eh_frame, .debug_frame) turned
 * into unwind rows, then the rows laid out for the BPF program and searched
 * both ways.  The input is the whole ELF file.
 *
 * Checked beyond "no crash": rows strictly increasing, and the BPF layout's
 * page-index search finds the same row as the plain binary search, at every
 * row's pc and around it (a disagreement is a wrong unwind in the kernel). */
#include "fuzz.h"
#include "unwind_table.h"

static void check_pc(const struct unwind_table *t, const struct unwind_row *v, uint64_t pc)
{
	long i = unwind_table_find(t, pc);
	const struct unwind_row *r;

	if (pc > UINT32_MAX)
		return;
	r = unwind_layout_find(v, (uint32_t)pc);
	FUZZ_CHECK(i < 0 ? r == NULL : r == &v[1 + i]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct unwind_table t;
	struct unwind_row *v;
	char path[64], err[256];
	size_t len;
	int fd = fuzz_memfd(data, size, path, sizeof(path));

	if (unwind_table_build(fd, "fuzz", &t, err, sizeof(err)) == 0) {
		for (size_t i = 1; i < t.n; i++)
			FUZZ_CHECK(t.rows[i - 1].pc < t.rows[i].pc);
		v = unwind_table_layout(&t, 7, &len);
		FUZZ_CHECK(v != NULL);
		FUZZ_CHECK(len >= 1 + t.n);
		if (t.n) {
			for (size_t i = 0; i < t.n; i++) {
				check_pc(&t, v, t.rows[i].pc);
				check_pc(&t, v, t.rows[i].pc + 1);
				if (t.rows[i].pc)
					check_pc(&t, v, t.rows[i].pc - 1);
			}
			check_pc(&t, v, 0);
			check_pc(&t, v, UINT32_MAX);
		}
		free(v);
	}
	unwind_table_free(&t);
	close(fd);
	return 0;
}
