/* sampler_compat.c - the BPF object for kernels without bpf_loop (before
 * 5.17): bpf/pyperf.bpf.c built with PYPERF_NO_BPF_LOOP (bpf/loop.bpf.h).
 * Its skeleton has the main one's name and declarations (the Makefile
 * checks they are the same), so sampler.c opens it through the main
 * skeleton with these ELF bytes in place of its own; this file is the only
 * one that sees the second skeleton.  It also asks the kernel, for the main
 * object, what bpf_loop alone does not tell (sampler_runtime_alloc_ok). */
#include <stdbool.h>
#include <stddef.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "pyperf_compat.skel.h"
#include "sampler_compat.h"

const void *sampler_compat_elf(size_t *size)
{
	return pyperf_bpf__elf_bytes(size);
}

/* A perf_event program that refers to a hash map of BPF_F_NO_PREALLOC:
 * refused before 6.1 (before bpf_mem_alloc the verifier allowed tracing
 * programs only preallocated hash maps), whatever bpf_loop says. */
bool sampler_runtime_alloc_ok(void)
{
	LIBBPF_OPTS(bpf_map_create_opts, mo, .map_flags = BPF_F_NO_PREALLOC);
	struct bpf_insn insns[] = {
		/* r1 = the map (a pseudo map fd: the verifier checks the
		 * map's use by this type of program here) */
		{ .code = BPF_LD | BPF_DW | BPF_IMM, .dst_reg = BPF_REG_1,
		  .src_reg = BPF_PSEUDO_MAP_FD },
		{ 0 },
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	int map, prog;

	map = bpf_map_create(BPF_MAP_TYPE_HASH, "pyperf_probe", 4, 4, 1, &mo);
	if (map < 0)
		return false;
	insns[0].imm = map;
	prog = bpf_prog_load(BPF_PROG_TYPE_PERF_EVENT, "pyperf_probe", "GPL", insns,
			     sizeof(insns) / sizeof(insns[0]), NULL);
	close(map);
	if (prog < 0)
		return false;
	close(prog);
	return true;
}
