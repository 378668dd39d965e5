/* out_otlp.c - the profile as OpenTelemetry profiles (OTLP, the
 * v1development profiles of opentelemetry-proto v1.10.0): one
 * ProfilesData / Export request message (user/output/otlp_profiles.proto,
 * encoded by protobuf-c), uncompressed, as an OpenTelemetry Collector's OTLP
 * receiver and its file exporter take it.
 *
 * Layout.  One ResourceProfiles per process image (pid and exec), whose
 * Resource says what ran: service.name (out_ctx.service_of, else the convention's
 * "unknown_service:" + the executable's name), host.name, process.pid,
 * process.executable.name, process.command_line, and for a process in a
 * container container.id, k8s.pod.uid and pyperf.container.pid (its pid
 * there).  One ScopeProfiles (scope "pyperf-bpf" and its version) with one
 * Profile: a single value per sample, as OTLP wants it: in cpu mode the
 * sample count (sample_type samples/count) with period_type cpu/nanoseconds
 * and the period 1e9 / frequency, as other OTLP profilers send it; in the other
 * modes the quantity itself (wall, offcpu nanoseconds; faults, alloc_space,
 * inuse_space bytes).  Each sample carries the attributes thread.id and
 * thread.name; samples of one stack and thread are one Sample.
 *
 * Every table lives in the request's ProfilesDictionary and is shared by all
 * processes: strings, attributes, functions, mappings, locations and stacks,
 * each added once, entry 0 the zero value.  Locations are leaf first, as in
 * pprof, each with the attribute profile.frame.type: "kernel" (function file
 * "[kernel.kallsyms]"), "cpython" (function: qualified name, file, first
 * line; the Line: the current line, 0 under --no-lines) or "native" (the
 * symbol, in a Mapping of its binary with the attribute
 * process.executable.build_id.gnu, at the symbol's ELF address, as in pprof);
 * "[truncated]" and "[incomplete]" end a stack whose root side was missed.
 * Strings get U+FFFD for bytes that are not UTF-8.  Equal profiles give
 * equal files: indices follow the stable sample order, and the profile_id is
 * a hash of the start time and the process, not random. */
#include "out_common.h"
#include "otlp_profiles.pb-c.h"
#include "pdict.h"
#include "version.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef Otlp__ProfilesRequest Request;
typedef Otlp__ProfilesDictionary Dictionary;
typedef Otlp__ResourceProfiles ResourceProfiles;
typedef Otlp__ScopeProfiles ScopeProfiles;
typedef Otlp__Profile Profile;
typedef Otlp__ValueType ValueType;
typedef Otlp__Sample Sample;
typedef Otlp__Mapping Mapping;
typedef Otlp__Stack Stack;
typedef Otlp__Location Location;
typedef Otlp__Line Line;
typedef Otlp__Function Function;
typedef Otlp__KeyValueAndUnit KeyValueAndUnit;
typedef Otlp__AnyValue AnyValue;
typedef Otlp__KeyValue KeyValue;
typedef Otlp__Resource Resource;
typedef Otlp__Link Link;

/* Every message and array of the request comes from one arena, freed at
 * once; the growing tables are realloc'd arrays of pointers into it. */
struct chunk {
	struct chunk *next;
	size_t used, size;
	max_align_t data[];
};

struct table {
	void **v;
	size_t n, cap;
	struct hmap ids;             /* key -> index + 1 */
};

/* one process image's resource: its samples, merged by (stack, thread) */
struct res {
	int pid;
	uint32_t gen;
	struct table samples;
};

struct builder {
	const struct out_ctx *c;
	struct chunk *arena;
	struct pdict d;              /* strings, functions, mappings, locations */
	struct table attrs, stacks;
	struct table res;            /* pid -> struct res * */
	bool failed;
};

static void *alloc(struct builder *b, size_t size)
{
	struct chunk *k = b->arena;
	void *p;

	size = (size + sizeof(max_align_t) - 1) / sizeof(max_align_t) * sizeof(max_align_t);
	if (!k || k->size - k->used < size) {
		size_t cap = size > 65536 ? size : 65536;

		k = malloc(sizeof(*k) + cap);
		if (!k) {
			b->failed = true;
			return NULL;
		}
		k->next = b->arena;
		k->used = 0;
		k->size = cap;
		b->arena = k;
	}
	p = (char *)k->data + k->used;
	k->used += size;
	memset(p, 0, size);
	return p;
}

