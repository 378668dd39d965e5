/* nsym.c - see nsym.h.
 *
 * elfutils' libdwfl opens the binary, finds the separate debug file and
 * reads the symbol tables.  We report the module with base 0 and
 * add_p_vaddr = true, which makes libdwfl's bias 0 for ET_EXEC and ET_DYN
 * alike, so module addresses are the ELF's own vaddrs (with add_p_vaddr =
 * false an ET_DYN whose first PT_LOAD has p_vaddr != 0 would be shifted by
 * that p_vaddr).  Symbol addresses are the symbols' own st_value all the
 * same (see load()): libdwfl shifts those of a separate debug file when the
 * two files' first PT_LOAD differ.
 *
 * dwfl_module_addrinfo scans the whole symbol table on every call and falls
 * back to the nearest sizeless label, so instead the function symbols are
 * copied once (dwfl_module_getsymtab / dwfl_module_getsym_info) into an
 * array sorted by address; a lookup is a binary search, a short walk up the
 * chain of enclosing symbols, and an exact size check.  A direct-mapped
 * cache answers repeated addresses. */
#include "nsym.h"
#include "errmsg.h"
#include "demangle.h"
#include "evalparts.h"
#include "hmap.h"
#include "runcache.h"

#include <elf.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>


/* A binary installed under a prefix of its own (PREFIX/usr/bin/python3.14,
 * PREFIX/usr/lib/x86_64-linux-gnu/libfoo.so) keeps its separate debug files
 * under PREFIX/usr/lib/debug, as a sysroot does: search there after the
 * system's places (libdwfl's default, ":.debug:/usr/lib/debug").  Sets *out to
 * NULL (libdwfl's default) for a binary under /usr; returns -1 only when out
 * of memory. */
static int prefix_debug_path(const char *path, char **out)
{
	const char *usr = strstr(path, "/usr/");

	*out = NULL;
	if (!usr || usr == path || path[0] != '/')
		return 0;
	if (asprintf(out, ":.debug:/usr/lib/debug:%.*s/usr/lib/debug", (int)(usr - path), path) < 0) {
		*out = NULL;
		return -1;
	}
	return 0;
}

enum {
	CACHE_BITS = 9,              /* 512 cached addresses per binary */
	MAX_WALK = 256,              /* enclosing symbols tried per lookup */
	F_PLT = 1,                   /* name is our malloc'd "foo@plt" label */
	F_OWN_DISP = 2,              /* its shown name (in disp) is malloc'd */
};

/* 24 bytes: a libtorch-class binary has 500k symbols, and only those hit
 * get a shown name (disp) */
struct fsym {
	uint64_t start;              /* [start, start + size); size 0: sizeless */
	const char *name;            /* libdwfl's string table, or F_PLT */
	uint32_t size;               /* larger functions are cut at 4 GiB */
	uint16_t rank;               /* among aliases, lower is better */
	uint16_t flags;
};

static uint64_t fend(const struct fsym *s)
{
	return s->start + s->size;
}

struct cslot {
	uint64_t vaddr;
	int32_t idx;                 /* into v; -1: no symbol; -2: unused */
};

/* a file as fstat tells it, to know it again in a later run */
struct sym_ident {
	uint64_t dev, ino, size;
	int64_t mtime_s, mtime_ns, ctime_s, ctime_ns;
};

static void ident_of(const struct stat *st, struct sym_ident *id)
{
	memset(id, 0, sizeof(*id));
	id->dev = st->st_dev;
	id->ino = st->st_ino;
	id->size = (uint64_t)st->st_size;
	id->mtime_s = st->st_mtim.tv_sec;
	id->mtime_ns = st->st_mtim.tv_nsec;
	id->ctime_s = st->st_ctim.tv_sec;
	id->ctime_ns = st->st_ctim.tv_nsec;
}

struct nsym_bin {
	Dwfl_Callbacks cb;           /* libdwfl keeps a pointer to it */
	char *debuginfo_path;        /* cb.debuginfo_path points here */
	char *given_debug;           /* a debug file named by the caller (fetched) */
	Dwfl *dwfl;
	Dwfl_Module *mod;
	char *path;
	char *base;
	bool loaded, debug_file;
	bool own_symtab;             /* the binary has a .symtab of its own */
	struct fsym *v;              /* every function symbol, by address */
	struct hmap disp;            /* v index -> name as shown, made on first use */
	size_t n, cap;
	uint32_t *prim;              /* v index of the best of each (start, end) */
	int32_t *parent;             /* prim index of the enclosing symbol, or -1 */
	size_t nprim;
	struct cslot *cache;
	struct sym_ident ident;      /* the binary's, from fstat at open */
	bool ident_ok;               /* a regular file with a link: its symbols may be kept */
	char *blob;                  /* the names of kept symbols (sym_cache_get), or NULL */
};

static const char *basename_of(const char *path)
{
	const char *slash = strrchr(path, '/');

	path = slash ? slash + 1 : path;
	return *path ? path : "?";
}

/* e_type from the ELF header in `h` (EI_NIDENT + 2 bytes) */
static unsigned elf_type(const unsigned char *h)
{
	return h[EI_DATA] == ELFDATA2MSB ? (unsigned)h[EI_NIDENT] << 8 | h[EI_NIDENT + 1]
					 : (unsigned)h[EI_NIDENT + 1] << 8 | h[EI_NIDENT];
}

/* Does the ELF file open at fd carry this build-id? */
static bool has_build_id(int fd, const unsigned char *id, int len)
{
	Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	const void *got = NULL;
	bool same = e && dwelf_elf_gnu_build_id(e, &got) == len && !memcmp(got, id, (size_t)len);

	elf_end(e);
	return same;
}

