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
#include "pdict.h"
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
	struct pdict d;              /* strings, functions, mappings, locations */
	struct vec samples, labels;
	struct hmap sample_ids;      /* (pid, tid, location ids) -> Sample * */
	bool failed;
};

static int64_t str_id(struct builder *b, const char *s)
{
	return pdict_str(&b->d, s);
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
	x->n_value = mode_desc(b->c->mode)->quantity == MQ_SAMPLES ? 2
		     : mode_desc(b->c->mode)->report == MR_LIVE ? 4 : 1;
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
	if (mode_desc(b->c->mode)->report == MR_LIVE) { /* Go's heap profile: alloc_*, then inuse_* */
		x->value[0] += (int64_t)s->heap[PROFILE_HEAP_ALLOC_OBJECTS];
		x->value[1] += (int64_t)s->heap[PROFILE_HEAP_ALLOC_BYTES];
		x->value[2] += (int64_t)s->heap[PROFILE_HEAP_INUSE_OBJECTS];
		x->value[3] += (int64_t)s->count;
		return;
	}
	x->value[0] += (int64_t)s->count;
	if (mode_desc(b->c->mode)->quantity == MQ_SAMPLES)
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
	for (size_t i = 0; i < n && !b->failed && !b->d.failed; i++) {
		size_t k = out_sample_locs(b->c, v[i], locs, OUT_MAX_LOCS);

		for (size_t j = 0; j < k; j++)
			ids[j] = (uint64_t)pdict_loc(&b->d, &locs[j]);
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

void *pdict_to_pprof(const struct pdict *d, struct Perftools__Profiles__Profile *p)
{
	size_t nf = d->nfunc - 1, nl = d->nloc - 1, nm = d->nmap - 1;
	size_t size = nf * (sizeof(Function) + sizeof(Function *)) +
		      nl * (sizeof(Location) + sizeof(Line) + sizeof(Line *) + sizeof(Location *)) +
		      nm * (sizeof(Mapping) + sizeof(Mapping *));
	char *mem = malloc(size ? size : 1), *at = mem;
	Function *f = (Function *)at, **fp;
	Location *l;
	Line *ln, **lnp;
	Mapping *m, **mp;
	Location **lp;

	if (!mem)
		return NULL;
	l = (Location *)(f + nf);
	ln = (Line *)(l + nl);
	m = (Mapping *)(ln + nl);
	fp = (Function **)(m + nm);
	lp = (Location **)(fp + nf);
	lnp = (Line **)(lp + nl);
	mp = (Mapping **)(lnp + nl);
	for (size_t i = 0; i < nf; i++) { /* pprof's ids are the dictionary's indices */
		const struct pdict_func *x = &d->func[i + 1];

		perftools__profiles__function__init(&f[i]);
		f[i].id = i + 1;
		f[i].name = f[i].system_name = x->name;
		f[i].filename = x->file;
		f[i].start_line = x->start_line;
		fp[i] = &f[i];
	}
	for (size_t i = 0; i < nm; i++) {
		const struct pdict_map *x = &d->map[i + 1];

		perftools__profiles__mapping__init(&m[i]);
		m[i].id = i + 1;
		m[i].memory_start = x->bin->lo;
		m[i].memory_limit = x->bin->hi;
		m[i].file_offset = x->bin->offset;
		m[i].filename = x->file;
		m[i].build_id = x->build_id;
		m[i].has_functions = m[i].has_filenames = true;
		mp[i] = &m[i];
	}
	for (size_t i = 0; i < nl; i++) {
		const struct pdict_loc *x = &d->loc[i + 1];

		perftools__profiles__location__init(&l[i]);
		perftools__profiles__line__init(&ln[i]);
		ln[i].function_id = (uint64_t)x->func;
		ln[i].line = x->line;
		lnp[i] = &ln[i];
		l[i].id = i + 1;
		l[i].mapping_id = (uint64_t)x->map;
		l[i].address = x->addr;
		l[i].n_line = 1;
		l[i].line = &lnp[i];
		lp[i] = &l[i];
	}
	p->n_function = nf;
	p->function = fp;
	p->n_location = nl;
	p->location = lp;
	p->n_mapping = nm;
	p->mapping = mp;
	p->n_string_table = d->nstr;
	p->string_table = d->str;
	return mem;
}

static int encode(struct builder *b, FILE *f, int64_t period)
{
	void *tables;
	int rc;
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
	if (b->failed || b->d.failed) {
		errno = ENOMEM;
		return -1;
	}
	if (mode_desc(b->c->mode)->quantity == MQ_SAMPLES) { /* [samples, count], [cpu, ns] */
		p.n_sample_type = 2;
		p.sample_type = types;
	} else if (mode_desc(b->c->mode)->report == MR_LIVE) {
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
	p.time_nanos = (int64_t)b->c->start_unix_ns;
	p.duration_nanos = (int64_t)(b->c->duration_s * 1e9);
	p.n_comment = 1;
	p.comment = &comment;
	if (!(tables = pdict_to_pprof(&b->d, &p))) {
		errno = ENOMEM;
		return -1;
	}
	rc = pack_and_write(f, &p.base);
	free(tables);
	return rc;
}

int out_pprof(FILE *f, const struct out_ctx *c)
{
	struct builder b;
	int64_t period = c->freq > 0 ? 1000000000LL / c->freq : 0;
	int rc;

	memset(&b, 0, sizeof(b));
	b.c = c;
	if (pdict_init(&b.d)) {
		errno = ENOMEM;
		return -1;
	}
	add_samples(&b, period);
	rc = b.failed || b.d.failed ? (errno = ENOMEM, -1) : encode(&b, f, period);
	pdict_free(&b.d);
	free_vec(&b.samples, free_sample);
	free_vec(&b.labels, free);
	hmap_free(&b.sample_ids, NULL);
	return rc;
}
