/* elfsym.c - symbol lookup, load bias and build-id for ELF files, via libelf.
 *
 * How it works:
 *  - elf_find_symbols walks the SHT_DYNSYM sections, then the SHT_SYMTAB
 *    ones, each once, and stops as soon as every wanted name has a global
 *    or weak definition (none can beat it): the exported names a lookup
 *    mostly wants are in .dynsym, a tenth of a full .symtab (0.4 ms of every
 *    start-up went on python3.12's).  For each defined symbol it compares
 *    the name (first byte, then the bounded bytes in the string table) with
 *    the few wanted names, so a lookup of k names costs at most one pass
 *    per table and k cheap checks per entry.  A global/weak definition
 *    beats a local one of the same name.
 *  - elf_load_bias: ET_EXEC files are loaded at their link addresses (bias
 *    0).  For ET_DYN, every mapping of the file in the process is paired with
 *    each PT_LOAD segment whose page-aligned file offset equals the mapping's
 *    offset and whose flags fit the mapping's x/w permissions; each pair
 *    proposes bias = mapping start - page-aligned p_vaddr.  The proposal made
 *    by the most pairs wins (first made wins a tie).  Voting matters when two
 *    segments start in the same file page - e.g. a small PIE whose rodata
 *    and RELRO data share page 0x2000 - where one mapping fits two segments.
 *  - elf_read_build_id reads the NT_GNU_BUILD_ID note from PT_NOTE segments
 *    (present even in stripped files), falling back to SHT_NOTE sections.
 *
 * Errors are returned as -1 with a one-line message naming the file. */
#include "elfsym.h"
#include "errmsg.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


/* ---- opening ----------------------------------------------------------- */

struct elf_file {
	int fd;
	Elf *elf;
	GElf_Ehdr ehdr;
};

/* Open `path` as an ELF object; 0, or -1 with a message. */
static int elf_file_open(struct elf_file *f, const char *path, char *err, size_t errlen)
{
	f->fd = -1;
	f->elf = NULL;
	if (elf_version(EV_CURRENT) == EV_NONE) {
		set_err(err, errlen, "%s: libelf initialisation failed: %s", path,
			elf_errmsg(-1));
		return -1;
	}
	f->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (f->fd < 0) {
		set_err(err, errlen, "%s: cannot open: %s", path, strerror(errno));
		return -1;
	}
	f->elf = elf_begin(f->fd, ELF_C_READ_MMAP, NULL);
	if (!f->elf) {
		set_err(err, errlen, "%s: cannot read as ELF: %s", path, elf_errmsg(-1));
		goto fail;
	}
	if (elf_kind(f->elf) != ELF_K_ELF) {
		set_err(err, errlen, "%s: not an ELF file", path);
		goto fail;
	}
	if (!gelf_getehdr(f->elf, &f->ehdr)) {
		set_err(err, errlen, "%s: bad ELF header: %s", path, elf_errmsg(-1));
		goto fail;
	}
	return 0;
fail:
	if (f->elf)
		elf_end(f->elf);
	close(f->fd);
	f->elf = NULL;
	f->fd = -1;
	return -1;
}

static void elf_file_close(struct elf_file *f)
{
	if (f->elf)
		elf_end(f->elf);
	if (f->fd >= 0)
		close(f->fd);
	f->elf = NULL;
	f->fd = -1;
}

/* ---- symbols ----------------------------------------------------------- */

struct sym_query {
	const char *const *names;
	size_t n;
	size_t *lens;       /* strlen(names[i]) */
	int *rank;          /* 0 = not found, 1 = local, 2 = global/weak */
	uint64_t *values;
	uint64_t *sizes;    /* may be NULL */
};

/* 2 for a symbol other objects can see, 1 for a local one. */
static int binding_rank(const GElf_Sym *sym)
{
	return GELF_ST_BIND(sym->st_info) == STB_LOCAL ? 1 : 2;
}

/* Whether the string at strtab[off] (strtab being `size` bytes) is exactly
 * `name` of length `len`, without reading past the table. */