/* index of key in t; *fresh says whether it was added now (as NULL, for the
 * caller to fill) */
static int32_t table_index(struct builder *b, struct table *t, const void *key, size_t klen,
			   bool *fresh)
{
	uintptr_t id = (uintptr_t)hmap_get(&t->ids, key, klen);

	*fresh = false;
	if (id)
		return (int32_t)(id - 1);
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 64;
		void **v = realloc(t->v, cap * sizeof(*v));

		if (!v) {
			b->failed = true;
			return 0;
		}
		t->v = v;
		t->cap = cap;
	}
	if (hmap_put(&t->ids, key, klen, (void *)(uintptr_t)(t->n + 1))) {
		b->failed = true;
		return 0;
	}
	t->v[t->n] = NULL;
	*fresh = true;
	return (int32_t)t->n++;
}

/* a copy of s in the arena, made UTF-8 (out_utf8_clean) */
static char *utf8_dup(struct builder *b, const char *s)
{
	char *out = alloc(b, strlen(s) * 3 + 1);

	if (out)
		out_utf8_clean(out, s);
	return out;
}

static int32_t str_index(struct builder *b, const char *s)
{
	int32_t i = pdict_str(&b->d, s);

	b->failed |= b->d.failed;
	return i;
}

/* the attribute key = a string (str) or an integer (num), in the table */
static int32_t attr_index(struct builder *b, const char *key, const char *str, int64_t num)
{
	size_t kl = strlen(key), sl = str ? strlen(str) : 0;
	size_t klen = kl + 2 + (str ? sl : sizeof(num));
	char *k = alloc(b, klen);
	KeyValueAndUnit *a;
	bool fresh;
	int32_t i;

	if (!k)
		return 0;
	memcpy(k, key, kl);
	k[kl + 1] = str ? 's' : 'i';
	if (str)
		memcpy(k + kl + 2, str, sl);
	else
		memcpy(k + kl + 2, &num, sizeof(num));
	i = table_index(b, &b->attrs, k, klen, &fresh);
	if (!fresh || b->failed)
		return i;
	a = alloc(b, sizeof(*a));
	AnyValue *v = alloc(b, sizeof(*v));
	if (!a || !v)
		return 0;
	otlp__key_value_and_unit__init(a);
	otlp__any_value__init(v);
	a->key_strindex = str_index(b, key);
	if (str) {
		v->value_case = OTLP__ANY_VALUE__VALUE_STRING_VALUE;
		v->string_value = utf8_dup(b, str);
	} else {
		v->value_case = OTLP__ANY_VALUE__VALUE_INT_VALUE;
		v->int_value = num;
	}
	a->value = v;
	b->attrs.v[i] = a;
	return i;
}

static int32_t *one_index(struct builder *b, int32_t i)
{
	int32_t *p = alloc(b, sizeof(*p));

	if (p)
		*p = i;
	return p;
}

static int32_t stack_index(struct builder *b, const int32_t *locs, size_t n)
{
	bool fresh;
	int32_t i = n ? table_index(b, &b->stacks, locs, n * sizeof(*locs), &fresh) : 0;
	Stack *s;

	if (!n || !fresh || !(s = alloc(b, sizeof(*s))))
		return i;
	otlp__stack__init(s);
	s->location_indices = alloc(b, (n ? n : 1) * sizeof(*locs));
	if (s->location_indices)
		memcpy(s->location_indices, locs, n * sizeof(*locs));
	s->n_location_indices = n;
	b->stacks.v[i] = s;
	return i;
}

static struct res *res_of(struct builder *b, int pid, uint32_t gen)
{
	uint32_t key[2] = { (uint32_t)pid, gen };
	bool fresh;
	int32_t i = table_index(b, &b->res, key, sizeof(key), &fresh);
	struct res *r;

	if (!fresh)
		return b->failed ? NULL : b->res.v[i];
	r = calloc(1, sizeof(*r));
	if (!r) {
		b->failed = true;
		return NULL;
	}
	r->pid = pid;
	r->gen = gen;
	b->res.v[i] = r;
	return r;
}

