/* fuzz_perfmap.c - a JIT's /tmp/perf-PID.map, which any user can write.
 * The input is the file's text; it is parsed in two pieces, as
 * perfmap_read parses a file that grew between reads, sorted, and searched.
 *
 * Checked: the parse consumes whole lines only, every symbol found holds the
 * address asked, names are bounded and free of control bytes. */
#include "fuzz.h"
#include "perfmap.h"
#include "jitsyms.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct perfmap m;
	const char *buf = (const char *)data;
	size_t half = size / 2, used;

	memset(&m, 0, sizeof(m));
	used = perfmap_parse(&m, buf, half);
	FUZZ_CHECK(used <= half && (used == 0 || buf[used - 1] == '\n'));
	used += perfmap_parse(&m, buf + used, size - used);
	FUZZ_CHECK(used <= size && (used == 0 || buf[used - 1] == '\n'));
	perfmap_sort(&m);
	fuzz_check_syms(&m);
	perfmap_free(&m);
	return 0;
}
