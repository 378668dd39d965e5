/* out_pprof.c - the profile as pprof: a gzip-compressed perftools.profiles
 * Profile (user/output/profile.proto, encoded by protobuf-c), which Google's pprof,
 * Pyroscope, Grafana, Parca and most continuous-profiling backends read.
 *
 * Values per sample: samples/count and cpu/nanoseconds (count x period, the
 * period being 1e9 / frequency); in --mode wall or offcpu one value, the
 * time itself, wall/nanoseconds or offcpu/nanoseconds.  Each (stack, thread) sample carries the
 * labels pid, thread_id (numbers), thread_name and process_name (strings),
 * and for a process in a container container_pid (its pid there),
 * container_id and pod_uid (Kubernetes);
 * the process and thread are labels rather than root frames.  Locations are
 * leaf first: kernel frames (file "[kernel.kallsyms]"), the merged Python and
 * native frames, then a "[truncated]" or "[incomplete]" root frame when the
 * walk missed the root side, as in the folded output.
 *
 * Python frames: one Function per code object (name: qualified name, file,
 * first line), one Location per (function, current line), or per function
 * with line 0 under --no-lines.  Native frames: one Function per symbol, one
 * Location per symbol whose address is the symbol's ELF virtual address, in a
 * Mapping per binary (its path, GNU build-id and the ELF address span of its
 * executable segments).  The addresses are ELF addresses, not run-time ones,
 * because one profile may span processes that loaded the binary at different
 * places; the Mappings say has_functions, so readers use our names.
 * Samples that become identical (--no-lines) are merged.  Strings that are
 * not UTF-8 get U+FFFD for the bad bytes, as proto3 requires.  Ids and string
 * indices are given in the order of the (stable) sample list and the gzip
 * header has no time stamp, so equal profiles give equal files. */
#include "out_common.h"
#include "profile.pb-c.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

typedef Perftools__Profiles__Profile Profile;
typedef Perftools__Profiles__ValueType ValueType;
typedef Perftools__Profiles__Sample Sample;
typedef Perftools__Profiles__Label Label;
typedef Perftools__Profiles__Mapping Mapping;
typedef Perftools__Profiles__Location Location;
typedef Perftools__Profiles__Line Line;
typedef Perftools__Profiles__Function Function;

#define NLABELS 7 /* 4, and 3 of a process in a container */

/* a growing array of pointers */
struct vec {
	void **v;
	size_t n, cap;
};

static int vec_push(struct vec *a, void *p)
{
	if (!p)
		return -1;
	if (a->n == a->cap) {
		size_t cap = a->cap ? a->cap * 2 : 64;
		void **v = realloc(a->v, cap * sizeof(*v));

		if (!v) {
			free(p);
			return -1;
		}
		a->v = v;
		a->cap = cap;
	}
	a->v[a->n++] = p;
	return 0;
}

struct builder {
	const struct out_ctx *c;
	struct vec strings;          /* char *, owned */
	struct hmap string_ids;      /* string -> index + 1 */
	struct vec funcs, locs, maps, samples, labels;
	struct hmap func_ids;        /* key -> id */
	struct hmap loc_ids;
	struct hmap map_ids;         /* struct binary * -> id */
	struct hmap sample_ids;      /* (pid, tid, location ids) -> Sample * */
	bool failed;
};

/* a malloc'd copy of s, made UTF-8 (out_utf8_clean) */
static char *utf8_copy(const char *s)
{
	char *out = malloc(strlen(s) * 3 + 1);

	if (out)
		out_utf8_clean(out, s);
	return out;
}

/* the string table index of s, added on first use */
static int64_t str_id(struct builder *b, const char *s)
{
	size_t len = strlen(s) + 1; /* with the NUL: "" is a key too */
	uintptr_t id = (uintptr_t)hmap_get(&b->string_ids, s, len);

	if (id)
		return (int64_t)id - 1;
	id = b->strings.n + 1;
	if (vec_push(&b->strings, utf8_copy(s)) ||
	    hmap_put(&b->string_ids, s, len, (void *)id)) {
		b->failed = true;
		return 0;
	}
	return (int64_t)id - 1;
}

