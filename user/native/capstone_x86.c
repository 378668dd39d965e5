/* capstone_x86.c - the static build takes capstone's x86 disassembler only.
 *
 * Debian's libcapstone.a holds every architecture, and cs_open's tables
 * name each one's entry points (ARM_global_init, ARM_option, ...), so a
 * static link pulled all of them in: 1.8 MB of tables full of pointers
 * (M68K's alone is 1 MB), which a static-pie binary relocates, page by
 * page, at every start (82,000 relocations, ~1.4 ms of each run's CPU
 * here, and 5 MB of the file).  Defined here, the other architectures'
 * entry points are ours, and the linker leaves their modules in the
 * archive.  evalparts.c opens CS_ARCH_X86 only; opening any other gets
 * CS_ERR_ARCH.
 *
 * A capstone that names its modules otherwise just links them all again;
 * one that also defined one of these names in an object we pull would fail
 * the link (a duplicate symbol), not the run.  The dynamic build opens the
 * shared library (evalparts.c) and compiles nothing here. */
#ifdef PYPERF_STATIC
#include <capstone/capstone.h>
#include <stddef.h>

struct cs_struct;

#define NOT_LINKED(arch)                                                        \
	cs_err arch##_global_init(struct cs_struct *ud);                        \
	cs_err arch##_global_init(struct cs_struct *ud)                         \
	{                                                                       \
		(void)ud;                                                       \
		return CS_ERR_ARCH;                                             \
	}                                                                       \
	cs_err arch##_option(struct cs_struct *h, cs_opt_type type, size_t value); \
	cs_err arch##_option(struct cs_struct *h, cs_opt_type type, size_t value) \
	{                                                                       \
		(void)h;                                                        \
		(void)type;                                                     \
		(void)value;                                                    \
		return CS_ERR_ARCH;                                             \
	}

NOT_LINKED(ARM)
NOT_LINKED(AArch64)
NOT_LINKED(Mips)
NOT_LINKED(PPC)
NOT_LINKED(Sparc)
NOT_LINKED(SystemZ)
NOT_LINKED(XCore)
NOT_LINKED(M68K)
NOT_LINKED(TMS320C64x)
NOT_LINKED(M680X)
NOT_LINKED(EVM)
#endif
