/* fuzz_gdbjit.c - an in-memory object a JIT registered with the GDB JIT
 * interface, read out of the target's memory (gdbjit.h).  The input is the
 * object's bytes.
 *
 * Checked: every symbol taken is non-empty, bounded, free of control bytes,
 * and found again at its start. */
#include "fuzz.h"
#include "gdbjit.h"
#include "jitsyms.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct perfmap m;

	memset(&m, 0, sizeof(m));
	gdbjit_add_object(data, size, &m);
	perfmap_sort(&m);
	for (size_t i = 0; i < m.n; i++)
		FUZZ_CHECK(m.v[i].end > m.v[i].start); /* sized symbols only */
	fuzz_check_syms(&m);
	perfmap_free(&m);
	return 0;
}
