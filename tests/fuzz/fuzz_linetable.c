/* fuzz_linetable.c - the three CPython line-table formats.  Input: one byte
 * picking the format (mod 3), two bytes of co_firstlineno (signed), two of
 * the bytecode offset asked about; the rest is the table.  Offsets around
 * the asked one, before the code and past its end are asked too. */
#include "fuzz.h"
#include "linetable.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	enum py_linetable_kind kind = (enum py_linetable_kind)(fuzz_take(&data, &size, 1) % 3);
	int first = (int16_t)fuzz_take(&data, &size, 2);
	int off = (int)fuzz_take(&data, &size, 2);
	int asked[] = { off, off + 1, off + 2, -1, 0, (int)(size * 2), INT32_MAX };

	for (size_t i = 0; i < sizeof(asked) / sizeof(asked[0]); i++) {
		int line = linetable_addr2line(kind, data, size, first, asked[i]);

		FUZZ_CHECK(asked[i] >= 0 || line == first);
	}
	/* the table from the byte after: a table cut at any point is also one */
	if (size)
		linetable_addr2line(kind, data + 1, size - 1, first, off);
	return 0;
}