/* the id of l's Function (kind, name, file, first line), made on first use */
static uint64_t func_id(struct builder *b, const struct out_loc *l)
{
	size_t klen = out_func_key_len(l);
	char *key = malloc(klen);
	uintptr_t id;
	Function *f;

	if (!key) {
		b->failed = true;
		return 0;
	}
	out_func_key(key, l);
	id = (uintptr_t)hmap_get(&b->func_ids, key, klen);
	if (!id) {
		f = malloc(sizeof(*f));
		if (f) {
			perftools__profiles__function__init(f);
			f->id = b->funcs.n + 1;
			f->name = f->system_name = str_id(b, l->name);
			f->filename = str_id(b, l->file);
			f->start_line = l->firstline;
		}
		id = b->funcs.n + 1;
		if (vec_push(&b->funcs, f) || hmap_put(&b->func_ids, key, klen, (void *)id))
			b->failed = true;
	}
	free(key);
	return id;
}

static uint64_t map_id(struct builder *b, const struct binary *bin)
{
	uintptr_t id = (uintptr_t)hmap_get(&b->map_ids, &bin, sizeof(bin));
	Mapping *m;

	if (id)
		return id;
	m = malloc(sizeof(*m));
	if (m) {
		perftools__profiles__mapping__init(m);
		m->id = b->maps.n + 1;
		m->memory_start = bin->lo;
		m->memory_limit = bin->hi;
		m->file_offset = bin->offset;
		m->filename = str_id(b, bin->path);
		m->build_id = str_id(b, bin->build_id);
		m->has_functions = m->has_filenames = true;
	}
	id = b->maps.n + 1;
	if (vec_push(&b->maps, m) || hmap_put(&b->map_ids, &bin, sizeof(bin), (void *)id))
		b->failed = true;
	return id;
}

struct loc_key {
	uint64_t func;
	int64_t line;
	uint64_t mapping, address;
};

/* a Location and its one Line, in one allocation (freed as the Location) */
struct loc_box {
	Location loc;
	Line *linep;
	Line line;
};

static uint64_t loc_id(struct builder *b, uint64_t func, int64_t line, uint64_t mapping,
		       uint64_t address)
{
	struct loc_key k = { func, line, mapping, address };
	uintptr_t id = (uintptr_t)hmap_get(&b->loc_ids, &k, sizeof(k));
	struct loc_box *x;

	if (id)
		return id;
	id = b->locs.n + 1;
	x = malloc(sizeof(*x));
	if (x) {
		perftools__profiles__location__init(&x->loc);
		perftools__profiles__line__init(&x->line);
		x->line.function_id = func;
		x->line.line = line;
		x->linep = &x->line;
		x->loc.id = id;
		x->loc.mapping_id = mapping;
		x->loc.address = address;
		x->loc.n_line = 1;
		x->loc.line = &x->linep;
	}
	if (vec_push(&b->locs, x) || hmap_put(&b->loc_ids, &k, sizeof(k), (void *)id))
		b->failed = true;
	return id;
}

/* the id of location l: native ones in a known binary carry its mapping */
static uint64_t location(struct builder *b, const struct out_loc *l)
{
	return loc_id(b, func_id(b, l), l->line, l->bin ? map_id(b, l->bin) : 0, l->addr);
}

static Label *new_label(struct builder *b, const char *key, const char *str, int64_t num)
{
	Label *l = malloc(sizeof(*l));

	if (!l || vec_push(&b->labels, l)) {
		b->failed = true;
		return NULL;
	}
	perftools__profiles__label__init(l);
	l->key = str_id(b, key);
	if (str)
		l->str = str_id(b, str);
	else
		l->num = num;
	return l;
}