static bool strtab_equals(const char *strtab, size_t size, size_t off,
			  const char *name, size_t len)
{
	if (off >= size || size - off <= len)
		return false;
	return strtab[off] == name[0] && strtab[off + len] == '\0' &&
	       memcmp(strtab + off, name, len) == 0;
}

/* Record `sym` (named strtab[sym->st_name]) for every wanted name it matches
 * and outranks the current holder of; whether it did for any. */
static bool offer_symbol(struct sym_query *q, const GElf_Sym *sym,
			 const char *strtab, size_t strsize)
{
	int rank = binding_rank(sym);
	bool took = false;

	for (size_t i = 0; i < q->n; i++) {
		if (q->rank[i] >= rank ||
		    !strtab_equals(strtab, strsize, sym->st_name, q->names[i], q->lens[i]))
			continue;
		q->rank[i] = rank;
		q->values[i] = sym->st_value;
		if (q->sizes)
			q->sizes[i] = sym->st_size;
		took = true;
	}
	return took;
}

/* Has every wanted name a global or weak definition (nothing can beat)? */
static bool all_global(const struct sym_query *q)
{
	for (size_t i = 0; i < q->n; i++)
		if (q->rank[i] < 2)
			return false;
	return true;
}

/* Whether a symbol table entry can be one we look for: defined, and naming
 * an object, function or the like rather than a section or file. */
static bool is_candidate(const GElf_Sym *sym)
{
	int type = GELF_ST_TYPE(sym->st_info);

	return sym->st_shndx != SHN_UNDEF && sym->st_name != 0 &&
	       type != STT_SECTION && type != STT_FILE;
}

/* One pass over the symbol table in `scn`; 0, or -1 with a message. */
static int scan_symtab(Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh, struct sym_query *q,
		       const char *path, char *err, size_t errlen)
{
	Elf_Data *data, *strdata;
	Elf_Scn *strscn;
	size_t count;

	if (sh->sh_entsize == 0 || sh->sh_type == SHT_NOBITS)
		return 0;
	data = elf_getdata(scn, NULL);
	strscn = elf_getscn(elf, sh->sh_link);
	strdata = strscn ? elf_getdata(strscn, NULL) : NULL;
	if (!data || !strdata || !strdata->d_buf) {
		set_err(err, errlen, "%s: cannot read symbol table: %s", path,
			elf_errmsg(-1));
		return -1;
	}
	count = data->d_size / sh->sh_entsize;
	for (size_t i = 1; i < count; i++) {
		GElf_Sym sym;

		if (!gelf_getsym(data, (int)i, &sym) || !is_candidate(&sym))
			continue;
		if (offer_symbol(q, &sym, strdata->d_buf, strdata->d_size) && all_global(q))
			break;
	}
	return 0;
}

/* Scan the .dynsym sections of `f`, then its .symtab ones, until every
 * name has a global definition; 0, or -1 with a message. */
static int scan_all_symtabs(struct elf_file *f, struct sym_query *q, const char *path,
			    char *err, size_t errlen)
{
	static const Elf64_Word order[] = { SHT_DYNSYM, SHT_SYMTAB };

	for (size_t k = 0; k < sizeof(order) / sizeof(order[0]); k++) {
		Elf_Scn *scn = NULL;

		while ((scn = elf_nextscn(f->elf, scn)) != NULL) {
			GElf_Shdr sh;

			if (all_global(q))
				return 0;
			if (!gelf_getshdr(scn, &sh)) {
				set_err(err, errlen, "%s: bad section header: %s", path,
					elf_errmsg(-1));
				return -1;
			}
			if (sh.sh_type == order[k] &&
			    scan_symtab(f->elf, scn, &sh, q, path, err, errlen) < 0)
				return -1;
		}
	}
	return 0;
}

