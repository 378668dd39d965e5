/* gdbjit.c - see gdbjit.h. */
#include "gdbjit.h"
#include "demangle.h"
#include "pyread.h"
#include "elfsym.h"

#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

struct jit_descriptor {
	uint32_t version, action_flag;
	uint64_t relevant, first;
};

struct jit_code_entry {
	uint64_t next, prev, symfile_addr, symfile_size;
};

struct add_ctx {
	Elf *e;
	GElf_Ehdr eh;
	size_t nsec;
	struct perfmap *m;
};

static int add_symbol(void *ctx, const GElf_Sym *sym, const char *name)
{
	struct add_ctx *a = ctx;
	GElf_Shdr home;
	Elf_Scn *hs;
	char *shown;
	uint64_t at;

	if (!sym->st_size || sym->st_shndx == SHN_UNDEF || sym->st_shndx >= SHN_LORESERVE ||
	    sym->st_shndx >= a->nsec)
		return 0;
	/* in a relocatable object a symbol's value is an offset in its
	 * section, which the JIT set to the loaded address */
	at = sym->st_value;
	if (a->eh.e_type == ET_REL) {
		if (!(hs = elf_getscn(a->e, sym->st_shndx)) || !gelf_getshdr(hs, &home))
			return 0;
		at += home.sh_addr;
	}
	shown = demangle(name); /* numba's names are C++-mangled */
	if (shown)
		perfmap_add(a->m, at, sym->st_size, shown, strlen(shown));
	else
		perfmap_add(a->m, at, sym->st_size, name, strlen(name));
	free(shown);
	return 0;
}

static void add_symbols(Elf *e, struct perfmap *m)
{
	struct add_ctx a = { .e = e, .m = m };

	if (!gelf_getehdr(e, &a.eh) || elf_getshdrnum(e, &a.nsec))
		return;
	elf_each_function(e, add_symbol, &a);
}

void gdbjit_add_object(const void *image, size_t size, struct perfmap *m)
{
	Elf *e;

	if (elf_version(EV_CURRENT) == EV_NONE || size < EI_NIDENT ||
	    memcmp(image, ELFMAG, SELFMAG))
		return;
	/* libelf only reads the image (ELF_C_READ_MEMORY) */
	if (!(e = elf_memory((char *)image, size)))
		return;
	if (elf_kind(e) == ELF_K_ELF)
		add_symbols(e, m);
	elf_end(e);
}

int gdbjit_read(int pid, uint64_t desc, struct perfmap *m)
{
	struct jit_descriptor d;
	uint64_t at, total = 0;
	int n = 0;

	if (mem_read(pid, desc, &d, sizeof(d)) || d.version != 1)
		return -1;
	for (at = d.first; at && n < GDBJIT_MAX_ENTRIES; n++) {
		struct jit_code_entry e;
		void *image;

		if (mem_read(pid, at, &e, sizeof(e)))
			break;
		at = e.next;
		if (!e.symfile_size || e.symfile_size > GDBJIT_MAX_OBJECT ||
		    total + e.symfile_size > GDBJIT_MAX_TOTAL)
			continue;
		total += e.symfile_size;
		if (!(image = malloc(e.symfile_size)))
			break;
		if (!mem_read(pid, e.symfile_addr, image, e.symfile_size))
			gdbjit_add_object(image, e.symfile_size, m);
		free(image);
	}
	perfmap_sort(m);
	return n;
}
