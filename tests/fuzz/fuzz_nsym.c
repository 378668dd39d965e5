/* fuzz_nsym.c - the lazy symbol reader (libdwfl underneath) on an ELF file
 * given as an fd: open, name a few addresses, look a few names up.  The
 * first 8 bytes of the input are an address to name; the rest is the ELF
 * file.
 *
 * Debug files are searched only under a directory that does not exist, and
 * debuginfod is switched off: the input alone decides what is read. */
#include "fuzz.h"
#include "nsym.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t at = fuzz_take(&data, &size, 8), start, end, addrs[4];
	struct nsym_bin *b;
	char path[64], err[256], name[128];
	int fd;

	unsetenv("DEBUGINFOD_URLS");
	fd = fuzz_memfd(data, size, path, sizeof(path));
	b = nsym_open(fd, "/usr/lib/libfuzz.so", "/nonexistent-pyperf-fuzz", err, sizeof(err));
	close(fd);
	if (!b)
		return 0;
	addrs[0] = at;
	addrs[1] = at + 1;
	addrs[2] = 0x1000;
	addrs[3] = at; /* again: from the cache */
	for (size_t i = 0; i < 4; i++) {
		uint64_t s = 0;

		nsym_name(b, addrs[i], name, sizeof(name), &s);
		FUZZ_CHECK(memchr(name, 0, sizeof(name)) != NULL);
	}
	nsym_lookup(b, "f", &start, &end);
	nsym_lookup(b, "_PyEval_EvalFrameDefault", &start, &end);
	nsym_has_debug_file(b);
	FUZZ_CHECK(strcmp(nsym_module(b), "libfuzz.so") == 0);
	nsym_close(b);
	return 0;
}