int elf_find_symbols(const char *path, const char *const *names, size_t n,
		     uint64_t *values, uint64_t *sizes, char *err, size_t errlen)
{
	struct sym_query q = { .names = names, .n = n, .values = values, .sizes = sizes };
	struct elf_file f;
	int rc;

	for (size_t i = 0; i < n; i++) {
		values[i] = 0;
		if (sizes)
			sizes[i] = 0;
	}
	if (elf_file_open(&f, path, err, errlen) < 0)
		return -1;
	q.lens = calloc(n ? n : 1, sizeof(*q.lens));
	q.rank = calloc(n ? n : 1, sizeof(*q.rank));
	if (!q.lens || !q.rank) {
		set_err(err, errlen, "%s: out of memory", path);
		rc = -1;
		goto out;
	}
	for (size_t i = 0; i < n; i++)
		q.lens[i] = strlen(names[i]);
	rc = scan_all_symtabs(&f, &q, path, err, errlen);
out:
	free(q.lens);
	free(q.rank);
	elf_file_close(&f);
	return rc;
}

/* ---- load bias ----------------------------------------------------------- */

struct bias_vote {
	uint64_t bias;
	size_t votes;
};

/* The PT_LOAD headers of `f` in a new array (*n of them); 0, or -1 with a
 * message. */
static int load_segments(struct elf_file *f, GElf_Phdr **out, size_t *n,
			 const char *path, char *err, size_t errlen)
{
	size_t phnum, k = 0;
	GElf_Phdr *v;

	*out = NULL;
	*n = 0;
	if (elf_getphdrnum(f->elf, &phnum) != 0) {
		set_err(err, errlen, "%s: cannot read program headers: %s", path,
			elf_errmsg(-1));
		return -1;
	}
	v = calloc(phnum ? phnum : 1, sizeof(*v));
	if (!v) {
		set_err(err, errlen, "%s: out of memory", path);
		return -1;
	}
	for (size_t i = 0; i < phnum; i++) {
		if (gelf_getphdr(f->elf, (int)i, &v[k]) && v[k].p_type == PT_LOAD)
			k++;
	}
	*out = v;
	*n = k;
	return 0;
}

/* Whether a mapping with permissions `perms` can hold segment `ph`: readable
 * (so not a PROT_NONE alignment gap), same execute bit, and writable only if
 * the segment is (RELRO may have made a writable segment read-only, so not
 * the converse). */
static bool perms_fit(const char *perms, const GElf_Phdr *ph)
{
	bool r = perms[0] == 'r', w = perms[1] == 'w', x = perms[2] == 'x';

	return r && x == !!(ph->p_flags & PF_X) && (!w || (ph->p_flags & PF_W));
}

/* Count one vote for `bias` in votes[0..*nv). */
static void add_vote(struct bias_vote *votes, size_t *nv, uint64_t bias)
{
	for (size_t i = 0; i < *nv; i++) {
		if (votes[i].bias == bias) {
			votes[i].votes++;
			return;
		}
	}
	votes[*nv].bias = bias;
	votes[*nv].votes = 1;
	(*nv)++;
}

/* Number of mappings in `maps` of the file `mapped_path`. */
static size_t count_file_maps(const struct proc_maps *maps, const char *mapped_path)
{
	size_t k = 0;

	for (size_t i = 0; i < maps->n; i++)
		k += maps->v[i].path && strcmp(maps->v[i].path, mapped_path) == 0;
	return k;
}

/* Fill votes (room for every mapping x segment pair) from each mapping of
 * `mapped_path` that lines up with a segment; returns how many distinct
 * biases were proposed. */
static size_t collect_votes(const struct proc_maps *maps, const char *mapped_path,
			    const GElf_Phdr *segs, size_t nsegs, uint64_t page,
			    struct bias_vote *votes)
{
	size_t nv = 0;

	for (size_t i = 0; i < maps->n; i++) {
		const struct proc_map *m = &maps->v[i];

		if (!m->path || strcmp(m->path, mapped_path) != 0)
			continue;
		for (size_t s = 0; s < nsegs; s++) {
			uint64_t off = segs[s].p_offset & ~(page - 1);
			uint64_t vaddr = segs[s].p_vaddr & ~(page - 1);

			if (m->offset == off && perms_fit(m->perms, &segs[s]))
				add_vote(votes, &nv, m->start - vaddr);
		}
	}
	return nv;
}

