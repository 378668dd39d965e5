/* fuzz_gdbjit.c - an in-memory object a JIT registered with the GDB JIT
 * interface, read out of the target's memory (gdbjit.h).  The input is the
 * object's bytes.
 *
 * Checked: every symbol taken is non-empty, bounded, free of control bytes,
 * and found again at its start. */
#include "fuzz.h"
#include "gdbjit.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct perfmap m;

	memset(&m, 0, sizeof(m));
	gdbjit_add_object(data, size, &m);
	perfmap_sort(&m);
	for (size_t i = 0; i < m.n; i++) {
		size_t len = strlen(m.v[i].name);
		const struct jit_sym *s = perfmap_find(&m, m.v[i].start);

		FUZZ_CHECK(len > 0 && len <= PERFMAP_MAX_NAME + 3);
		for (size_t k = 0; k < len; k++)
			FUZZ_CHECK((unsigned char)m.v[i].name[k] >= 0x20);
		FUZZ_CHECK(m.v[i].end > m.v[i].start);
		FUZZ_CHECK(s && s->start <= m.v[i].start && m.v[i].start < s->end);
	}
	perfmap_free(&m);
	return 0;
}