/* A debug file by its link name (.gnu_debuglink, else the binary's name +
 * ".debug") along the search path `search`, in libdwfl's syntax: each entry
 * ("+" or "-" before it is libdwfl's CRC switch, ignored: a binary with a
 * build-id is checked against it) is the binary's own directory when empty,
 * a directory under it when relative, and a root the binary's directory is
 * appended to when absolute.  -1: none. */
static int find_by_link(Dwfl_Module *mod, const char *search, const char *file_name,
			const char *link, char **out)
{
	const unsigned char *id = NULL;
	GElf_Addr va;
	int idlen = dwfl_module_build_id(mod, &id, &va);
	char *real = file_name ? realpath(file_name, NULL) : NULL, *slash, dflt[NAME_MAX + 8];
	char cand[PATH_MAX];
	struct stat self, st;
	int fd = -1;

	if (!real || !(slash = strrchr(real, '/')) || stat(real, &self))
		goto out;
	*slash = 0; /* real: the directory, "" for / */
	if (!link) {
		snprintf(dflt, sizeof(dflt), "%.*s.debug", NAME_MAX, slash + 1);
		link = dflt;
	}
	for (const char *e = search; fd < 0 && e; e = strchr(e, ':') ? strchr(e, ':') + 1 : NULL) {
		size_t n = strcspn(e, ":");
		const char *d = e;
		int w;

		if (n && (*d == '+' || *d == '-'))
			d++, n--;
		if (!n)
			w = snprintf(cand, sizeof(cand), "%s/%s", real, link);
		else if (*d != '/')
			w = snprintf(cand, sizeof(cand), "%s/%.*s/%s", real, (int)n, d, link);
		else
			w = snprintf(cand, sizeof(cand), "%.*s%s/%s", (int)n, d, real, link);
		if (w < 0 || (size_t)w >= sizeof(cand) || (fd = open(cand, O_RDONLY | O_CLOEXEC)) < 0)
			continue;
		/* not the binary itself, and the one it was built with */
		if (fstat(fd, &st) || (st.st_dev == self.st_dev && st.st_ino == self.st_ino) ||
		    (idlen > 0 && !has_build_id(fd, id, idlen))) {
			close(fd);
			fd = -1;
		}
	}
	if (fd >= 0 && !(*out = strdup(cand))) {
		close(fd);
		fd = -1;
	}
out:
	free(real);
	return fd;
}

/* A binary's separate debug file, unless the caller named one: by build-id
 * under the search path's absolute entries, else by its debug link.  Not
 * libdwfl's standard search: its last resort asks debuginfod itself, which
 * makes libdw load libdebuginfod and libcurl's forty-odd libraries into
 * any run that names a binary without local debug files (7 MB of RSS, the
 * dynamic loader's work); debuginfod is asked by dbgfetch, off the main
 * path, and only when DEBUGINFOD_URLS is set. */
static int find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
			  const char *file_name, const char *debuglink_file, GElf_Word debuglink_crc,
			  char **debuginfo_file_name)
{
	struct nsym_bin *b = *userdata;
	int fd;

	if (b && b->given_debug) {
		fd = open(b->given_debug, O_RDONLY | O_CLOEXEC);
		if (fd >= 0)
			*debuginfo_file_name = strdup(b->given_debug);
		return fd;
	}
	fd = dwfl_build_id_find_debuginfo(mod, userdata, modname, base, file_name, debuglink_file,
					  debuglink_crc, debuginfo_file_name);
	if (fd >= 0)
		return fd;
	errno = 0;
	return find_by_link(mod, b && b->debuginfo_path ? b->debuginfo_path : ":.debug:/usr/lib/debug",
			    file_name, debuglink_file, debuginfo_file_name);
}

struct nsym_bin *nsym_open(int fd, const char *path, const char *debuginfo_path, char *err,
			   size_t errlen)
{
	return nsym_open_debug(fd, path, debuginfo_path, NULL, err, errlen);
}

