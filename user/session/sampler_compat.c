/* sampler_compat.c - the BPF object for kernels without bpf_loop (before
 * 5.17): bpf/pyperf.bpf.c built with PYPERF_NO_BPF_LOOP (bpf/loop.bpf.h).
 * Its skeleton has the main one's name and declarations (the Makefile
 * checks they are the same), so sampler.c opens it through the main
 * skeleton with these ELF bytes in place of its own; this file is the only
 * one that sees the second skeleton. */
#include <stddef.h>
#include "pyperf_compat.skel.h"
#include "sampler_compat.h"

const void *sampler_compat_elf(size_t *size)
{
	return pyperf_bpf__elf_bytes(size);
}