static void add_sample(struct builder *b, const struct psample *s, int32_t stack)
{
	struct res *r = res_of(b, (int)s->stack->pid, s->stack->gen);
	int32_t key[2] = { stack, (int32_t)s->tid };
	bool fresh;
	int32_t i;
	Sample *x;

	if (!r)
		return;
	i = table_index(b, &r->samples, key, sizeof(key), &fresh);
	if (b->failed)
		return;
	if (fresh) {
		if (!(x = alloc(b, sizeof(*x))))
			return;
		otlp__sample__init(x);
		if (!(x->values = alloc(b, sizeof(*x->values))) ||
		    !(x->attribute_indices = alloc(b, 2 * sizeof(int32_t))))
			return;
		x->stack_index = stack;
		x->attribute_indices[0] = attr_index(b, "thread.id", NULL, s->tid);
		x->attribute_indices[1] = attr_index(b, "thread.name",
						     profile_thread_name(b->c->prof, s->tid), 0);
		x->n_attribute_indices = 2;
		x->n_values = 1;
		r->samples.v[i] = x;
	}
	x = r->samples.v[i];
	x->values[0] += (int64_t)s->count;
}

static void add_samples(struct builder *b)
{
	size_t n;
	struct psample **v = out_samples(b->c, &n);
	struct out_loc *locs = malloc(OUT_MAX_LOCS * sizeof(*locs));
	int32_t *ids = malloc(OUT_MAX_LOCS * sizeof(*ids));

	if (!v || !ids || !locs) {
		b->failed = true;
		goto out;
	}
	for (size_t i = 0; i < n && !b->failed; i++) {
		size_t k = out_sample_locs(b->c, v[i], locs, OUT_MAX_LOCS);

		for (size_t j = 0; j < k; j++)
			ids[j] = pdict_loc(&b->d, &locs[j]);
		b->failed |= b->d.failed;
		add_sample(b, v[i], stack_index(b, ids, k));
	}
out:
	free(locs);
	free(ids);
	free(v);
}

static KeyValue *kv(struct builder *b, const char *key, const char *str, int64_t num)
{
	KeyValue *k = alloc(b, sizeof(*k));
	AnyValue *v = alloc(b, sizeof(*v));

	if (!k || !v)
		return NULL;
	otlp__key_value__init(k);
	otlp__any_value__init(v);
	k->key = (char *)key;
	k->value = v;
	if (str) {
		v->value_case = OTLP__ANY_VALUE__VALUE_STRING_VALUE;
		v->string_value = utf8_dup(b, str);
	} else {
		v->value_case = OTLP__ANY_VALUE__VALUE_INT_VALUE;
		v->int_value = num;
	}
	return k;
}

static Resource *resource(struct builder *b, const struct res *rs, const char *host)
{
	int pid = rs->pid;
	const struct pproc *pp = hmap_get(&b->c->prof->procs, &pid, sizeof(int));
	const char *comm = profile_proc_comm(pp);
	const char *name = b->c->service_of ? b->c->service_of(b->c->service_ctx, pid, rs->gen) : NULL;
	Resource *r = alloc(b, sizeof(*r));
	KeyValue **a = alloc(b, 9 * sizeof(*a));
	char service[64];
	size_t n = 0;

	if (!r || !a)
		return NULL;
	otlp__resource__init(r);
	snprintf(service, sizeof(service), "unknown_service:%s", comm);
	a[n++] = kv(b, "service.name", name && name[0] ? name : service, 0);
	a[n++] = kv(b, "host.name", host, 0);
	a[n++] = kv(b, "process.pid", NULL, pid);
	a[n++] = kv(b, "process.executable.name", comm, 0);
	if (pp && pp->cmdline[0])
		a[n++] = kv(b, "process.command_line", pp->cmdline, 0);
	if (pp && pp->ctr.id[0])
		a[n++] = kv(b, "container.id", pp->ctr.id, 0);
	if (pp && pp->ctr.pod[0])
		a[n++] = kv(b, "k8s.pod.uid", pp->ctr.pod, 0);
	if (pp && pp->ns_pid && pp->ns_pid != pp->pid)
		a[n++] = kv(b, "pyperf.container.pid", NULL, pp->ns_pid);
	r->attributes = a;
	r->n_attributes = n;
	return r;
}

/* a 16-byte id from the start time and the process: stable, never all zero */
static void profile_id(uint8_t *out, uint64_t start, int pid, uint32_t gen)
{
	uint64_t h = 0xcbf29ce484222325ull, in[3] = { start, (uint64_t)pid, gen };

	for (int i = 0; i < 16; i++) {
		for (size_t j = 0; j < sizeof(in); j++)
			h = (h ^ ((const uint8_t *)in)[j] ^ (uint64_t)i) * 0x100000001b3ull;
		out[i] = (uint8_t)(h >> 32);
	}
	out[0] |= 1;
}