static Sample *new_sample(struct builder *b, const struct psample *s, const uint64_t *ids,
			  size_t n)
{
	const struct pproc *pp = hmap_get(&b->c->prof->procs, &s->stack->pid, sizeof(int));
	Sample *x = calloc(1, sizeof(*x));

	if (!x || vec_push(&b->samples, x)) {
		b->failed = true;
		return NULL;
	}
	perftools__profiles__sample__init(x);
	x->location_id = malloc((n + 1) * sizeof(*x->location_id));
	x->value = calloc(4, sizeof(*x->value));
	x->label = malloc(NLABELS * sizeof(*x->label));
	if (!x->location_id || !x->value || !x->label) {
		b->failed = true;
		return x;
	}
	memcpy(x->location_id, ids, n * sizeof(*ids));
	x->n_location_id = n;
	x->n_value = b->c->mode == MODE_CPU ? 2 : b->c->mode == MODE_LEAKS ? 4 : 1;
	x->label[0] = new_label(b, "pid", NULL, s->stack->pid);
	x->label[1] = new_label(b, "thread_id", NULL, s->tid);
	x->label[2] = new_label(b, "thread_name", profile_thread_name(b->c->prof, s->tid), 0);
	x->label[3] = new_label(b, "process_name", profile_proc_comm(pp), 0);
	x->n_label = 4;
	/* a container's process: where it runs, as fleet profilers label it */
	if (pp && pp->ns_pid && pp->ns_pid != pp->pid)
		x->label[x->n_label++] = new_label(b, "container_pid", NULL, pp->ns_pid);
	if (pp && pp->ctr.id[0])
		x->label[x->n_label++] = new_label(b, "container_id", pp->ctr.id, 0);
	if (pp && pp->ctr.pod[0])
		x->label[x->n_label++] = new_label(b, "pod_uid", pp->ctr.pod, 0);
	if (b->failed)
		x->n_label = 0;
	return x;
}

/* count s under its locations, merged with an identical earlier sample */
static void add_sample(struct builder *b, const struct psample *s, uint64_t *key, size_t n,
		       int64_t period)
{
	size_t klen = (n + 2) * sizeof(*key);
	Sample *x;

	key[n] = s->stack->pid;
	key[n + 1] = s->tid;
	x = hmap_get(&b->sample_ids, key, klen);
	if (!x) {
		x = new_sample(b, s, key, n);
		if (!x || b->failed || hmap_put(&b->sample_ids, key, klen, x)) {
			b->failed = true;
			return;
		}
	}
	if (b->c->mode == MODE_LEAKS) { /* Go's heap profile: alloc_*, then inuse_* */
		x->value[0] += (int64_t)s->heap[PROFILE_HEAP_ALLOC_OBJECTS];
		x->value[1] += (int64_t)s->heap[PROFILE_HEAP_ALLOC_BYTES];
		x->value[2] += (int64_t)s->heap[PROFILE_HEAP_INUSE_OBJECTS];
		x->value[3] += (int64_t)s->count;
		return;
	}
	x->value[0] += (int64_t)s->count;
	if (b->c->mode == MODE_CPU)
		x->value[1] += (int64_t)s->count * period;
}

static void add_samples(struct builder *b, int64_t period)
{
	size_t n;
	struct psample **v = out_samples(b->c, &n);
	struct out_loc *locs = malloc(OUT_MAX_LOCS * sizeof(*locs));
	uint64_t *ids = malloc((OUT_MAX_LOCS + 2) * sizeof(*ids)); /* + the sample key's pid, tid */

	if (!v || !ids || !locs) {
		b->failed = true;
		goto out;
	}
	for (size_t i = 0; i < n && !b->failed; i++) {
		size_t k = out_sample_locs(b->c, v[i], locs, OUT_MAX_LOCS);

		for (size_t j = 0; j < k; j++)
			ids[j] = location(b, &locs[j]);
		add_sample(b, v[i], ids, k, period);
	}
out:
	free(locs);
	free(ids);
	free(v);
}

static void free_vec(struct vec *a, void (*fn)(void *))
{
	for (size_t i = 0; i < a->n; i++)
		fn(a->v[i]);
	free(a->v);
}

static void free_sample(void *p)
{
	Sample *s = p;

	free(s->location_id);
	free(s->value);
	free(s->label);
	free(s);
}

