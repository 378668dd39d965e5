/* minbtf.c - the kernel's BTF cut down to what our CO-RE relocations read.
 *
 * Why: libbpf relocates every start against the kernel's whole BTF (5.5 MB
 * on 6.18), which it reads, copies and indexes: about a fifth of a short
 * run's CPU and a third of its RSS.  Our programs read a few dozen fields
 * of a dozen kernel types.
 *
 * How: the object's .BTF.ext lists each relocation (a root type of the
 * object's own BTF, an access string "0:3:1", a kind).  Each is matched
 * here against the kernel's BTF the way libbpf matches it (relo_core.c:
 * candidates are the types of the root's name without its "___flavour",
 * named members are looked up by name, through anonymous structs and
 * unions).  What a match touches is kept: the root types, the members on
 * each access path (at their own bit offsets, in a struct of the original
 * size), and the member types as far as libbpf's compatibility checks look
 * at them (a pointer's target never: any two pointers match; a struct or
 * union's size and name, not its members, unless a path goes into it).  A
 * relocation that fails against the whole BTF (a field this kernel lacks,
 * asked with bpf_core_field_exists) fails against the cut one too: the
 * candidates are all kept, only without what no path reaches.
 *
 * Kinds cut for: field offset, size and existence, type size and existence,
 * local type ids.  Any other kind, or a type the cut cannot copy, gives -1
 * and the caller keeps the whole BTF (nothing is ever relocated against a
 * cut it might get wrong).  bpftool's `gen min_core_btf` does the same
 * offline; this runs where the profiler does, once per boot and object. */
#include "minbtf.h"
#include "runcache.h"
#include "errmsg.h"

#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* .BTF.ext as compilers write it (libbpf's libbpf_internal.h has the same
 * layout; no installed header does) */
struct ext_header {
	uint16_t magic;
	uint8_t version, flags;
	uint32_t hdr_len;
	uint32_t func_info_off, func_info_len, line_info_off, line_info_len;
	uint32_t core_relo_off, core_relo_len;
};

struct core_relo {
	uint32_t insn_off, type_id, access_str_off, kind;
};

enum { KEEP_NONE, KEEP_SHALLOW, KEEP_MEMBERS };

struct gen {
	const struct btf *local, *kernel;
	struct btf *out;
	uint32_t ntypes;
	uint8_t *keep;       /* per kernel type: KEEP_* */
	uint8_t **members;   /* per kept composite: which members (by index) */
	int *ids;            /* kernel type -> its id in out (0: not yet) */
	int index_int;       /* out's array index type */
	uint32_t *bucket;    /* the kernel's named types by their essential name's */
	uint32_t *chain;     /* hash (NBUCKETS heads, then next per type; 0 ends) */
	char *err;
	size_t errlen;
};

/* the section `name` of an ELF64 object in memory */
static const void *elf_section(const void *elf, size_t len, const char *name, size_t *size)
{
	const Elf64_Ehdr *eh = elf;
	const Elf64_Shdr *sh, *names;

	if (len < sizeof(*eh) || memcmp(eh->e_ident, ELFMAG, SELFMAG) ||
	    eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_shentsize != sizeof(*sh) ||
	    eh->e_shoff > len || eh->e_shnum > (len - eh->e_shoff) / sizeof(*sh) ||
	    eh->e_shstrndx >= eh->e_shnum)
		return NULL;
	sh = (const Elf64_Shdr *)((const char *)elf + eh->e_shoff);
	names = &sh[eh->e_shstrndx];
	if (names->sh_offset > len || names->sh_size > len - names->sh_offset)
		return NULL;
	for (unsigned i = 0; i < eh->e_shnum; i++) {
		const char *n = (const char *)elf + names->sh_offset + sh[i].sh_name;

		if (sh[i].sh_name >= names->sh_size || sh[i].sh_type == SHT_NOBITS ||
		    strnlen(n, names->sh_size - sh[i].sh_name) == names->sh_size - sh[i].sh_name ||
		    strcmp(n, name))
			continue;
		if (sh[i].sh_offset > len || sh[i].sh_size > len - sh[i].sh_offset)
			return NULL;
		*size = sh[i].sh_size;
		return (const char *)elf + sh[i].sh_offset;
	}
	return NULL;
}