static Profile *profile(struct builder *b, struct res *r, int64_t period)
{
	enum pyperf_mode mode = b->c->mode;
	Profile *p = alloc(b, sizeof(*p));
	ValueType *st = alloc(b, sizeof(*st)), *pt = alloc(b, sizeof(*pt));
	uint8_t *id = alloc(b, 16);

	if (!p || !st || !pt || !id)
		return NULL;
	otlp__profile__init(p);
	otlp__value_type__init(st);
	otlp__value_type__init(pt);
	st->type_strindex = str_index(b, mode_desc(mode)->quantity == MQ_SAMPLES ? "samples"
									       : mode_type(mode));
	st->unit_strindex = str_index(b, mode_desc(mode)->quantity == MQ_SAMPLES ? "count"
									       : mode_unit(mode));
	pt->type_strindex = str_index(b, mode_type(mode));
	pt->unit_strindex = str_index(b, mode_unit(mode));
	p->sample_type = st;
	p->period_type = pt;
	p->period = mode_desc(mode)->periodic ? period : 0;
	p->time_unix_nano = b->c->start_unix_ns;
	p->duration_nano = (uint64_t)(b->c->duration_s * 1e9);
	p->samples = (Sample **)r->samples.v;
	p->n_samples = r->samples.n;
	profile_id(id, b->c->start_unix_ns, r->pid, r->gen);
	p->profile_id.data = id;
	p->profile_id.len = 16;
	return p;
}

/* the dictionary's functions, mappings and locations as OTLP's, each
 * location with its profile.frame.type, each mapping with its build-id */
static void dict_tables(struct builder *b, Dictionary *dict)
{
	static const char *const types[] = {
		[OUT_LOC_KERNEL] = "kernel", [OUT_LOC_PYTHON] = "cpython",
		[OUT_LOC_NATIVE] = "native", [OUT_LOC_MARK] = NULL,
	};
	const struct pdict *d = &b->d;
	Function **fv = alloc(b, d->nfunc * sizeof(*fv));
	Mapping **mv = alloc(b, d->nmap * sizeof(*mv));
	Location **lv = alloc(b, d->nloc * sizeof(*lv));

	for (size_t i = 0; fv && i < d->nfunc && !b->failed; i++) {
		if (!(fv[i] = alloc(b, sizeof(**fv))))
			return;
		otlp__function__init(fv[i]);
		fv[i]->name_strindex = fv[i]->system_name_strindex = d->func[i].name;
		fv[i]->filename_strindex = d->func[i].file;
		fv[i]->start_line = d->func[i].start_line;
	}
	for (size_t i = 0; mv && i < d->nmap && !b->failed; i++) {
		const struct binary *bin = d->map[i].bin;

		if (!(mv[i] = alloc(b, sizeof(**mv))))
			return;
		otlp__mapping__init(mv[i]);
		if (!bin)
			continue; /* the zero entry */
		mv[i]->memory_start = bin->lo;
		mv[i]->memory_limit = bin->hi;
		mv[i]->file_offset = bin->offset;
		mv[i]->filename_strindex = d->map[i].file;
		if (bin->build_id[0]) {
			mv[i]->attribute_indices = one_index(
				b, attr_index(b, "process.executable.build_id.gnu", bin->build_id, 0));
			mv[i]->n_attribute_indices = 1;
		}
	}
	for (size_t i = 0; lv && i < d->nloc && !b->failed; i++) {
		const struct pdict_loc *x = &d->loc[i];
		Line *ln = alloc(b, sizeof(*ln));
		Line **lines = alloc(b, sizeof(*lines));

		if (!(lv[i] = alloc(b, sizeof(**lv))) || !ln || !lines)
			return;
		otlp__location__init(lv[i]);
		if (!i)
			continue; /* the zero entry */
		otlp__line__init(ln);
		ln->function_index = x->func;
		ln->line = x->line;
		lines[0] = ln;
		lv[i]->mapping_index = x->map;
		lv[i]->address = x->addr;
		lv[i]->n_lines = 1;
		lv[i]->lines = lines;
		if (types[x->kind]) {
			lv[i]->attribute_indices =
				one_index(b, attr_index(b, "profile.frame.type", types[x->kind], 0));
			lv[i]->n_attribute_indices = 1;
		}
	}
	if (!fv || !mv || !lv) {
		b->failed = true;
		return;
	}
	dict->function_table = fv;
	dict->n_function_table = d->nfunc;
	dict->mapping_table = mv;
	dict->n_mapping_table = d->nmap;
	dict->location_table = lv;
	dict->n_location_table = d->nloc;
}

