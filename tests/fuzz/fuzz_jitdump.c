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

static void check_sym(const struct jit_sym *s, uint64_t pc)
{
	size_t len;

	if (!s)
		return;
	FUZZ_CHECK(s->start <= pc && pc < s->end);
	len = strlen(s->name);
	FUZZ_CHECK(len > 0 && len <= PERFMAP_MAX_NAME + 3);
	for (size_t i = 0; i < len; i++)
		FUZZ_CHECK((unsigned char)s->name[i] >= 0x20);
}

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
	for (size_t i = 0; i < m.n; i++) {
		check_sym(perfmap_find(&m, m.v[i].start), m.v[i].start);
		if (m.v[i].end > m.v[i].start)
			check_sym(perfmap_find(&m, m.v[i].end - 1), m.v[i].end - 1);
		check_sym(perfmap_find(&m, m.v[i].end), m.v[i].end);
	}
	perfmap_free(&m);
	return 0;
}
