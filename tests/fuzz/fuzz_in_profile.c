/* fuzz_in_profile.c - the files `pyperf-bpf diff` reads, which a user
 * names: folded stacks, a gzipped pprof, speedscope JSON.  The input is the
 * whole file; its first bytes pick the format as in_profile_read does.
 *
 * Checked: a read either fails with a one-line message or gives stacks
 * with at least one frame each, a finite positive value, printable labels
 * and a total that is their sum. */
#include <math.h>

#include "fuzz.h"
#include "in_profile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct in_profile p = { 0 };
	char path[64], err[512];
	double sum = 0;
	int fd = fuzz_memfd(data, size, path, sizeof(path));

	if (in_profile_read(path, &p, err, sizeof(err))) {
		FUZZ_CHECK(err[0] && !strchr(err, '\n'));
	} else {
		for (size_t i = 0; i < p.n; i++) {
			FUZZ_CHECK(p.v[i].n >= 1 && isfinite(p.v[i].value) && p.v[i].value > 0);
			for (size_t j = 0; j < p.v[i].n; j++)
				FUZZ_CHECK(!strchr(p.v[i].frames[j], '\n') &&
					   !strchr(p.v[i].frames[j], ';'));
			sum += p.v[i].value;
		}
		FUZZ_CHECK(fabs(sum - p.total) <= 1e-6 * (fabs(sum) + 1));
	}
	in_profile_free(&p);
	close(fd);
	return 0;
}