/* The bias with the most votes; the earliest proposed wins a tie. */
static uint64_t most_voted(const struct bias_vote *votes, size_t nv)
{
	size_t best = 0;

	for (size_t i = 1; i < nv; i++) {
		if (votes[i].votes > votes[best].votes)
			best = i;
	}
	return votes[best].bias;
}

/* Host page size, which is what both the kernel and ld.so map in. */
static uint64_t page_size(void)
{
	long p = sysconf(_SC_PAGESIZE);

	return p > 0 ? (uint64_t)p : 4096;
}

/* Bias from the mappings of `mapped_path` and the PT_LOAD segments `segs`;
 * 0, or -1 with a message. */
static int vote_bias(const struct proc_maps *maps, const char *mapped_path,
		     const GElf_Phdr *segs, size_t nsegs, uint64_t *bias,
		     const char *path, char *err, size_t errlen)
{
	size_t nfile = count_file_maps(maps, mapped_path), nv;
	struct bias_vote *votes;

	if (nfile == 0) {
		set_err(err, errlen, "%s: %s is not mapped in the process", path,
			mapped_path);
		return -1;
	}
	votes = calloc(nfile * nsegs, sizeof(*votes));
	if (!votes) {
		set_err(err, errlen, "%s: out of memory", path);
		return -1;
	}
	nv = collect_votes(maps, mapped_path, segs, nsegs, page_size(), votes);
	if (nv)
		*bias = most_voted(votes, nv);
	else
		set_err(err, errlen,
			"%s: none of the %zu mappings of %s matches a PT_LOAD segment",
			path, nfile, mapped_path);
	free(votes);
	return nv ? 0 : -1;
}

/* Bias of the ET_DYN file `f` in `maps`; 0, or -1 with a message. */
static int dyn_bias(struct elf_file *f, const struct proc_maps *maps,
		    const char *mapped_path, uint64_t *bias, const char *path, char *err,
		    size_t errlen)
{
	GElf_Phdr *segs;
	size_t nsegs;
	int rc = -1;

	if (load_segments(f, &segs, &nsegs, path, err, errlen) < 0)
		return -1;
	if (nsegs == 0)
		set_err(err, errlen, "%s: no PT_LOAD segments", path);
	else
		rc = vote_bias(maps, mapped_path, segs, nsegs, bias, path, err, errlen);
	free(segs);
	return rc;
}

int elf_load_bias(const char *path, const struct proc_maps *maps,
		  const char *mapped_path, uint64_t *bias, char *err, size_t errlen)
{
	struct elf_file f;
	int rc = -1;

	*bias = 0;
	if (elf_file_open(&f, path, err, errlen) < 0)
		return -1;
	if (f.ehdr.e_type == ET_EXEC)
		rc = 0;
	else if (f.ehdr.e_type != ET_DYN)
		set_err(err, errlen, "%s: ELF type %u is neither ET_EXEC nor ET_DYN", path,
			(unsigned)f.ehdr.e_type);
	else if (!maps || !mapped_path)
		set_err(err, errlen, "%s: ET_DYN file needs the process's mappings", path);
	else
		rc = dyn_bias(&f, maps, mapped_path, bias, path, err, errlen);
	elf_file_close(&f);
	return rc;
}

/* ---- build-id ------------------------------------------------------------ */

/* Write `n` bytes as lowercase hex into hex[len]; 0, or -1 if it won't fit. */
static int to_hex(const unsigned char *b, size_t n, char *hex, size_t len)
{
	static const char digits[] = "0123456789abcdef";

	if (n == 0 || len < 2 * n + 1)
		return -1;
	for (size_t i = 0; i < n; i++) {
		hex[2 * i] = digits[b[i] >> 4];
		hex[2 * i + 1] = digits[b[i] & 15];
	}
	hex[2 * n] = '\0';
	return 0;
}

/* Look through the notes in `data` for the GNU build-id: 0 and hex written,
 * 1 when there is none here, -1 when found but `len` is too small. */