static int pack_and_write(FILE *f, const ProtobufCMessage *m)
{
	size_t len = protobuf_c_message_get_packed_size(m);
	uint8_t *buf = malloc(len + 1);
	int rc;

	if (!buf) {
		errno = ENOMEM;
		return -1;
	}
	protobuf_c_message_pack(m, buf);
	rc = out_gzip(f, buf, len);
	free(buf);
	return rc;
}

static int encode(struct builder *b, FILE *f, int64_t period)
{
	Profile p = PERFTOOLS__PROFILES__PROFILE__INIT;
	ValueType count = PERFTOOLS__PROFILES__VALUE_TYPE__INIT;
	ValueType cpu = PERFTOOLS__PROFILES__VALUE_TYPE__INIT;
	ValueType *types[2] = { &count, &cpu };
	ValueType aobj = PERFTOOLS__PROFILES__VALUE_TYPE__INIT;
	ValueType aspace = PERFTOOLS__PROFILES__VALUE_TYPE__INIT;
	ValueType iobj = PERFTOOLS__PROFILES__VALUE_TYPE__INIT;
	ValueType *heap[4] = { &aobj, &aspace, &iobj, &cpu };
	int64_t comment = str_id(b, b->c->title ? b->c->title : "pyperf-bpf");

	count.type = str_id(b, "samples");
	count.unit = str_id(b, "count");
	cpu.type = str_id(b, mode_type(b->c->mode));
	cpu.unit = str_id(b, mode_unit(b->c->mode));
	aobj.type = str_id(b, "alloc_objects");
	aobj.unit = str_id(b, "count");
	aspace.type = str_id(b, "alloc_space");
	aspace.unit = str_id(b, "bytes");
	iobj.type = str_id(b, "inuse_objects");
	iobj.unit = str_id(b, "count");
	if (b->failed) {
		errno = ENOMEM;
		return -1;
	}
	if (b->c->mode == MODE_CPU) {
		p.n_sample_type = 2;
		p.sample_type = types;
	} else if (b->c->mode == MODE_LEAKS) {
		p.n_sample_type = 4;
		p.sample_type = heap;
	} else { /* the quantity itself: [wall or offcpu, nanoseconds], [faults, bytes] */
		p.n_sample_type = 1;
		p.sample_type = types + 1;
	}
	p.default_sample_type = cpu.type;
	p.period_type = &cpu;
	p.period = mode_desc(b->c->mode)->periodic ? period : 0;
	p.n_sample = b->samples.n;
	p.sample = (Sample **)b->samples.v;
	p.n_mapping = b->maps.n;
	p.mapping = (Mapping **)b->maps.v;
	p.n_location = b->locs.n;
	p.location = (Location **)b->locs.v;
	p.n_function = b->funcs.n;
	p.function = (Function **)b->funcs.v;
	p.n_string_table = b->strings.n;
	p.string_table = (char **)b->strings.v;
	p.time_nanos = (int64_t)b->c->start_unix_ns;
	p.duration_nanos = (int64_t)(b->c->duration_s * 1e9);
	p.n_comment = 1;
	p.comment = &comment;
	return pack_and_write(f, &p.base);
}

int out_pprof(FILE *f, const struct out_ctx *c)
{
	struct builder b;
	int64_t period = c->freq > 0 ? 1000000000LL / c->freq : 0;
	int rc;

	memset(&b, 0, sizeof(b));
	b.c = c;
	str_id(&b, ""); /* index 0 is the empty string */
	add_samples(&b, period);
	rc = b.failed ? (errno = ENOMEM, -1) : encode(&b, f, period);
	free_vec(&b.strings, free);
	free_vec(&b.funcs, free);
	free_vec(&b.locs, free);
	free_vec(&b.maps, free);
	free_vec(&b.samples, free_sample);
	free_vec(&b.labels, free);
	hmap_free(&b.string_ids, NULL);
	hmap_free(&b.func_ids, NULL);
	hmap_free(&b.loc_ids, NULL);
	hmap_free(&b.map_ids, NULL);
	hmap_free(&b.sample_ids, NULL);
	return rc;
}