struct nsym_bin *nsym_open_debug(int fd, const char *path, const char *debuginfo_path,
				 const char *debug_file, char *err, size_t errlen)
{
	void **userdata = NULL;
	unsigned char h[EI_NIDENT + 2];
	struct nsym_bin *b = NULL;
	struct stat by_path, by_fd;
	char fdname[64];
	const char *file_name;
	ssize_t got;
	size_t len;
	int dfd = -1;

	if (!path)
		path = "";
	got = fd < 0 ? -1 : pread(fd, h, sizeof(h), 0);
	if (got < 0) {
		set_err(err, errlen, "%s: cannot read: %s", path, fd < 0 ? "no file" : strerror(errno));
		return NULL;
	}
	if (got == 0) {
		set_err(err, errlen, "%s: empty file", path);
		return NULL;
	}
	if ((size_t)got < sizeof(h) || memcmp(h, ELFMAG, SELFMAG)) {
		set_err(err, errlen, "%s: not an ELF file", path);
		return NULL;
	}
	if (elf_type(h) != ET_EXEC && elf_type(h) != ET_DYN) {
		set_err(err, errlen, "%s: ELF type %u is not an executable or shared object", path,
			 elf_type(h));
		return NULL;
	}
	if (!(b = calloc(1, sizeof(*b))) || !(b->path = strdup(path)) ||
	    !(b->base = strdup(basename_of(path))) ||
	    (debuginfo_path && !(b->debuginfo_path = strdup(debuginfo_path))) ||
	    (!debuginfo_path && prefix_debug_path(path, &b->debuginfo_path)) ||
	    (debug_file && !(b->given_debug = strdup(debug_file)))) {
		set_err(err, errlen, "%s: out of memory", path);
		goto fail;
	}
	len = strlen(b->base);
	if (len > 10 && !strcmp(b->base + len - 10, " (deleted)"))
		b->base[len - 10] = 0;
	if (fstat(fd, &by_fd) == 0 && S_ISREG(by_fd.st_mode) && by_fd.st_nlink > 0) {
		ident_of(&by_fd, &b->ident);
		b->ident_ok = true;
	}
	if ((dfd = fcntl(fd, F_DUPFD_CLOEXEC, 3)) < 0) {
		set_err(err, errlen, "%s: dup: %s", path, strerror(errno));
		goto fail;
	}
	/* libdwfl takes the file name for .gnu_debuglink lookups (its directory,
	 * and realpath() of it); the fd is what it reads.  When `path` is not
	 * this very file here (another mount namespace, deleted), give it the
	 * fd's /proc name: realpath() of that is the kernel's name of the file. */
	if (path[0] && stat(path, &by_path) == 0 && fstat(dfd, &by_fd) == 0 &&
	    by_path.st_dev == by_fd.st_dev && by_path.st_ino == by_fd.st_ino) {
		file_name = path;
	} else {
		snprintf(fdname, sizeof(fdname), "/proc/self/fd/%d", dfd);
		file_name = fdname;
	}
	b->cb.find_elf = dwfl_build_id_find_elf;
	b->cb.find_debuginfo = find_debuginfo;
	b->cb.section_address = dwfl_offline_section_address;
	b->cb.debuginfo_path = b->debuginfo_path ? &b->debuginfo_path : NULL;
	if (!(b->dwfl = dwfl_begin(&b->cb))) {
		set_err(err, errlen, "%s: %s", path, dwfl_errmsg(-1));
		goto fail;
	}
	b->mod = dwfl_report_elf(b->dwfl, b->base, file_name, dfd, 0, true);
	if (!b->mod) {
		/* libdwfl closes a descriptor it was given only on success
		 * (in dwfl_end); on failure it is still ours */
		set_err(err, errlen, "%s: %s", path, dwfl_errmsg(-1));
		goto fail;
	}
	dfd = -1;
	/* find_debuginfo's userdata: this nsym_bin */
	dwfl_module_info(b->mod, &userdata, NULL, NULL, NULL, NULL, NULL, NULL);
	if (userdata)
		*userdata = b;
	if (dwfl_report_end(b->dwfl, NULL, NULL) != 0) {
		set_err(err, errlen, "%s: %s", path, dwfl_errmsg(-1));
		goto fail;
	}
	return b;
fail:
	if (dfd >= 0)
		close(dfd);
	nsym_close(b);
	return NULL;
}

void nsym_close(struct nsym_bin *b)
{
	if (!b)
		return;
	if (b->dwfl)
		dwfl_end(b->dwfl);
	hmap_for_each(&b->disp, s)
		if (b->v[*(uint32_t *)s->key].flags & F_OWN_DISP)
			free(s->val);
	hmap_free(&b->disp, NULL);
	for (size_t i = 0; i < b->n && !b->blob; i++)
		if (b->v[i].flags & F_PLT)
			free((char *)b->v[i].name);
	free(b->v);
	free(b->blob);
	free(b->prim);
	free(b->parent);
	free(b->cache);
	free(b->debuginfo_path);
	free(b->given_debug);
	free(b->base);
	free(b->path);
	free(b);
}

/* ---- loading ----------------------------------------------------------- */

static bool add_sym(struct nsym_bin *b, uint64_t start, uint64_t size, const char *name,
		    uint32_t rank, uint32_t flags)
{
	if (b->n == b->cap) {
		size_t ncap = b->cap ? b->cap * 2 : 1024;
		struct fsym *v = realloc(b->v, ncap * sizeof(*v));

		if (!v)
			return false;
		b->v = v;
		b->cap = ncap;
	}
	if (size > UINT32_MAX)
		size = UINT32_MAX;
	if (start + size < start)
		size = UINT64_MAX - start;
	b->v[b->n].start = start;
	b->v[b->n].size = (uint32_t)size;
	b->v[b->n].name = name;
	b->v[b->n].rank = (uint16_t)rank;
	b->v[b->n].flags = (uint16_t)flags;
	b->n++;
	return true;
}

/* Of several names for one function, the public one: function before
 * untyped label, fewer leading underscores (getpid over __getpid and
 * __GI___getpid), unversioned, then global, weak, local. */
static uint32_t rank_of(const char *name, const GElf_Sym *sym)
{
	size_t us = strspn(name, "_");
	int bind = GELF_ST_BIND(sym->st_info);

	return (GELF_ST_TYPE(sym->st_info) == STT_NOTYPE ? 1u << 12 : 0) +
	       (uint32_t)(us < 15 ? us : 15) * 8 + (strchr(name, '@') ? 4 : 0) +
	       (bind == STB_GLOBAL ? 0 : bind == STB_WEAK ? 1 : bind == STB_LOCAL ? 2 : 3);
}

/* Is section `shndx` of `elf` code?  (Flags survive in a debug file, where
 * the section itself is NOBITS.) */
static bool in_code(Elf *elf, GElf_Word shndx)
{
	GElf_Shdr sh;
	Elf_Scn *scn = elf ? elf_getscn(elf, shndx) : NULL;

	return scn && gelf_getshdr(scn, &sh) && (sh.sh_flags & SHF_EXECINSTR);
}

