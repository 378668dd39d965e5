/* fuzz_jitdump.c - a JIT's jitdump file, which the profiled process (any
 * user) writes.  The input is the file; it is parsed as jitdump_read
 * parses it, in reads of at most a third of it, each from where the last
 * stopped, then searched.
 *
 * Checked: parsing always moves on or stops (never back, never past the
 * file), every symbol found holds the address asked, names are bounded and
 * free of control bytes. */
#include "fuzz.h"
#include "jitdump.h"
#include "jitsyms.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct perfmap m;
	size_t piece = size / 3 + 1;
	uint64_t at = 0, next;

	memset(&m, 0, sizeof(m));
	while (at < size) {
		size_t len = size - at < piece ? size - at : piece;

		if (jitdump_parse(&m, data + at, len, at, size, &next))
			break;
		FUZZ_CHECK(next >= at && next <= size);
		if (next == at)
			break;
		at = next;
	}
	perfmap_sort(&m);
	fuzz_check_syms(&m);
	perfmap_free(&m);
	return 0;
}
