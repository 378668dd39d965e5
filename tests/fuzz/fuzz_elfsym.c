/* fuzz_elfsym.c - the ELF reads the profiler does on every binary a Python
 * process maps: named symbols, load bias, GNU build-id, one section's
 * bytes.  The input is the whole ELF file. */
#include "elfsym.h"
#include "fuzz.h"

static const char *const names[] = {
	"_PyRuntime", "Py_Version", "_PyEval_EvalFrameDefault", "main", "f", "",
};
#define NNAMES (sizeof(names) / sizeof(names[0]))

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char mapped[] = "/usr/lib/libfuzz.so";
	struct proc_map m[] = {
		{ .start = 0x7f0000000000, .end = 0x7f0000001000, .offset = 0, .perms = "r--p",
		  .path = mapped },
		{ .start = 0x7f0000001000, .end = 0x7f0000003000, .offset = 0x1000,
		  .perms = "r-xp", .path = mapped },
		{ .start = 0x7f0000003000, .end = 0x7f0000004000, .offset = 0x3000,
		  .perms = "rw-p", .path = mapped },
	};
	struct proc_maps maps = { m, sizeof(m) / sizeof(m[0]) };
	uint64_t values[NNAMES], sizes[NNAMES], bias;
	char path[64], err[256], hex[41], bighex[129];
	uint8_t sect[256];
	size_t got;
	int fd = fuzz_memfd(data, size, path, sizeof(path));

	elf_find_symbols(path, names, NNAMES, values, sizes, err, sizeof(err));
	elf_load_bias(path, &maps, mapped, &bias, err, sizeof(err));
	if (elf_read_build_id(path, hex, sizeof(hex)) == 0)
		FUZZ_CHECK(strlen(hex) % 2 == 0 && strlen(hex) < sizeof(hex));
	elf_read_build_id(path, bighex, sizeof(bighex));
	if (elf_read_section(path, ".AsyncioDebug", sect, sizeof(sect), &got, err,
			     sizeof(err)) == 0)
		FUZZ_CHECK(got <= sizeof(sect));
	close(fd);
	return 0;
}