struct got_slot {
	uint64_t addr;
	const char *name;
};

static int cmp_slot(const void *a, const void *c)
{
	const struct got_slot *x = a, *y = c;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* x86-64 PLT stubs have no symbols.  Name each one "foo@plt" as objdump
 * does: the stub's "jmp *disp(%rip)" (ff 25) goes through a GOT slot, and
 * the JUMP_SLOT or GLOB_DAT relocation of that slot names foo.  Covers
 * .plt, .plt.sec (IBT) and .plt.got. */
static void add_plt(struct nsym_bin *b, Elf *e)
{
	GElf_Ehdr eh;
	size_t shstrndx, nslots = 0, cap = 0;
	struct got_slot *slots = NULL;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	if (!gelf_getehdr(e, &eh) || eh.e_machine != EM_X86_64 || elf_getshdrstrndx(e, &shstrndx))
		return;
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr dsh;
		Elf_Scn *dynsym;
		Elf_Data *rd, *dd;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_RELA || !sh.sh_entsize ||
		    !(dynsym = elf_getscn(e, sh.sh_link)) || !gelf_getshdr(dynsym, &dsh) ||
		    dsh.sh_type != SHT_DYNSYM || !(rd = elf_getdata(scn, NULL)) ||
		    !(dd = elf_getdata(dynsym, NULL)))
			continue;
		/* 64-bit relocations as libelf gives them (in our byte order)
		 * are read in place: .rela.dyn of a shared library is mostly
		 * RELATIVE ones (23,000 in libpython 3.12), and a gelf_getrela for
		 * each was 0.7 ms of every merged start */
		const Elf64_Rela *raw = rd->d_type == ELF_T_RELA && eh.e_ident[EI_CLASS] == ELFCLASS64 &&
					sh.sh_entsize == sizeof(Elf64_Rela) ? rd->d_buf : NULL;

		for (size_t i = 0; i < rd->d_size / sh.sh_entsize && i < INT32_MAX; i++) {
			GElf_Rela r;
			GElf_Sym sym;
			const char *name;
			size_t type;

			if (raw) {
				if (ELF64_R_TYPE(raw[i].r_info) != R_X86_64_JUMP_SLOT &&
				    ELF64_R_TYPE(raw[i].r_info) != R_X86_64_GLOB_DAT)
					continue;
				r = raw[i];
			} else if (!gelf_getrela(rd, (int)i, &r)) {
				break;
			}
			type = GELF_R_TYPE(r.r_info);
			if ((type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT) ||
			    GELF_R_SYM(r.r_info) > INT32_MAX ||
			    !gelf_getsym(dd, (int)GELF_R_SYM(r.r_info), &sym) ||
			    !(name = elf_strptr(e, dsh.sh_link, sym.st_name)) || !*name)
				continue;
			if (nslots == cap) {
				size_t ncap = cap ? cap * 2 : 256;
				struct got_slot *s = realloc(slots, ncap * sizeof(*s));

				if (!s)
					goto out;
				slots = s;
				cap = ncap;
			}
			slots[nslots].addr = r.r_offset;
			slots[nslots++].name = name;
		}
	}
	if (!nslots)
		goto out;
	qsort(slots, nslots, sizeof(*slots), cmp_slot);
	scn = NULL;
	while ((scn = elf_nextscn(e, scn))) {
		const char *sname;
		Elf_Data *d;
		uint64_t esz;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
		    !(sh.sh_flags & SHF_EXECINSTR) ||
		    !(sname = elf_strptr(e, shstrndx, sh.sh_name)) ||
		    (strcmp(sname, ".plt") && strcmp(sname, ".plt.sec") && strcmp(sname, ".plt.got")) ||
		    !(d = elf_getdata(scn, NULL)) || !d->d_buf)
			continue;
		esz = sh.sh_entsize == 8 || sh.sh_entsize == 16 ? sh.sh_entsize :
		      !strcmp(sname, ".plt.got") ? 8 : 16;
		for (uint64_t off = 0; off + esz <= d->d_size; off += esz) {
			const unsigned char *p = (const unsigned char *)d->d_buf + off;

			for (uint64_t j = 0; j + 6 <= esz; j++) {
				int32_t disp;
				struct got_slot key, *hit;
				char *label;

				if (p[j] != 0xff || p[j + 1] != 0x25)
					continue;
				memcpy(&disp, p + j + 2, 4); /* x86-64: little-endian */
				key.addr = sh.sh_addr + off + j + 6 + (uint64_t)(int64_t)disp;
				if (!(hit = bsearch(&key, slots, nslots, sizeof(*slots), cmp_slot)))
					continue;
				if (asprintf(&label, "%s@plt", hit->name) < 0)
					break;
				if (!add_sym(b, sh.sh_addr + off, esz, label, 1u << 13, F_PLT)) {
					free(label);
					goto out;
				}
				break;
			}
		}
	}
out:
	free(slots);
}

static int cmp_fsym(const void *a, const void *c)
{
	const struct fsym *x = a, *y = c;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	if (x->size != y->size) /* the enclosing one first */
		return x->size > y->size ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* v[0..n) in cmp_fsym's order: a radix sort by start (qsort's comparisons
 * were a third of loading a symbol table, 0.5-0.8 ms for each of
 * libpython's and libc's 7,000 symbols at every merged start), then each
 * run of one start (aliases, a function and its labels) by the rest.  The
 * bytes all starts share are skipped. */
