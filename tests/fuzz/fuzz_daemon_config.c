/* fuzz_daemon_config.c - `pyperf-bpf daemon --config FILE`: the input is
 * the file.  A sink is given on the command line after it, as a real
 * daemon would, so the checks after the file (URL, regular expression) run
 * too. */
#include "daemon_config.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct daemon_setting args[] = { { "dir", "/var/lib/pyperf-bpf" } };
	struct daemon_cfg c;
	char path[64], err[512];
	int fd = fuzz_memfd(data, size, path, sizeof(path));

	if (daemon_cfg_load(&c, path, args, 1, err, sizeof(err)) == 0)
		FUZZ_CHECK(c.freq >= 1 && c.freq <= 1000 && c.interval >= 1 && c.keep >= 1);
	else
		FUZZ_CHECK(memchr(err, 0, sizeof(err)) && err[0]);
	close(fd);
	return 0;
}
