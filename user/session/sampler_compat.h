/* sampler_compat.h - the BPF object for kernels without bpf_loop
 * (sampler_compat.c). */
#ifndef PYPERF_SAMPLER_COMPAT_H
#define PYPERF_SAMPLER_COMPAT_H
#include <stdbool.h>
#include <stddef.h>

/* the ELF bytes of build/pyperf_compat.bpf.o, and their size */
const void *sampler_compat_elf(size_t *size);

/* May a perf_event program use a hash map that allocates at run time
 * (BPF_F_NO_PREALLOC)?  From 6.1; before, such a map is refused at load.
 * A map and a four-instruction program are made and closed to find out. */
bool sampler_runtime_alloc_ok(void);

#endif