static void sort_fsyms(struct fsym *v, size_t n)
{
	struct fsym *tmp = n > 1 ? malloc(n * sizeof(*tmp)) : NULL, *src = v, *dst = tmp;

	if (!tmp) {
		if (n > 1)
			qsort(v, n, sizeof(*v), cmp_fsym);
		return;
	}
	for (unsigned shift = 0; shift < 64; shift += 8) {
		size_t at[256] = { 0 }, sum = 0;

		for (size_t i = 0; i < n; i++)
			at[(src[i].start >> shift) & 255]++;
		if (at[(src[0].start >> shift) & 255] == n)
			continue;
		for (unsigned k = 0; k < 256; k++) {
			size_t c = at[k];

			at[k] = sum;
			sum += c;
		}
		for (size_t i = 0; i < n; i++)
			dst[at[(src[i].start >> shift) & 255]++] = src[i];
		dst = src;
		src = src == v ? tmp : v;
	}
	if (src != v)
		memcpy(v, src, n * sizeof(*v));
	free(tmp);
	for (size_t i = 0, j; i < n; i = j) {
		for (j = i + 1; j < n && v[j].start == v[i].start; j++)
			;
		if (j - i > 1)
			qsort(v + i, j - i, sizeof(*v), cmp_fsym);
	}
}

/* Index for address lookups: one entry (the best-ranked) per distinct
 * (start, end), and for each the innermost sized entry enclosing its start
 * (a stack of open ranges while sweeping by address). */
static bool build_index(struct nsym_bin *b)
{
	size_t depth = 0;
	uint32_t *stack;

	if (!b->n)
		return true;
	b->prim = malloc(b->n * sizeof(*b->prim));
	b->parent = malloc(b->n * sizeof(*b->parent));
	stack = malloc(b->n * sizeof(*stack));
	if (!b->prim || !b->parent || !stack) {
		free(stack);
		return false;
	}
	for (size_t i = 0; i < b->n; i++) {
		const struct fsym *s = &b->v[i];

		if (b->nprim && b->v[b->prim[b->nprim - 1]].start == s->start &&
		    b->v[b->prim[b->nprim - 1]].size == s->size)
			continue; /* an alias */
		while (depth && fend(&b->v[b->prim[stack[depth - 1]]]) <= s->start)
			depth--;
		b->parent[b->nprim] = depth ? (int32_t)stack[depth - 1] : -1;
		if (s->size)
			stack[depth++] = (uint32_t)b->nprim;
		b->prim[b->nprim++] = (uint32_t)i;
	}
	free(stack);
	return true;
}

static const char EVAL_LOOP[] = "_PyEval_EvalFrameDefault";
static const char EVAL_PART[] = "_PyEval_EvalFrameDefault.part";

static int starts_function(void *ctx, uint64_t addr)
{
	const struct nsym_bin *b = ctx;

	for (size_t i = 0; i < b->n; i++)
		if (b->v[i].start == addr && !(b->v[i].flags & F_PLT))
			return 1;
	return 0;
}

/* The eval loop's split parts that no symbol names (a stripped interpreter:
 * evalparts.h) get a symbol of their own, EVAL_PART, so that their frames
 * are the eval loop's.  A part that any symbol covers keeps that name. */
static void add_eval_parts(struct nsym_bin *b, Elf *elf)
{
	struct evalpart parts[8];
	const struct fsym *loop = NULL;
	size_t n;

	for (size_t i = 0; i < b->n && !loop; i++)
		if (b->v[i].size && !(b->v[i].flags & F_PLT) &&
		    !strncmp(b->v[i].name, EVAL_LOOP, sizeof(EVAL_LOOP) - 1) &&
		    (!b->v[i].name[sizeof(EVAL_LOOP) - 1] || b->v[i].name[sizeof(EVAL_LOOP) - 1] == '@'))
			loop = &b->v[i];
	/* a symbol table names the split parts itself (GCC's local
	 * "_PyEval_EvalFrameDefault.cold"): the disassembly, some ms of every
	 * start, is only for a binary without one */
	if (!loop || b->own_symtab || b->debug_file)
		return;
	n = evalparts_find(elf, loop->start, fend(loop), starts_function, b, parts, 8);
	for (size_t k = 0; k < n; k++) {
		bool covered = false;

		for (size_t i = 0; i < b->n && !covered; i++)
			covered = b->v[i].start <= parts[k].start && parts[k].start < fend(&b->v[i]);
		if (!covered && !add_sym(b, parts[k].start, parts[k].end - parts[k].start, EVAL_PART,
					 1u << 13, 0))
			return;
	}
}

/* ---- kept between runs -------------------------------------------------
 *
 * A binary's symbols as load() leaves them (sorted, PLT stubs and the eval
 * loop's parts added) are kept in /run/pyperf-bpf (runcache.h) as
 * "sym-<hash>.syms" for the next run, which reads them instead: copying them
 * from libdwfl and sorting them was ~2.5 ms of a merged 1-s record of
 * python3.12 (libpython's symbols and libc's), more with a disassembly of
 * the eval loop.  A file is named by our own build, the binary's identity
 * (fstat at open), the debug file libdwfl found for it (its identity, or
 * none: a -dbg package installed since is another name) and libdwfl's
 * count of its symbols; it repeats all of that, with a checksum, and is
 * checked whole before use (sorted, every name inside). */
#define SYM_MAGIC "pyperfS1"
#define SYM_CACHE_MAX_ONE (8u << 20)
#define SYM_CACHE_MAX_ALL (32u << 20)