/* a name's length without libbpf's "___flavour" suffix */
static size_t essential_len(const char *name)
{
	const char *f = strstr(name, "___");

	return f ? (size_t)(f - name) : strlen(name);
}

#define NBUCKETS 65536

static uint32_t name_hash(const char *s, size_t n)
{
	uint32_t h = 2166136261u;

	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 16777619u;
	return h & (NBUCKETS - 1);
}

/* one pass over the kernel's types: each relocation then looks at its
 * candidates only (a scan of all per relocation was 0.14 s a first start) */
static int index_names(struct gen *g)
{
	g->bucket = calloc(NBUCKETS, sizeof(*g->bucket));
	g->chain = calloc(g->ntypes, sizeof(*g->chain));
	if (!g->bucket || !g->chain)
		return -1;
	for (uint32_t id = g->ntypes - 1; id >= 1; id--) {
		const char *n = btf__name_by_offset(g->kernel, btf__type_by_id(g->kernel, id)->name_off);
		uint32_t h;

		if (!n || !*n)
			continue;
		h = name_hash(n, essential_len(n));
		g->chain[id] = g->bucket[h];
		g->bucket[h] = id;
	}
	return 0;
}

static const struct btf_type *skip_mods(const struct btf *b, uint32_t id, uint32_t *out)
{
	const struct btf_type *t = btf__type_by_id(b, id);

	while (t && (btf_is_mod(t) || btf_is_typedef(t))) {
		id = t->type;
		t = btf__type_by_id(b, id);
	}
	*out = id;
	return t;
}

#define fail(g, ...) (set_err((g)->err, (g)->errlen, __VA_ARGS__), -1)

static bool kinds_compat(const struct btf_type *a, const struct btf_type *b)
{
	return btf_kind(a) == btf_kind(b) || (btf_is_any_enum(a) && btf_is_any_enum(b));
}

static int keep_member(struct gen *g, uint32_t id, unsigned i)
{
	const struct btf_type *t = btf__type_by_id(g->kernel, id);

	if (!g->members[id] && !(g->members[id] = calloc(btf_vlen(t), 1)))
		return -1;
	g->members[id][i] = 1;
	g->keep[id] = KEEP_MEMBERS;
	return 0;
}

/* libbpf's member search: `name` among id's members, through anonymous
 * ones; the members on the way are kept.  1 found (*next: its type), 0 not,
 * -1 out of memory. */
static int match_member(struct gen *g, uint32_t id, const char *name, uint32_t *next, int depth)
{
	const struct btf_type *t = skip_mods(g->kernel, id, &id);
	const struct btf_member *m;

	if (!t || !btf_is_composite(t) || depth > 32)
		return 0;
	m = btf_members(t);
	for (unsigned i = 0; i < btf_vlen(t); i++, m++) {
		const char *n = btf__name_by_offset(g->kernel, m->name_off);
		int r;

		if (!n || !*n) {
			r = match_member(g, m->type, name, next, depth + 1);
			if (r)
				return r < 0 || keep_member(g, id, i) ? -1 : 1;
		} else if (!strcmp(n, name)) {
			*next = m->type;
			return keep_member(g, id, i) ? -1 : 1;
		}
	}
	return 0;
}

/* follow the local access path `raw` (raw[0] indexes the root pointer)
 * from the kernel candidate `cand`, keeping what it reaches */
static int follow(struct gen *g, uint32_t local_root, uint32_t cand, const int *raw, int nraw)
{
	uint32_t lid, kid;

	skip_mods(g->local, local_root, &lid);
	skip_mods(g->kernel, cand, &kid);
	for (int i = 1; i < nraw; i++) {
		const struct btf_type *lt = btf__type_by_id(g->local, lid);
		const struct btf_type *kt = btf__type_by_id(g->kernel, kid);

		if (!lt || !kt)
			return 0;
		if (btf_is_composite(lt)) {
			const struct btf_member *m;
			const char *n;

			if (raw[i] < 0 || raw[i] >= btf_vlen(lt))
				return 0;
			m = btf_members(lt) + raw[i];
			n = btf__name_by_offset(g->local, m->name_off);
			if (n && *n) { /* a named member moves the kernel side too */
				uint32_t next;
				int r = match_member(g, kid, n, &next, 0);

				if (r <= 0)
					return r;
				skip_mods(g->kernel, next, &kid);
			}
			skip_mods(g->local, m->type, &lid);
		} else if (btf_is_array(lt)) {
			if (!btf_is_array(kt))
				return 0;
			skip_mods(g->local, btf_array(lt)->type, &lid);
			skip_mods(g->kernel, btf_array(kt)->type, &kid);
		} else {
			return 0;
		}
	}
	if (g->keep[kid] == KEEP_NONE)
		g->keep[kid] = KEEP_SHALLOW;
	return 0;
}