static int build_id_in_notes(Elf_Data *data, char *hex, size_t len)
{
	GElf_Nhdr nh;
	size_t off = 0, name_off, desc_off;

	if (!data || !data->d_buf)
		return 1;
	while ((off = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
		const char *base = data->d_buf;

		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
		    memcmp(base + name_off, "GNU", 4) == 0)
			return to_hex((const unsigned char *)base + desc_off, nh.n_descsz,
				      hex, len);
	}
	return 1;
}

/* Search the PT_NOTE segments of `f`; same returns as build_id_in_notes. */
static int build_id_in_segments(struct elf_file *f, char *hex, size_t len)
{
	size_t phnum;

	if (elf_getphdrnum(f->elf, &phnum) != 0)
		return 1;
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;
		Elf_Data *d;
		int rc;

		if (!gelf_getphdr(f->elf, (int)i, &ph) || ph.p_type != PT_NOTE)
			continue;
		d = elf_getdata_rawchunk(f->elf, (int64_t)ph.p_offset, ph.p_filesz,
					 ph.p_align == 8 ? ELF_T_NHDR8 : ELF_T_NHDR);
		rc = build_id_in_notes(d, hex, len);
		if (rc <= 0)
			return rc;
	}
	return 1;
}

/* Search the SHT_NOTE sections of `f`; same returns as build_id_in_notes. */
static int build_id_in_sections(struct elf_file *f, char *hex, size_t len)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(f->elf, scn)) != NULL) {
		GElf_Shdr sh;
		int rc;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		rc = build_id_in_notes(elf_getdata(scn, NULL), hex, len);
		if (rc <= 0)
			return rc;
	}
	return 1;
}

int elf_read_build_id(const char *path, char *hex, size_t len)
{
	struct elf_file f;
	int rc;

	if (len)
		hex[0] = '\0';
	if (elf_file_open(&f, path, NULL, 0) < 0)
		return -1;
	rc = build_id_in_segments(&f, hex, len);
	if (rc > 0)
		rc = build_id_in_sections(&f, hex, len);
	elf_file_close(&f);
	return rc == 0 ? 0 : -1;
}

/* ---- a section's bytes ----------------------------------------------- */

int elf_read_section(const char *path, const char *name, void *buf, size_t len,
		     size_t *got, char *err, size_t errlen)
{
	struct elf_file f;
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	int rc = 1;

	*got = 0;
	if (elf_file_open(&f, path, err, errlen))
		return -1;
	if (elf_getshdrstrndx(f.elf, &shstrndx)) {
		set_err(err, errlen, "%s: no section names: %s", path, elf_errmsg(-1));
		elf_file_close(&f);
		return -1;
	}
	while ((scn = elf_nextscn(f.elf, scn))) {
		GElf_Shdr sh;
		const char *sn;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || !(sn = elf_strptr(f.elf, shstrndx, sh.sh_name)) ||
		    strcmp(sn, name))
			continue;
		rc = 0;
		if (sh.sh_type == SHT_NOBITS)
			break;  /* a debug file's copy: the bytes are not here */
		d = elf_getdata(scn, NULL);
		if (d && d->d_buf) {
			*got = d->d_size < len ? d->d_size : len;
			memcpy(buf, d->d_buf, *got);
		}
		break;
	}
	elf_file_close(&f);
	return rc;
}

int elf_each_function(Elf *e, int (*fn)(void *ctx, const GElf_Sym *sym, const char *name),
		      void *ctx)
{
	Elf_Scn *scn = NULL;
	int rc;

	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB || !sh.sh_entsize ||
		    !(d = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 0; i < d->d_size / sh.sh_entsize && i < INT32_MAX; i++) {
			GElf_Sym sym;
			const char *name;

			if (gelf_getsym(d, (int)i, &sym) && GELF_ST_TYPE(sym.st_info) == STT_FUNC &&
			    (name = elf_strptr(e, sh.sh_link, sym.st_name)) && *name &&
			    (rc = fn(ctx, &sym, name)))
				return rc;
		}
	}
	return 0;
}