struct sym_head {
	char magic[8];
	char builder[48];
	struct sym_ident bin, debug; /* debug all 0: none */
	int64_t dwfl_n;
	uint32_t own_symtab, debug_file;
	uint64_t count, names_len, sum; /* what follows: count sym_recs, then names */
};

struct sym_rec {
	uint64_t start;
	uint32_t size;
	uint16_t rank, flags;
	uint32_t name; /* offset in the names */
	uint32_t pad;
};

/* the head (count, names_len, sum 0) and file name of b's kept symbols;
 * false: they cannot be kept */
static bool sym_key(const struct nsym_bin *b, int64_t n, const char *debug, struct sym_head *h,
		    char *name, size_t len)
{
	const char *builder = runcache_builder();
	struct stat st;

	if (!b->ident_ok || !builder[0])
		return false;
	memset(h, 0, sizeof(*h));
	memcpy(h->magic, SYM_MAGIC, 8);
	snprintf(h->builder, sizeof(h->builder), "%s", builder);
	h->bin = b->ident;
	if (debug) {
		if (stat(debug, &st) || !S_ISREG(st.st_mode))
			return false;
		ident_of(&st, &h->debug);
	}
	h->dwfl_n = n;
	h->own_symtab = b->own_symtab;
	h->debug_file = b->debug_file;
	snprintf(name, len, "sym-%016llx.syms",
		 (unsigned long long)runcache_hash(RUNCACHE_HASH0, h, sizeof(*h)));
	return true;
}

/* b->v from the kept file; false: none, or not sound */
static bool sym_cache_get(struct nsym_bin *b, int64_t n, const char *debug)
{
	struct sym_head want, got;
	const struct sym_rec *r;
	struct fsym *v = NULL;
	char name[32], path[64], *buf = NULL, *blob = NULL;
	const char *names;
	struct stat st;
	bool ok = false;
	size_t size = 0;
	int fd;

	if (!sym_key(b, n, debug, &want, name, sizeof(name)))
		return false;
	snprintf(path, sizeof(path), RUNCACHE_DIR "/%s", name);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) < 0)
		return false;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & 022) || st.st_size < (off_t)sizeof(got) || st.st_size > SYM_CACHE_MAX_ONE)
		goto out;
	size = (size_t)st.st_size;
	if (!(buf = runcache_map(fd, size)))
		goto out;
	memcpy(&got, buf, sizeof(got));
	want.count = got.count;
	want.names_len = got.names_len;
	want.sum = got.sum;
	if (memcmp(&want, &got, sizeof(got)) || !got.count || !got.names_len ||
	    got.count > (size - sizeof(got)) / sizeof(*r) ||
	    got.names_len != size - sizeof(got) - got.count * sizeof(*r) ||
	    runcache_hash(RUNCACHE_HASH0, buf + sizeof(got), size - sizeof(got)) != got.sum)
		goto out;
	r = (const struct sym_rec *)(void *)(buf + sizeof(got));
	names = (const char *)(r + got.count);
	if (names[got.names_len - 1] || !(v = malloc(got.count * sizeof(*v))))
		goto out;
	if (!(blob = malloc(got.names_len)))
		goto out;
	memcpy(blob, names, got.names_len);
	for (size_t i = 0; i < got.count; i++) {
		if (r[i].name >= got.names_len)
			goto out;
		v[i] = (struct fsym){ .start = r[i].start, .size = r[i].size, .rank = r[i].rank,
				      .flags = r[i].flags & F_PLT, .name = blob + r[i].name };
		if (i && cmp_fsym(&v[i - 1], &v[i]) > 0)
			goto out;
	}
	b->v = v;
	b->n = b->cap = got.count;
	b->blob = blob;
	futimens(fd, NULL); /* its last use, for trimming */
	ok = true;
out:
	if (!ok) {
		free(v);
		free(blob);
	}
	runcache_unmap(buf, size);
	close(fd);
	return ok;
}

/* Keep b's symbols, just loaded, for the next run. */
static void sym_cache_put(struct nsym_bin *b, int64_t n, const char *debug)
{
	struct sym_head h;
	struct sym_rec *r;
	size_t names_len = 0, size, at = 0;
	char name[32], *buf, *names;

	if (!b->n || !sym_key(b, n, debug, &h, name, sizeof(name)))
		return;
	for (size_t i = 0; i < b->n; i++)
		names_len += strlen(b->v[i].name) + 1;
	if (names_len > SYM_CACHE_MAX_ONE || b->n > SYM_CACHE_MAX_ONE / sizeof(*r))
		return;
	size = sizeof(h) + b->n * sizeof(*r) + names_len;
	if (size > SYM_CACHE_MAX_ONE || !runcache_ready() || !(buf = malloc(size)))
		return;
	r = (struct sym_rec *)(void *)(buf + sizeof(h));
	names = (char *)(r + b->n);
	for (size_t i = 0; i < b->n; i++) {
		size_t len = strlen(b->v[i].name) + 1;

		r[i] = (struct sym_rec){ .start = b->v[i].start, .size = b->v[i].size,
					 .rank = b->v[i].rank, .flags = b->v[i].flags & F_PLT,
					 .name = (uint32_t)at };
		memcpy(names + at, b->v[i].name, len);
		at += len;
	}
	h.count = b->n;
	h.names_len = names_len;
	h.sum = runcache_hash(RUNCACHE_HASH0, buf + sizeof(h), size - sizeof(h));
	memcpy(buf, &h, sizeof(h));
	runcache_trim("sym-", SYM_CACHE_MAX_ALL, size);
	runcache_write(name, buf, size);
	free(buf);
}

