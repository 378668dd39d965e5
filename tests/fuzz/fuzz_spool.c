/* fuzz_spool.c - a file in the daemon's push spool, as the uploader checks
 * it before sending (a header with length and CRC-32, or the older format
 * whose gzip body must be whole).  What it would send must be what the
 * file holds after its query line, and the query one printable line. */
#include "spool.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[64], why[256], *buf;
	const char *query, *body;
	size_t body_len;
	int fd = fuzz_memfd(data, size, path, sizeof(path));

	if (spool_check_file(path, &buf, &query, &body, &body_len, why, sizeof(why))) {
		FUZZ_CHECK(body >= buf && body + body_len == buf + size);
		FUZZ_CHECK(body > query && body[-1] == 0 && !strchr(query, '\n'));
		FUZZ_CHECK(memcmp(body, data + (body - buf), body_len) == 0);
		free(buf);
	} else {
		FUZZ_CHECK(why[0] && memchr(why, 0, sizeof(why)));
	}
	close(fd);
	return 0;
}