static int relocation(struct gen *g, const struct core_relo *r)
{
	const struct btf_type *lt = btf__type_by_id(g->local, r->type_id), *base;
	const char *spec = btf__name_by_offset(g->local, r->access_str_off);
	const char *name = lt ? btf__name_by_offset(g->local, lt->name_off) : NULL;
	int raw[64], nraw = 0;
	uint32_t lid;
	size_t len;

	switch (r->kind) {
	case BPF_CORE_TYPE_ID_LOCAL:
		return 0; /* the object's own BTF answers it */
	case BPF_CORE_FIELD_BYTE_OFFSET:
	case BPF_CORE_FIELD_BYTE_SIZE:
	case BPF_CORE_FIELD_EXISTS:
	case BPF_CORE_TYPE_SIZE:
	case BPF_CORE_TYPE_EXISTS:
		break;
	default:
		return fail(g, "a CO-RE relocation of kind %u is not cut for", r->kind);
	}
	if (!lt || !spec || !name || !*name)
		return fail(g, "a CO-RE relocation of an anonymous or unknown type (%u)", r->type_id);
	base = skip_mods(g->local, r->type_id, &lid);
	if (r->kind == BPF_CORE_TYPE_SIZE || r->kind == BPF_CORE_TYPE_EXISTS) {
		/* libbpf compares these types deeply except for structs and
		 * unions, whose members it leaves alone */
		if (!base || !btf_is_composite(base))
			return fail(g, "a type relocation of %s (kind %u) is not cut for", name,
				    btf_kind(base ? base : lt));
	}
	while (spec && *spec) {
		char *end;
		long v = strtol(spec, &end, 10);

		if (end == spec || nraw == (int)(sizeof(raw) / sizeof(raw[0])))
			return fail(g, "a CO-RE access string %s is not understood", spec);
		raw[nraw++] = (int)v;
		spec = *end == ':' ? end + 1 : end;
	}
	len = essential_len(name);
	for (uint32_t id = g->bucket[name_hash(name, len)]; id; id = g->chain[id]) {
		const struct btf_type *kt = btf__type_by_id(g->kernel, id);
		const char *kn = btf__name_by_offset(g->kernel, kt->name_off);

		if (!kn || essential_len(kn) != len || strncmp(kn, name, len) || !kinds_compat(lt, kt))
			continue;
		if (g->keep[id] == KEEP_NONE)
			g->keep[id] = KEEP_SHALLOW;
		if (r->kind != BPF_CORE_TYPE_SIZE && r->kind != BPF_CORE_TYPE_EXISTS &&
		    follow(g, r->type_id, id, raw, nraw) < 0)
			return fail(g, "out of memory");
	}
	return 0;
}

static int emit(struct gen *g, uint32_t id);

/* a member's type as libbpf's checks see it: modifiers and typedefs gone */
static int emit_member_type(struct gen *g, uint32_t id)
{
	skip_mods(g->kernel, id, &id);
	return emit(g, id);
}

static int emit_composite(struct gen *g, uint32_t id, const struct btf_type *t, const char *name)
{
	const struct btf_member *m = btf_members(t);
	unsigned n = btf_vlen(t);
	int *types = calloc(n ? n : 1, sizeof(*types)), out;

	if (!types)
		return -1;
	/* member types first: btf__add_field appends to the type added last */
	for (unsigned i = 0; i < n && g->keep[id] == KEEP_MEMBERS; i++)
		if (g->members[id][i] && (types[i] = emit_member_type(g, m[i].type)) < 0) {
			free(types);
			return -1;
		}
	out = btf_is_struct(t) ? btf__add_struct(g->out, name, t->size)
			       : btf__add_union(g->out, name, t->size);
	for (unsigned i = 0; out > 0 && i < n && g->keep[id] == KEEP_MEMBERS; i++)
		if (g->members[id][i] &&
		    btf__add_field(g->out, btf__name_by_offset(g->kernel, m[i].name_off), types[i],
				   btf_member_bit_offset(t, i), btf_member_bitfield_size(t, i)))
			out = -1;
	free(types);
	return out;
}