/* Copy the function symbols once. */
static void load(struct nsym_bin *b)
{
	const char *debug = NULL;
	Dwarf_Addr bias = 0;
	bool whole = true;
	Elf *elf;
	int n;

	b->loaded = true;
	if (!b->mod || !(elf = dwfl_module_getelf(b->mod, &bias)))
		return;
	for (Elf_Scn *scn = NULL; (scn = elf_nextscn(elf, scn));) {
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_SYMTAB)
			b->own_symtab = true;
	}
	n = dwfl_module_getsymtab(b->mod);
	if (n > 0) {
		dwfl_module_info(b->mod, NULL, NULL, NULL, NULL, NULL, NULL, &debug);
		b->debug_file = debug != NULL;
	}
	if (sym_cache_get(b, n, debug))
		goto sorted;
	for (int i = 1; i < n; i++) {
		GElf_Sym sym;
		GElf_Addr addr;
		GElf_Word shndx = SHN_UNDEF;
		Elf *symelf = NULL;
		const char *name = dwfl_module_getsym_info(b->mod, i, &sym, &addr, &shndx, &symelf, NULL);
		int type;

		if (!name || !*name || shndx == SHN_UNDEF || shndx >= SHN_LORESERVE)
			continue;
		type = GELF_ST_TYPE(sym.st_info);
		/* untyped symbols only as labels in code, not ARM/AArch64
		 * mapping symbols ($x, $d) or assembler locals */
		if (type != STT_FUNC && type != STT_GNU_IFUNC &&
		    (type != STT_NOTYPE || name[0] == '$' || !strncmp(name, ".L", 2) ||
		     !in_code(symelf, shndx)))
			continue;
		/* st_value, not libdwfl's addr: a separate debug file is linked at
		 * the binary's own addresses, but libdwfl shifts its symbols by
		 * the difference of the two files' first PT_LOAD, which patchelf
		 * (Nix, conda, relocated interpreters) makes non-zero by adding a
		 * segment below the others.  Equal to addr - bias otherwise. */
		if (!add_sym(b, sym.st_value, sym.st_size, name, rank_of(name, &sym), 0)) {
			whole = false;
			break;
		}
	}
	add_plt(b, elf);
	add_eval_parts(b, elf);
	sort_fsyms(b->v, b->n);
	if (whole)
		sym_cache_put(b, n, debug);
sorted:
	if (!build_index(b)) {
		/* out of memory: no names rather than wrong ones */
		free(b->prim);
		free(b->parent);
		b->prim = NULL;
		b->parent = NULL;
		b->nprim = 0;
	}
	if ((b->cache = malloc(sizeof(*b->cache) << CACHE_BITS)))
		for (size_t i = 0; i < (size_t)1 << CACHE_BITS; i++)
			b->cache[i].idx = -2;
}

/* ---- lookups ----------------------------------------------------------- */

