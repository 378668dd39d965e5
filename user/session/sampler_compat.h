/* sampler_compat.h - the BPF object for kernels without bpf_loop
 * (sampler_compat.c). */
#ifndef PYPERF_SAMPLER_COMPAT_H
#define PYPERF_SAMPLER_COMPAT_H
#include <stddef.h>

/* the ELF bytes of build/pyperf_compat.bpf.o, and their size */
const void *sampler_compat_elf(size_t *size);

#endif
