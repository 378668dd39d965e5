/* fuzz_perfmap.c - a JIT's /tmp/perf-PID.map, which any user can write.
 * The input is the file's text; it is parsed in two pieces, as
 * perfmap_read parses a file that grew between reads, sorted, and searched.
 *
 * Checked: the parse consumes whole lines only, every symbol found holds the
 * address asked, names are bounded and free of control bytes. */
#include "fuzz.h"
#include "perfmap.h"

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
	const char *buf = (const char *)data;
	size_t half = size / 2, used;

	memset(&m, 0, sizeof(m));
	used = perfmap_parse(&m, buf, half);
	FUZZ_CHECK(used <= half && (used == 0 || buf[used - 1] == '\n'));
	used += perfmap_parse(&m, buf + used, size - used);
	FUZZ_CHECK(used <= size && (used == 0 || buf[used - 1] == '\n'));
	perfmap_sort(&m);
	for (size_t i = 0; i < m.n; i++) {
		check_sym(perfmap_find(&m, m.v[i].start), m.v[i].start);
		if (m.v[i].end > m.v[i].start)
			check_sym(perfmap_find(&m, m.v[i].end - 1), m.v[i].end - 1);
		check_sym(perfmap_find(&m, m.v[i].end), m.v[i].end);
	}
	check_sym(perfmap_find(&m, 0), 0);
	perfmap_free(&m);
	return 0;
}
