/* fuzz_debug_offsets.c - _Py_DebugOffsets, the block a CPython 3.13+
 * process starts _PyRuntime with, as copied out of the target.  The input is
 * that copy. */
#include "fuzz.h"
#include "py_debug_offsets.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct py_offsets o;
	uint64_t hex = 0;
	char err[256];

	if (py_debug_offsets_parse(data, size, &o, &hex, err, sizeof(err)) == 0)
		FUZZ_CHECK(hex >= 0x030d0000); /* only 3.13 on have the block */
	py_debug_offsets_parse(data, size, &o, NULL, NULL, 0);
	return 0;
}