/* the kernel type `id` in the cut, added once */
static int emit(struct gen *g, uint32_t id)
{
	const struct btf_type *t;
	const char *name;
	int out;

	if (id == 0)
		return 0;
	if (g->ids[id])
		return g->ids[id];
	t = btf__type_by_id(g->kernel, id);
	name = btf__name_by_offset(g->kernel, t->name_off);
	switch (btf_kind(t)) {
	case BTF_KIND_INT:
		if (btf_int_offset(t) || btf_int_bits(t) != t->size * 8)
			return fail(g, "a bit-field integer %s (%u) is not cut for", name, id);
		out = btf__add_int(g->out, name, t->size, btf_int_encoding(t));
		break;
	case BTF_KIND_PTR: /* any two pointers match */
		out = btf__add_ptr(g->out, 0);
		break;
	case BTF_KIND_ARRAY: {
		int elem = emit_member_type(g, btf_array(t)->type);

		if (elem < 0)
			return -1;
		if (!g->index_int && (g->index_int = btf__add_int(g->out, "unsigned int", 4, 0)) < 0)
			return -1;
		out = btf__add_array(g->out, g->index_int, elem, btf_array(t)->nelems);
		break;
	}
	case BTF_KIND_STRUCT:
	case BTF_KIND_UNION:
		out = emit_composite(g, id, t, name);
		break;
	case BTF_KIND_ENUM: /* compared by name and size, values not asked for */
		out = btf__add_enum(g->out, name, t->size);
		break;
	case BTF_KIND_ENUM64:
		out = btf__add_enum64(g->out, name, t->size, btf_kflag(t));
		break;
	case BTF_KIND_FLOAT:
		out = btf__add_float(g->out, name, t->size);
		break;
	case BTF_KIND_FWD:
		out = btf__add_fwd(g->out, name, btf_kflag(t) ? BTF_FWD_UNION : BTF_FWD_STRUCT);
		break;
	case BTF_KIND_TYPEDEF: { /* a root named by its typedef */
		int under = emit(g, t->type);

		if (under < 0)
			return -1;
		out = btf__add_typedef(g->out, name, under);
		break;
	}
	case BTF_KIND_CONST:
	case BTF_KIND_VOLATILE:
	case BTF_KIND_RESTRICT:
	case BTF_KIND_TYPE_TAG:
		out = emit(g, t->type);
		break;
	default:
		return fail(g, "a type of BTF kind %u is not cut for", btf_kind(t));
	}
	if (out < 0)
		return fail(g, "cannot add %s (%u) to the cut BTF", name, id);
	g->ids[id] = out;
	return out;
}

static int relocations(struct gen *g, const void *ext, size_t size)
{
	const struct ext_header *h = ext;
	const char *p, *end;
	uint32_t rec;

	if (size < sizeof(*h) || h->magic != BTF_MAGIC || h->hdr_len < sizeof(*h) ||
	    h->hdr_len > size || h->core_relo_off > size - h->hdr_len ||
	    h->core_relo_len > size - h->hdr_len - h->core_relo_off)
		return fail(g, "the object's .BTF.ext is not understood");
	p = (const char *)ext + h->hdr_len + h->core_relo_off;
	end = p + h->core_relo_len;
	if (end - p < 4)
		return 0; /* no relocations */
	memcpy(&rec, p, 4);
	p += 4;
	if (rec < sizeof(struct core_relo))
		return fail(g, "CO-RE records of %u bytes", rec);
	while (end - p >= 8) {
		uint32_t n;

		memcpy(&n, p + 4, 4);
		p += 8;
		if ((size_t)(end - p) / rec < n)
			return fail(g, "the object's .BTF.ext is cut short");
		for (uint32_t i = 0; i < n; i++, p += rec) {
			struct core_relo r;

			memcpy(&r, p, sizeof(r));
			if (relocation(g, &r))
				return -1;
		}
	}
	return 0;
}

