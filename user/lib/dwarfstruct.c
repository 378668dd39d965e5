/* dwarfstruct.c - see dwarfstruct.h.  One pass over the compile units'
 * top-level entries; the first complete definition of the name wins (every
 * unit that includes a header repeats the same one). */
#include "dwarfstruct.h"
#include "errmsg.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

/* the struct a typedef names, through typedefs and qualifiers */
static int peel(Dwarf_Die *d)
{
	for (int i = 0; i < 8; i++) {
		int tag = dwarf_tag(d);
		Dwarf_Attribute a;

		if (tag == DW_TAG_structure_type)
			return dwarf_hasattr(d, DW_AT_declaration) ? -1 : 0;
		if (tag != DW_TAG_typedef && tag != DW_TAG_const_type &&
		    tag != DW_TAG_volatile_type)
			return -1;
		if (!dwarf_attr_integrate(d, DW_AT_type, &a) || !dwarf_formref_die(&a, d))
			return -1;
	}
	return -1;
}

static void read_members(Dwarf_Die *st, const char *const *members, size_t n, long *offs)
{
	Dwarf_Die m;

	if (dwarf_child(st, &m) != 0)
		return;
	do {
		const char *name;
		Dwarf_Attribute a;
		Dwarf_Word v;

		if (dwarf_tag(&m) != DW_TAG_member || !(name = dwarf_diename(&m)) ||
		    dwarf_hasattr(&m, DW_AT_bit_size) ||
		    !dwarf_attr(&m, DW_AT_data_member_location, &a) || dwarf_formudata(&a, &v))
			continue;
		for (size_t i = 0; i < n; i++)
			if (!strcmp(name, members[i]))
				offs[i] = (long)v;
	} while (dwarf_siblingof(&m, &m) == 0);
}

int dwarf_struct_offsets(const char *path, const char *type, const char *const *members,
			 size_t n, long *offs, long *size, char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), rc = 1;
	Dwarf *dbg;
	Dwarf_Off off = 0, next;
	size_t hsize;

	for (size_t i = 0; i < n; i++)
		offs[i] = -1;
	if (fd < 0) {
		set_err(err, errlen, "%s: cannot open: %s", path, strerror(errno));
		return -1;
	}
	dbg = dwarf_begin(fd, DWARF_C_READ);
	if (!dbg) {
		close(fd);
		return 1;
	}
	while (rc == 1 && dwarf_nextcu(dbg, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		Dwarf_Die cu, d, st;

		if (dwarf_offdie(dbg, off + hsize, &cu) && dwarf_child(&cu, &d) == 0) {
			do {
				const char *name = dwarf_diename(&d);
				int tag = dwarf_tag(&d);

				if ((tag != DW_TAG_typedef && tag != DW_TAG_structure_type) ||
				    !name || strcmp(name, type))
					continue;
				st = d;
				if (peel(&st))
					continue;
				read_members(&st, members, n, offs);
				if (size) {
					Dwarf_Word v;
					Dwarf_Attribute a;

					*size = dwarf_attr(&st, DW_AT_byte_size, &a) &&
						!dwarf_formudata(&a, &v) ? (long)v : -1;
				}
				rc = 0;
				break;
			} while (dwarf_siblingof(&d, &d) == 0);
		}
		off = next;
	}
	dwarf_end(dbg);
	close(fd);
	return rc;
}