static int encode(struct builder *b, FILE *f, int64_t period)
{
	Request req = OTLP__PROFILES_REQUEST__INIT;
	Dictionary dict = OTLP__PROFILES_DICTIONARY__INIT;
	Otlp__InstrumentationScope scope = OTLP__INSTRUMENTATION_SCOPE__INIT;
	ResourceProfiles **rp = alloc(b, (b->res.n ? b->res.n : 1) * sizeof(*rp));
	Link *link = alloc(b, sizeof(*link));
	char host[256] = "";
	size_t len;
	uint8_t *buf;
	int rc = 0;

	dict_tables(b, &dict);
	gethostname(host, sizeof(host) - 1);
	scope.name = "pyperf-bpf";
	scope.version = PYPERF_VERSION;
	for (size_t i = 0; rp && i < b->res.n && !b->failed; i++) {
		struct res *r = b->res.v[i];
		ScopeProfiles *sp = alloc(b, sizeof(*sp));
		ScopeProfiles **sps = alloc(b, sizeof(*sps));
		Profile **ps = alloc(b, sizeof(*ps));

		if (!(rp[i] = alloc(b, sizeof(**rp))) || !sp || !sps || !ps)
			break;
		otlp__resource_profiles__init(rp[i]);
		otlp__scope_profiles__init(sp);
		sp->scope = &scope;
		ps[0] = profile(b, r, period);
		sp->profiles = ps;
		sp->n_profiles = 1;
		sps[0] = sp;
		rp[i]->resource = resource(b, r, host);
		rp[i]->scope_profiles = sps;
		rp[i]->n_scope_profiles = 1;
	}
	if (b->failed || !rp || !link) {
		errno = ENOMEM;
		return -1;
	}
	otlp__link__init(link);
	req.resource_profiles = rp;
	req.n_resource_profiles = b->res.n;
	dict.string_table = b->d.str; /* every string is in by now */
	dict.n_string_table = b->d.nstr;
	dict.attribute_table = (KeyValueAndUnit **)b->attrs.v;
	dict.n_attribute_table = b->attrs.n;
	dict.stack_table = (Stack **)b->stacks.v;
	dict.n_stack_table = b->stacks.n;
	dict.link_table = &link;
	dict.n_link_table = 1;
	req.dictionary = &dict;
	len = protobuf_c_message_get_packed_size(&req.base);
	buf = malloc(len + 1);
	if (!buf) {
		errno = ENOMEM;
		return -1;
	}
	protobuf_c_message_pack(&req.base, buf);
	errno = 0;
	if (fwrite(buf, 1, len, f) != len) {
		if (!errno)
			errno = EIO;
		rc = -1;
	}
	free(buf);
	return rc;
}

/* entry 0 of every table: the zero value (the dictionary has its own) */
static void zero_entries(struct builder *b)
{
	Stack *s = alloc(b, sizeof(*s));
	KeyValueAndUnit *a = alloc(b, sizeof(*a));
	bool fresh;

	if (pdict_init(&b->d))
		b->failed = true;
	if (!s || !a)
		return;
	otlp__stack__init(s);
	otlp__key_value_and_unit__init(a);
	table_index(b, &b->stacks, "", 1, &fresh);
	b->stacks.v[0] = s;
	table_index(b, &b->attrs, "", 1, &fresh);
	b->attrs.v[0] = a;
}

static void table_free(struct table *t)
{
	free(t->v);
	hmap_free(&t->ids, NULL);
}

int out_otlp(FILE *f, const struct out_ctx *c)
{
	struct builder b;
	int64_t period = c->freq > 0 ? 1000000000LL / c->freq : 0;
	int rc;

	memset(&b, 0, sizeof(b));
	b.c = c;
	zero_entries(&b);
	add_samples(&b);
	rc = b.failed ? (errno = ENOMEM, -1) : encode(&b, f, period);
	for (size_t i = 0; i < b.res.n; i++) {
		struct res *r = b.res.v[i];

		if (r)
			table_free(&r->samples);
		free(r);
	}
	table_free(&b.res);
	pdict_free(&b.d);
	table_free(&b.attrs);
	table_free(&b.stacks);
	while (b.arena) {
		struct chunk *k = b.arena->next;

		free(b.arena);
		b.arena = k;
	}
	return rc;
}
