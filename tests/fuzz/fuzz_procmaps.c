/* fuzz_procmaps.c - /proc/PID/maps text, parsed as procmaps_read parses the
 * file, then the helpers that look through the result.  The input is the
 * text. */
#include "fuzz.h"
#include "procmaps.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct proc_maps m;
	char err[256], host[256];

	if (procmaps_parse((const char *)data, size, &m, err, sizeof(err)) == 0) {
		for (size_t i = 0; i < m.n; i++) {
			const char *base = procmaps_basename(&m.v[i]);

			FUZZ_CHECK(base != NULL && strlen(m.v[i].perms) <= 4);
			if (m.v[i].path)
				procmaps_host_path(1234, m.v[i].path, host, sizeof(host));
		}
		procmaps_first_basename_prefix(&m, "libpython3.");
		procmaps_free(&m);
	} else {
		FUZZ_CHECK(m.v == NULL && m.n == 0);
	}
	return 0;
}