int minbtf_write(const void *elf, size_t elf_len, const char *kernel, const char *out,
		 char *err, size_t errlen)
{
	struct gen g = { .err = err, .errlen = errlen };
	size_t btf_len = 0, ext_len = 0;
	const void *btf_data = elf_section(elf, elf_len, ".BTF", &btf_len);
	const void *ext = elf_section(elf, elf_len, ".BTF.ext", &ext_len);
	struct btf *local = NULL, *kern = NULL;
	int rc = -1;

	if (!btf_data || !ext) {
		set_err(err, errlen, "the BPF object has no .BTF or .BTF.ext");
		return -1;
	}
	local = btf__new(btf_data, (uint32_t)btf_len);
	kern = btf__parse(kernel, NULL);
	if (!local || !kern) {
		set_err(err, errlen, "cannot read %s: %s", !local ? "the object's BTF" : kernel,
			strerror(errno));
		goto out;
	}
	g.local = local;
	g.kernel = kern;
	g.ntypes = btf__type_cnt(kern);
	g.keep = calloc(g.ntypes, 1);
	g.members = calloc(g.ntypes, sizeof(*g.members));
	g.ids = calloc(g.ntypes, sizeof(*g.ids));
	g.out = btf__new_empty();
	if (!g.keep || !g.members || !g.ids || !g.out || index_names(&g)) {
		set_err(err, errlen, "out of memory");
		goto out;
	}
	if (relocations(&g, ext, ext_len))
		goto out;
	for (uint32_t id = 1; id < g.ntypes; id++)
		if (g.keep[id] && emit(&g, id) < 0)
			goto out;
	{
		uint32_t size;
		const void *raw = btf__raw_data(g.out, &size);
		char tmp[4096];
		int fd;

		snprintf(tmp, sizeof(tmp), "%s.%d", out, (int)getpid());
		fd = raw ? open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600) : -1;
		if (fd < 0 || write(fd, raw, size) != (ssize_t)size || close(fd) || rename(tmp, out)) {
			set_err(err, errlen, "cannot write %s: %s", out, strerror(errno));
			if (fd >= 0)
				unlink(tmp);
			goto out;
		}
	}
	rc = 0;
out:
	if (g.members)
		for (uint32_t id = 0; id < g.ntypes; id++)
			free(g.members[id]);
	free(g.members);
	free(g.bucket);
	free(g.chain);
	free(g.keep);
	free(g.ids);
	btf__free(g.out);
	btf__free(kern);
	btf__free(local);
	return rc;
}

/* Which object a cut was made for: a hash of what the cut is made from, the
 * object's types (.BTF) and relocations (.BTF.ext), not of the whole object. */
static uint64_t object_key(const void *elf, size_t elf_len)
{
	size_t btf_len = 0, ext_len = 0;
	const void *btf = elf_section(elf, elf_len, ".BTF", &btf_len);
	const void *ext = elf_section(elf, elf_len, ".BTF.ext", &ext_len);
	uint64_t h = RUNCACHE_HASH0;

	if (!btf || !ext) /* minbtf_write refuses such an object anyway */
		return runcache_hash(h, elf, elf_len);
	h = runcache_hash(h, btf, btf_len);
	h = runcache_hash(h ^ btf_len, ext, ext_len);
	return h ^ ext_len;
}

const char *minbtf_cached(const void *elf, size_t elf_len, const char *kernel, const char *dir,
			  const char *boot, char *path, size_t len, bool verbose)
{
	char err[512];
	struct stat st;

	snprintf(path, len, "%s/min-%s-%016llx.btf", dir, boot,
		 (unsigned long long)object_key(elf, elf_len));
	if (!lstat(path, &st) && S_ISREG(st.st_mode) && st.st_uid == geteuid()) {
		/* under 1 KB to check: one cut short or garbled would fail
		 * every load until the next boot */
		struct btf *b = btf__parse(path, NULL);

		if (b) {
			btf__free(b);
			return path;
		}
		unlink(path);
	}
	if (!minbtf_write(elf, elf_len, kernel, path, err, sizeof(err)))
		return path;
	if (verbose)
		fprintf(stderr, "pyperf-bpf: the kernel's BTF is read whole: %s\n", err);
	return NULL;
}
