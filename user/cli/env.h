/* env.h - the PYPERF_* environment variables, read and checked once by each
 * command before it starts (a bad value is a one-line error, whichever
 * command reads it). */
#ifndef PYPERF_ENV_H
#define PYPERF_ENV_H

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

struct env {
	unsigned counts_entries;     /* PYPERF_COUNTS_ENTRIES: BPF counts map size (0: default) */
	unsigned offcpu_slots;       /* PYPERF_OFFCPU_SLOTS: threads the off-CPU table holds
				      * (a power of two; 0: default), for tests */
	uint64_t unwind_bytes;       /* PYPERF_UNWIND_BYTES: unwind table cap, finer than
				      * --unwind-mb, for tests (0: unset) */
	const char *debuginfo_path;  /* PYPERF_DEBUGINFO_PATH: where separate debug files
				      * are searched (NULL: by the binary's prefix) */
	const char *vmlinux_btf;     /* PYPERF_VMLINUX_BTF: the kernel's BTF from this file
				      * (NULL: /sys/kernel/btf/vmlinux) */
	bool no_bpf_loop;            /* PYPERF_BPF_LOOP=0: the walks without bpf_loop, as on
				      * kernels before 5.17, on any kernel (tests, make bench) */
	bool no_stack_scan;          /* PYPERF_STACK_SCAN=0: code without CFI is left by
				      * frame pointers only (for make bench) */
	unsigned idle_close_s;       /* PYPERF_IDLE_CLOSE_S: a binary no process maps is
				      * let go after this long (0: the default, 30 s), for tests */
};

/* Fill *e from the environment; 0, or -1 with a message naming the variable. */
int env_read(struct env *e, char *err, size_t errlen);

#endif
