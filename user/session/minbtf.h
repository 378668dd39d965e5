/* minbtf.h - the kernel's BTF cut down to what one BPF object's CO-RE
 * relocations read, made once per boot and object (see minbtf.c). */
#ifndef PYPERF_MINBTF_H
#define PYPERF_MINBTF_H

#include <stdbool.h>
#include <stddef.h>

/* Write to `out` a BTF holding, of the kernel's BTF at `kernel`, the types
 * and members that the CO-RE relocations of the BPF object `elf` (its ELF
 * bytes) can match: libbpf then relocates against it as against the whole,
 * with the same result.  0, or -1 with why in err (a relocation kind it
 * does not cut for, an unreadable object or BTF): the caller keeps the
 * whole BTF then. */
int minbtf_write(const void *elf, size_t elf_len, const char *kernel, const char *out,
		 char *err, size_t errlen);

/* The path of that BTF for this boot, kernel and object, under `dir` (made
 * on first use, as the whole BTF is cached beside it); NULL when it cannot
 * be made (said in -v when verbose). */
const char *minbtf_cached(const void *elf, size_t elf_len, const char *kernel, const char *dir,
			  const char *boot, char *path, size_t len, bool verbose);

#endif