/* v index of the symbol covering vaddr, or -1 */
static int32_t find(const struct nsym_bin *b, uint64_t vaddr)
{
	size_t lo = 0, hi = b->nprim;
	int32_t k;
	const struct fsym *s;

	while (lo < hi) { /* first entry starting after vaddr */
		size_t mid = lo + (hi - lo) / 2;

		if (b->v[b->prim[mid]].start <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return -1;
	/* the innermost sized symbol around vaddr is the last one starting at
	 * or before it, or one of those enclosing that one */
	k = (int32_t)lo - 1;
	for (int walk = 0; k >= 0 && walk < MAX_WALK; walk++, k = b->parent[k]) {
		s = &b->v[b->prim[k]];
		if (vaddr < fend(s))
			return (int32_t)b->prim[k];
	}
	/* a sizeless symbol names only its own address (sorted last among
	 * those starting there) */
	s = &b->v[b->prim[lo - 1]];
	if (s->start == vaddr && !s->size)
		return (int32_t)b->prim[lo - 1];
	return -1;
}

static int32_t find_cached(struct nsym_bin *b, uint64_t vaddr)
{
	struct cslot *c;
	int32_t idx;

	if (!b->loaded)
		load(b);
	if (!b->cache)
		return find(b, vaddr);
	c = &b->cache[(vaddr * UINT64_C(0x9e3779b97f4a7c15)) >> (64 - CACHE_BITS)];
	if (c->idx != -2 && c->vaddr == vaddr)
		return c->idx;
	idx = find(b, vaddr);
	c->vaddr = vaddr;
	c->idx = idx;
	return idx;
}

/* The name to show: version dropped ("memcpy@GLIBC_2.2.5"), then
 * demangled if it is a C++ name ("_Znwm@plt" shows as
 * "operator new(unsigned long)@plt").  Made once per symbol. */
static const char *display(struct nsym_bin *b, uint32_t idx)
{
	struct fsym *s = &b->v[idx];
	const char *name = s->name, *suffix = "", *shown;
	char *plain = NULL, *d = NULL, *out = NULL;
	size_t at;

	if ((shown = hmap_get(&b->disp, &idx, sizeof(idx))))
		return shown;
	at = strcspn(name, "@");
	if (at > 0 && name[at]) {
		if (s->flags & F_PLT)
			suffix = name + at;
		plain = strndup(name, at); /* NULL (out of memory): shown raw */
	}
	if (plain)
		name = plain;
	d = demangle(name);
	if (d && *suffix) {
		if (asprintf(&out, "%s%s", d, suffix) < 0)
			out = NULL;
		free(d);
	} else if (d) {
		out = d;
	} else if (plain && !*suffix) {
		out = plain;
		plain = NULL;
	}
	free(plain);
	if (!out) {
		(void)hmap_put(&b->disp, &idx, sizeof(idx), (char *)s->name);
		return s->name;
	}
	if (hmap_put(&b->disp, &idx, sizeof(idx), out)) {
		free(out); /* out of memory: shown as it is spelt */
		return s->name;
	}
	s->flags |= F_OWN_DISP;
	return out;
}

/* path made absolute with dir (when relative and dir is known), into buf */
static const char *with_dir(const char *path, const char *dir, char *buf, size_t len)
{
	if (!path || path[0] == '/' || !dir)
		return path;
	if ((size_t)snprintf(buf, len, "%s/%s", dir, path) >= len)
		return NULL;
	return buf;
}

int nsym_source(struct nsym_bin *b, uint64_t vaddr, struct nsym_loc *out, int max)
{
	static char names[8][4096];
	Dwfl_Line *l = b && b->mod && max > 0 ? dwfl_module_getsrc(b->mod, vaddr) : NULL;
	Dwarf_Die *cu, *scopes = NULL;
	Dwarf_Files *files = NULL;
	Dwarf_Attribute a;
	Dwarf_Addr bias;
	const char *src, *dir;
	int ln = 0, n = 0, ns;
	size_t nfiles = 0;

	if (max > 8)
		max = 8;
	if (!l || !(src = dwfl_lineinfo(l, NULL, &ln, NULL, NULL, NULL)) || ln <= 0)
		return 0;
	dir = dwfl_line_comp_dir(l);
	if (!(out[n].file = with_dir(src, dir, names[n], sizeof(names[n]))))
		return 0;
	out[n++].line = ln;
	/* the inlined calls around vaddr, innermost first: each one's call
	 * site is a line of the function it was inlined into.  libdw gives
	 * the innermost inlined instance's scopes with vaddr, then those
	 * around each instance with dwarf_getscopes_die. */
	if (!(cu = dwfl_module_addrdie(b->mod, vaddr, &bias)) ||
	    (ns = dwarf_getscopes(cu, vaddr - bias, &scopes)) <= 0)
		return n;
	dwarf_getsrcfiles(cu, &files, &nfiles);
	for (int depth = 0; depth < 16 && n < max && files; depth++) {
		Dwarf_Word fidx, cline;
		Dwarf_Die inl;
		int i = depth ? 1 : 0; /* below the first, [0] is the instance itself */

		while (i < ns && dwarf_tag(&scopes[i]) != DW_TAG_inlined_subroutine)
			i++;
		if (i >= ns)
			break;
		inl = scopes[i];
		if (dwarf_attr(&inl, DW_AT_call_file, &a) && !dwarf_formudata(&a, &fidx) &&
		    dwarf_attr(&inl, DW_AT_call_line, &a) && !dwarf_formudata(&a, &cline) &&
		    fidx < nfiles && cline && cline <= INT32_MAX) {
			src = dwarf_filesrc(files, fidx, NULL, NULL);
			if ((out[n].file = with_dir(src, dir, names[n], sizeof(names[n]))))
				out[n++].line = (int)cline;
		}
		free(scopes);
		scopes = NULL;
		if ((ns = dwarf_getscopes_die(&inl, &scopes)) <= 0)
			break;
	}
	free(scopes);
	return n;
}

int nsym_name(struct nsym_bin *b, uint64_t vaddr, char *buf, size_t len, uint64_t *sym_start)
{
	int32_t idx = b ? find_cached(b, vaddr) : -1;

	if (idx < 0) {
		if (buf && len)
			snprintf(buf, len, "%s+0x%" PRIx64, b ? b->base : "?", vaddr);
		if (sym_start)
			*sym_start = vaddr;
		return 0;
	}
	if (buf && len)
		snprintf(buf, len, "%s", display(b, (uint32_t)idx));
	if (sym_start)
		*sym_start = b->v[idx].start;
	return 1;
}

int nsym_lookup(struct nsym_bin *b, const char *name, uint64_t *start, uint64_t *end)
{
	const struct fsym *best = NULL;
	int best_score = 0;
	size_t len;

	if (!b || !name)
		return -1;
	if (!b->loaded)
		load(b);
	len = strlen(name);
	for (size_t i = 0; i < b->n; i++) {
		const struct fsym *s = &b->v[i];
		int score;

		/* "name" or "name@VERSION"; a PLT label only when asked for */
		if (strncmp(s->name, name, len) ||
		    (s->name[len] && (s->name[len] != '@' || (s->flags & F_PLT))))
			continue;
		/* exact spelling, then sized, then rank */
		score = (s->name[len] ? 0 : 2) + (s->size > 0);
		if (!best || score > best_score || (score == best_score && s->rank < best->rank)) {
			best = s;
			best_score = score;
		}
	}
	if (!best)
		return -1;
	if (start)
		*start = best->start;
	if (end)
		*end = fend(best);
	return 0;
}

const char *nsym_module(const struct nsym_bin *b)
{
	return b ? b->base : "?";
}

int nsym_wants_debug_file(struct nsym_bin *b)
{
	if (!b)
		return 0;
	if (!b->loaded)
		load(b);
	return b->mod && !b->debug_file && !b->own_symtab;
}

int nsym_kept(struct nsym_bin *b)
{
	if (!b)
		return 0;
	if (!b->loaded)
		load(b);
	return b->blob != NULL;
}

int nsym_has_debug_file(struct nsym_bin *b)
{
	if (!b)
		return 0;
	if (!b->loaded)
		load(b);
	return b->debug_file;
}
