/* fuzz_ksyms.c - /proc/kallsyms text, and kernel addresses named with it.
 * Input: one byte, the number of addresses (n % 8), then n 8-byte
 * addresses; the rest is the file.  The addresses are sorted and made
 * distinct first, as ksyms_resolve wants them. */
#include "fuzz.h"
#include "ksyms.h"

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t want = fuzz_take(&data, &size, 1) % 8, n = 0;
	uint64_t addrs[8];
	char *names[8], path[64];
	int fd;

	for (size_t i = 0; i < want; i++)
		addrs[i] = fuzz_take(&data, &size, 8);
	qsort(addrs, want, sizeof(addrs[0]), cmp_u64);
	for (size_t i = 0; i < want; i++)
		if (!n || addrs[i] != addrs[n - 1])
			addrs[n++] = addrs[i];
	fd = fuzz_memfd(data, size, path, sizeof(path));
	FUZZ_CHECK(ksyms_resolve(path, addrs, n, names) == 0);
	for (size_t i = 0; i < n; i++) {
		if (names[i])
			FUZZ_CHECK(names[i][0] && !strpbrk(names[i], " \t\n"));
		free(names[i]);
	}
	close(fd);
	return 0;
}
