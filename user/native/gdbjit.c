/* gdbjit.c - see gdbjit.h. */
#include "gdbjit.h"
#include "pyread.h"

#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* libstdc++'s demangler (extern "C"); numba's names are C++-mangled */
char *__cxa_demangle(const char *mangled, char *out, size_t *len, int *status);

struct jit_descriptor {
	uint32_t version, action_flag;
	uint64_t relevant, first;
};

struct jit_code_entry {
	uint64_t next, prev, symfile_addr, symfile_size;
};

static void add_symbols(Elf *e, struct perfmap *m)
{
	GElf_Ehdr eh;
	Elf_Scn *scn = NULL;
	size_t nsec = 0;

	if (!gelf_getehdr(e, &eh) || elf_getshdrnum(e, &nsec))
		return;
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB || !sh.sh_entsize ||
		    !(d = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 0; i < d->d_size / sh.sh_entsize && i < INT32_MAX; i++) {
			GElf_Sym sym;
			GElf_Shdr home;
			Elf_Scn *hs;
			const char *name;
			char *shown;
			uint64_t at;
			int status = -1;

			if (!gelf_getsym(d, (int)i, &sym) || GELF_ST_TYPE(sym.st_info) != STT_FUNC ||
			    !sym.st_size || sym.st_shndx == SHN_UNDEF || sym.st_shndx >= SHN_LORESERVE ||
			    sym.st_shndx >= nsec || !(name = elf_strptr(e, sh.sh_link, sym.st_name)) ||
			    !*name)
				continue;
			/* in a relocatable object a symbol's value is an offset in
			 * its section, which the JIT set to the loaded address */
			at = sym.st_value;
			if (eh.e_type == ET_REL) {
				if (!(hs = elf_getscn(e, sym.st_shndx)) || !gelf_getshdr(hs, &home))
					continue;
				at += home.sh_addr;
			}
			shown = !strncmp(name, "_Z", 2) ? __cxa_demangle(name, NULL, NULL, &status) : NULL;
			if (shown && status == 0)
				perfmap_add(m, at, sym.st_size, shown, strlen(shown));
			else
				perfmap_add(m, at, sym.st_size, name, strlen(name));
			free(shown);
		}
	}
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
