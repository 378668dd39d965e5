/* in_profile.c - our own outputs read back: folded stacks, pprof and
 * speedscope files become one list of stacks (in_profile.h) whose frames are
 * labelled exactly as out_folded.c labels them, so that a recording kept in
 * any of the three formats reads back as the same stacks.
 *
 * How each format gives the folded labels back:
 *   folded      the lines themselves, "frame;frame;... COUNT" (a count; in
 *               --mode wall and offcpu microseconds; the file does not say).
 *   pprof       (out_pprof.c) each location's function, leaf first: file
 *               "[kernel.kallsyms]" is a kernel frame, "NAME_[k]"; no file, a
 *               marker or [unknown], "NAME"; a first line or a line, Python,
 *               "NAME (FILE:LINE)", or "NAME (FILE)" when no location has a
 *               line (--no-lines); in a mapping, native, "NAME (BASENAME)";
 *               else JIT code, "NAME (FILE)".  The value is the samples/count
 *               sample type if there is one (cpu), else the default one (the
 *               mode's quantity; inuse_space for leaks): what folded counts.
 *   speedscope  (out_speedscope.c) the shared frames: file "[kernel]", a
 *               kernel frame, named already; no file, a marker; a line,
 *               Python; else native.  "sampled" profiles (ours: one per
 *               thread) and "evented" ones (a stack weighs the time it was
 *               open).  Our cpu-mode weights are counts times the sampling
 *               period (1e9 / Hz rounded down), which the file does not give:
 *               the largest such period that divides every weight turns them
 *               back into samples (a --mode wall recording that never left
 *               the CPU looks the same, and reads as samples).
 * Process and thread are labels in pprof and profile names in speedscope,
 * but frames of the folded output only with several processes (and with
 * --threads): a "process PID NAME" root frame is made when a file holds more
 * than one pid, as record.c decides; thread frames never, since no file says
 * whether --threads was given.  pprof keeps the command's name, not its line.
 *
 * Names are cleaned as the writers clean them, so that the formats agree:
 * ';' and line ends as in folded output, bytes that are not UTF-8 as pprof
 * and speedscope replace them.  Stacks that label alike are merged (pprof
 * and speedscope keep threads apart), those of value 0 left out (the folded
 * output leaves them out).  Bounded: IN_MAX_BYTES of file and of unzipped
 * data, IN_MAX_STACKS distinct stacks of IN_MAX_DEPTH frames, IN_MAX_TEXT
 * bytes of labels. */
#include "in_profile.h"
#include "errmsg.h"
#include "hmap.h"
#include "out_common.h"
#include "profile.pb-c.h"
#include "sbuf.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#define IN_MAX_BYTES (256u << 20)    /* a file, and a pprof unzipped */
#define IN_MAX_STACKS 1000000
#define IN_MAX_DEPTH 16384
#define IN_MAX_TEXT ((size_t)1 << 30)
#define IN_MAX_HZ 10000              /* SESSION_MAX_FREQ: the periods a cpu weight may have */
#define JSON_DEPTH 64

typedef Perftools__Profiles__Profile Profile;
typedef Perftools__Profiles__Sample Sample;
typedef Perftools__Profiles__Location Location;
typedef Perftools__Profiles__Line Line;
typedef Perftools__Profiles__Function Function;

/* A file being read: where its stacks go, and what to say when it fails. */
struct reader {
	const char *path;
	struct in_profile *p;
	struct hmap index;           /* joined stack -> its index in p->v + 1 */
	size_t text;                 /* bytes of labels kept */
	struct sbuf key;             /* the stack being read: frames root first, ';' between */
	char *err;
	size_t errlen;
};

static int fail(struct reader *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int fail(struct reader *r, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	set_err(r->err, r->errlen, "%s: %s", r->path, msg);
	return -1;
}

/* s, cut to fit out, with '?' for bytes a terminal would not print */
static void printable(char *out, size_t len, const char *s)
{
	size_t i;

	for (i = 0; s[i] && i + 1 < len; i++)
		out[i] = s[i] >= 0x20 && s[i] < 0x7f ? s[i] : '?';
	out[i] = 0;
}

/* ---- stacks ---- */

/* s[0..len) into b as the folded output writes a name (';' and line ends
 * replaced, as out_frame_label does) and UTF-8 as pprof and speedscope write
 * it (out_utf8_clean); keep_semicolons for a whole folded stack.  A valid
 * character never holds those ASCII bytes, so the order does not matter. */
static void put_clean(struct sbuf *b, const char *s, size_t len, bool keep_semicolons)
{
	const char *end = s + len;

	while (s < end) {
		int n = out_utf8_len(s);

		if (!n || s + n > end) {
			sb_puts(b, "\xef\xbf\xbd");
			s++;
		} else if (n > 1) {
			for (int i = 0; i < n; i++)
				sb_putc(b, s[i]);
			s += n;
		} else {
			char c = *s == ';' && !keep_semicolons ? ':' : *s;

			sb_putc(b, c == '\n' || c == '\r' ? ' ' : c);
			s++;
		}
	}
}

static void put_label(struct sbuf *b, const char *s)
{
	put_clean(b, s, strlen(s), false);
}

static int grow(struct in_profile *p)
{
	size_t cap = p->cap ? p->cap * 2 : 256;
	struct in_stack *v = realloc(p->v, cap * sizeof(*v));

	if (!v)
		return -1;
	p->v = v;
	p->cap = cap;
	return 0;
}

/* A new stack of the frames in key[0..len): one allocation, the frame
 * pointers and then their text. */
static int new_stack(struct reader *r, const char *key, size_t len)
{
	struct in_profile *p = r->p;
	size_t n = len ? 1 : 0, k = 0;
	struct in_stack *s;
	char *text;

	for (size_t i = 0; i < len; i++)
		n += key[i] == ';';
	if (p->n >= IN_MAX_STACKS)
		return fail(r, "more than %d distinct stacks", IN_MAX_STACKS);
	if (n > IN_MAX_DEPTH)
		return fail(r, "a stack of %zu frames, more than %d", n, IN_MAX_DEPTH);
	if (r->text + len > IN_MAX_TEXT)
		return fail(r, "more than %zu MiB of frame names", IN_MAX_TEXT >> 20);
	if (p->n == p->cap && grow(p))
		return fail(r, "out of memory");
	s = &p->v[p->n];
	s->frames = malloc(n * sizeof(char *) + len + 1);
	if (!s->frames || hmap_put(&r->index, key, len + 1, (void *)(uintptr_t)(p->n + 1))) {
		free(s->frames);
		return fail(r, "out of memory");
	}
	text = (char *)(s->frames + n);
	memcpy(text, key, len);
	text[len] = 0;
	if (len)
		s->frames[k++] = text;
	for (size_t i = 0; i < len; i++)
		if (text[i] == ';') {
			text[i] = 0;
			s->frames[k++] = text + i + 1;
		}
	s->n = n;
	s->value = 0;
	p->n++;
	r->text += len;
	return 0;
}

/* The stack in r->key counted value more: added to an equal one, else new. */
static int add_stack(struct reader *r, double value)
{
	const char *key = sb_str(&r->key);
	uintptr_t i;

	if (!sb_ok(&r->key))
		return fail(r, "out of memory");
	if (value == 0)
		return 0;
	/* with its NUL: the empty stack is a key too */
	i = (uintptr_t)hmap_get(&r->index, key, r->key.len + 1);
	if (!i) {
		if (new_stack(r, key, r->key.len))
			return -1;
		i = r->p->n;
	}
	r->p->v[i - 1].value += value;
	r->p->total += value;
	return 0;
}

/* ---- folded ---- */

/* Text, not binary data: no NUL and few control bytes in its first 4 KiB
 * (names may hold any byte, so a few are allowed). */
static bool is_text(const char *buf, size_t len)
{
	size_t n = len < 4096 ? len : 4096, ctl = 0;

	for (size_t i = 0; i < n; i++)
		ctl += (unsigned char)buf[i] < 0x20 && !strchr("\t\r\n", buf[i]);
	return !memchr(buf, 0, len) && ctl * 100 <= n;
}

/* One line, "frame;frame;... COUNT" (NUL-terminated at len); blank lines
 * are skipped. */
static int folded_line(struct reader *r, char *line, size_t len, size_t lineno)
{
	char *sp, *end;
	double v;

	while (len && isspace((unsigned char)line[len - 1]))
		len--;
	if (!len)
		return 0;
	line[len] = 0;
	sp = strrchr(line, ' ');
	if (!sp)
		return fail(r, "line %zu: no count at its end (folded stacks are "
			    "\"frame;frame;... COUNT\")", lineno);
	v = strtod(sp + 1, &end);
	if (end == sp + 1 || *end || !isfinite(v) || v < 0) {
		char shown[41];

		printable(shown, sizeof(shown), sp + 1);
		return fail(r, "line %zu: '%s' is not a count", lineno, shown);
	}
	sb_reset(&r->key);
	put_clean(&r->key, line, (size_t)(sp - line), true);
	return add_stack(r, v);
}

static int read_folded(struct reader *r, char *buf, size_t len)
{
	size_t lineno = 0;

	snprintf(r->p->format, sizeof(r->p->format), "folded");
	if (!is_text(buf, len))
		return fail(r, "not a profile: binary data, neither gzip (pprof) nor "
			    "JSON (speedscope) nor folded stacks");
	for (char *line = buf, *next; line < buf + len; line = next) {
		size_t n = strcspn(line, "\n");

		next = line + n + (line[n] == '\n');
		if (folded_line(r, line, n, ++lineno))
			return -1;
	}
	return 0;
}

/* ---- pprof ---- */

/* A decoded pprof with its ids looked up. */
struct pp {
	Profile *x;
	struct hmap funcs, locs, maps; /* id -> Function *, location index + 1, Mapping * */
	char **loc_text;             /* per location: its frames, root first, joined by ';' */
	size_t value;                /* the index of the sample value read */
	bool lines;                  /* some Python location has a line: labels show lines */
	bool procs;                  /* samples of several pids: process root frames */
};

/* gz unzipped into *out (*outlen bytes, IN_MAX_BYTES at most) */
static int gunzip(struct reader *r, const uint8_t *gz, size_t len, uint8_t **out, size_t *outlen)
{
	size_t have = 0, cap = 0;
	uint8_t *buf = NULL;
	z_stream z;
	int zrc;

	memset(&z, 0, sizeof(z));
	if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK)
		return fail(r, "out of memory");
	z.next_in = (Bytef *)gz;
	z.avail_in = (uInt)len;
	for (;;) {
		if (have == cap) {
			size_t want = cap ? cap * 2 : len * 4 > (1u << 16) ? len * 4 : 1u << 16;
			uint8_t *nb;

			if (cap >= IN_MAX_BYTES) {
				zrc = fail(r, "more than %u MiB unzipped", IN_MAX_BYTES >> 20);
				goto out;
			}
			cap = want < IN_MAX_BYTES ? want : IN_MAX_BYTES;
			if (!(nb = realloc(buf, cap))) {
				zrc = fail(r, "out of memory");
				goto out;
			}
			buf = nb;
		}
		z.next_out = buf + have;
		z.avail_out = (uInt)(cap - have);
		zrc = inflate(&z, Z_NO_FLUSH);
		have = cap - z.avail_out;
		if (zrc == Z_STREAM_END)
			break;
		if (zrc == Z_BUF_ERROR) { /* room to write, nothing left to read */
			zrc = fail(r, "gzip data cut short");
			goto out;
		}
		if (zrc != Z_OK) {
			zrc = fail(r, "corrupt gzip data (%s)", z.msg ? z.msg : zError(zrc));
			goto out;
		}
	}
	zrc = 0;
	*out = buf;
	*outlen = have;
	buf = NULL;
out:
	inflateEnd(&z);
	free(buf);
	return zrc;
}

static const char *pstr(const Profile *x, int64_t i)
{
	return i >= 0 && (size_t)i < x->n_string_table ? x->string_table[i] : NULL;
}

/* The ids of functions, locations and mappings, and every string index
 * in range. */
static int pp_index(struct reader *r, struct pp *pp)
{
	const Profile *x = pp->x;

	for (size_t i = 0; i < x->n_function; i++) {
		Function *f = x->function[i];

		if (!pstr(x, f->name) || !pstr(x, f->filename))
			return fail(r, "function %llu: a string index out of range",
				    (unsigned long long)f->id);
		if (hmap_put(&pp->funcs, &f->id, sizeof(f->id), f))
			return fail(r, "out of memory");
	}
	for (size_t i = 0; i < x->n_mapping; i++)
		if (hmap_put(&pp->maps, &x->mapping[i]->id, sizeof(uint64_t), x->mapping[i]))
			return fail(r, "out of memory");
	for (size_t i = 0; i < x->n_location; i++)
		if (hmap_put(&pp->locs, &x->location[i]->id, sizeof(uint64_t), (void *)(i + 1)))
			return fail(r, "out of memory");
	return 0;
}

/* The value folded output counts, and its unit: samples/count when there
 * is one (cpu mode), else the default sample type, else the last. */
static int pp_value(struct reader *r, struct pp *pp)
{
	const Profile *x = pp->x;
	const char *unit;
	size_t i;

	if (!x->n_sample_type)
		return fail(r, "no sample types: not a pprof profile");
	for (i = 0; i < x->n_sample_type; i++) {
		const char *t = pstr(x, x->sample_type[i]->type), *u = pstr(x, x->sample_type[i]->unit);

		if (!t || !u)
			return fail(r, "sample type %zu: a string index out of range", i);
		if (!strcmp(t, "samples") && !strcmp(u, "count"))
			break;
	}
	if (i == x->n_sample_type)
		for (i = 0; i < x->n_sample_type; i++)
			if (x->sample_type[i]->type == x->default_sample_type)
				break;
	if (i == x->n_sample_type)
		i = x->n_sample_type - 1;
	pp->value = i;
	unit = pstr(x, x->sample_type[i]->unit);
	snprintf(r->p->unit, sizeof(r->p->unit), "%s", !strcmp(unit, "count") ? "samples" : unit);
	return 0;
}

static bool pp_python(const Function *f, const Line *ln)
{
	return f->start_line || ln->line;
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

/* One line of location l as out_frame_label labels its frame, into b. */
static int pp_label(struct reader *r, const struct pp *pp, const Location *l, const Line *ln,
		    struct sbuf *b)
{
	const Function *f = hmap_get(&pp->funcs, &ln->function_id, sizeof(uint64_t));
	const char *file;

	if (!f)
		return fail(r, "location %llu: no function %llu", (unsigned long long)l->id,
			    (unsigned long long)ln->function_id);
	file = pstr(pp->x, f->filename);
	put_label(b, pstr(pp->x, f->name));
	if (!strcmp(file, "[kernel.kallsyms]")) {
		sb_puts(b, "_[k]");
		return 0;
	}
	if (!file[0])
		return 0;
	sb_puts(b, " (");
	if (pp_python(f, ln)) {
		put_label(b, file);
		if (pp->lines)
			sb_printf(b, ":%lld", (long long)ln->line);
	} else {
		put_label(b, l->mapping_id ? base_name(file) : file);
	}
	sb_putc(b, ')');
	return 0;
}

/* Each location's frames (its lines: inlined first, so reversed), root
 * first, as one text. */
static int pp_locations(struct reader *r, struct pp *pp)
{
	const Profile *x = pp->x;
	struct sbuf b = { 0 };
	int rc = 0;

	for (size_t i = 0; i < x->n_location && !pp->lines; i++)
		for (size_t j = 0; j < x->location[i]->n_line; j++) {
			const Line *ln = x->location[i]->line[j];
			const Function *f = hmap_get(&pp->funcs, &ln->function_id, sizeof(uint64_t));

			pp->lines |= f && pp_python(f, ln) && ln->line;
		}
	if (!(pp->loc_text = calloc(x->n_location + 1, sizeof(char *))))
		return fail(r, "out of memory");
	for (size_t i = 0; i < x->n_location && !rc; i++) {
		const Location *l = x->location[i];

		sb_reset(&b);
		if (l->mapping_id && !hmap_get(&pp->maps, &l->mapping_id, sizeof(uint64_t)))
			rc = fail(r, "location %llu: no mapping %llu", (unsigned long long)l->id,
				  (unsigned long long)l->mapping_id);
		if (!l->n_line) /* not symbolized: its address */
			sb_printf(&b, "0x%llx", (unsigned long long)l->address);
		for (size_t j = l->n_line; j-- > 0 && !rc;) {
			rc = pp_label(r, pp, l, l->line[j], &b);
			if (j)
				sb_putc(&b, ';');
		}
		if (!rc && (!sb_ok(&b) || !(pp->loc_text[i] = strdup(sb_str(&b)))))
			rc = fail(r, "out of memory");
	}
	sb_free(&b);
	return rc;
}

static const Perftools__Profiles__Label *pp_label_of(const Profile *x, const Sample *s,
						     const char *key)
{
	for (size_t i = 0; i < s->n_label; i++) {
		const char *k = pstr(x, s->label[i]->key);

		if (k && !strcmp(k, key))
			return s->label[i];
	}
	return NULL;
}

/* Samples of more than one pid (label "pid")? */
static bool pp_several_pids(const Profile *x)
{
	const Perftools__Profiles__Label *first = NULL;

	for (size_t i = 0; i < x->n_sample; i++) {
		const Perftools__Profiles__Label *l = pp_label_of(x, x->sample[i], "pid");

		if (l && !first)
			first = l;
		else if (l && l->num != first->num)
			return true;
	}
	return false;
}

/* "process PID NAME;" as out_root_frames writes it, NAME the command */
static void pp_process(const Profile *x, const Sample *s, struct sbuf *b)
{
	const Perftools__Profiles__Label *pid = pp_label_of(x, s, "pid");
	const Perftools__Profiles__Label *name = pp_label_of(x, s, "process_name");
	const char *comm = name ? pstr(x, name->str) : NULL;

	if (!pid)
		return;
	sb_printf(b, "process %lld ", (long long)pid->num);
	put_label(b, comm && comm[0] ? comm : "?");
	sb_putc(b, ';');
}

static int pp_sample(struct reader *r, const struct pp *pp, size_t i)
{
	const Sample *s = pp->x->sample[i];
	double v;

	if (s->n_value != pp->x->n_sample_type)
		return fail(r, "sample %zu has %zu values for %zu sample types", i, s->n_value,
			    pp->x->n_sample_type);
	if (s->n_location_id > IN_MAX_DEPTH)
		return fail(r, "sample %zu: %zu locations, more than %d", i, s->n_location_id,
			    IN_MAX_DEPTH);
	v = (double)s->value[pp->value];
	if (v < 0)
		return fail(r, "sample %zu has a negative value (%g): a difference is no profile",
			    i, v);
	sb_reset(&r->key);
	if (pp->procs)
		pp_process(pp->x, s, &r->key);
	for (size_t j = s->n_location_id; j-- > 0;) {
		uintptr_t k = (uintptr_t)hmap_get(&pp->locs, &s->location_id[j], sizeof(uint64_t));

		if (!k)
			return fail(r, "sample %zu: no location %llu", i,
				    (unsigned long long)s->location_id[j]);
		sb_puts(&r->key, pp->loc_text[k - 1]);
		if (j)
			sb_putc(&r->key, ';');
	}
	return add_stack(r, v);
}

static int read_pprof(struct reader *r, const uint8_t *gz, size_t len)
{
	struct pp pp;
	uint8_t *raw = NULL;
	size_t rawlen = 0;
	int rc;

	memset(&pp, 0, sizeof(pp));
	snprintf(r->p->format, sizeof(r->p->format), "pprof");
	if (gunzip(r, gz, len, &raw, &rawlen))
		return -1;
	pp.x = perftools__profiles__profile__unpack(NULL, rawlen, raw);
	free(raw);
	if (!pp.x)
		return fail(r, "gzip holds no pprof profile (profile.proto) that decodes");
	rc = pp_index(r, &pp) || pp_value(r, &pp) || pp_locations(r, &pp) ? -1 : 0;
	pp.procs = !rc && pp_several_pids(pp.x);
	for (size_t i = 0; i < pp.x->n_sample && !rc; i++)
		rc = pp_sample(r, &pp, i);
	for (size_t i = 0; pp.loc_text && i < pp.x->n_location; i++)
		free(pp.loc_text[i]);
	free(pp.loc_text);
	hmap_free(&pp.funcs, NULL);
	hmap_free(&pp.locs, NULL);
	hmap_free(&pp.maps, NULL);
	perftools__profiles__profile__free_unpacked(pp.x, NULL);
	return rc;
}

/* ---- speedscope ---- */

/* A speedscope file's shared frames and profiles, as read so far. */
struct ss {
	struct json_object *profiles;
	char **labels;               /* per shared frame, its folded label */
	size_t nframes;
	char **prefix;               /* per profile: "process PID NAME;" or NULL */
	bool ours;                   /* written by pyperf-bpf */
	double period;               /* weights are this many units of the unit read */
};

static struct json_object *member(struct json_object *o, const char *key, enum json_type t)
{
	struct json_object *v;

	return json_object_is_type(o, json_type_object) && json_object_object_get_ex(o, key, &v) &&
	       json_object_is_type(v, t) ? v : NULL;
}

static bool number(struct json_object *o, double *d)
{
	if (json_object_is_type(o, json_type_int))
		*d = (double)json_object_get_int64(o);
	else if (json_object_is_type(o, json_type_double))
		*d = json_object_get_double(o);
	else
		return false;
	return isfinite(*d);
}

/* Shared frame i as out_frame_label labels it, into b. */
static int ss_label(struct reader *r, struct json_object *fr, size_t i, struct sbuf *b)
{
	struct json_object *name = member(fr, "name", json_type_string);
	struct json_object *file = member(fr, "file", json_type_string);
	struct json_object *line = member(fr, "line", json_type_int);
	const char *n, *f = file ? json_object_get_string(file) : "";
	size_t len;

	if (!name)
		return fail(r, "shared frame %zu has no name", i);
	n = json_object_get_string(name);
	len = strlen(n);
	put_label(b, n);
	if (!strcmp(f, "[kernel]")) { /* named "SYM_[k]" already */
		if (len < 4 || strcmp(n + len - 4, "_[k]"))
			sb_puts(b, "_[k]");
		return 0;
	}
	if (!f[0])
		return 0;
	sb_puts(b, " (");
	put_label(b, f);
	if (line)
		sb_printf(b, ":%lld", (long long)json_object_get_int64(line));
	sb_putc(b, ')');
	return 0;
}

static int ss_frames(struct reader *r, struct ss *ss, struct json_object *root)
{
	struct json_object *frames = member(member(root, "shared", json_type_object), "frames",
					    json_type_array);
	struct sbuf b = { 0 };
	int rc = 0;

	if (!frames)
		return fail(r, "no shared.frames: not a speedscope file");
	ss->nframes = json_object_array_length(frames);
	if (!(ss->labels = calloc(ss->nframes + 1, sizeof(char *))))
		return fail(r, "out of memory");
	for (size_t i = 0; i < ss->nframes && !rc; i++) {
		sb_reset(&b);
		rc = ss_label(r, json_object_array_get_idx(frames, i), i, &b);
		if (!rc && (!sb_ok(&b) || !(ss->labels[i] = strdup(sb_str(&b)))))
			rc = fail(r, "out of memory");
	}
	sb_free(&b);
	return rc;
}

static uint64_t gcd(uint64_t a, uint64_t b)
{
	while (b) {
		uint64_t t = a % b;

		a = b;
		b = t;
	}
	return a;
}

/* The gcd of every sampled weight, 0 if one is not a whole number. */
static uint64_t ss_weights_gcd(struct ss *ss)
{
	uint64_t g = 0;

	for (size_t i = 0; i < json_object_array_length(ss->profiles); i++) {
		struct json_object *w = member(json_object_array_get_idx(ss->profiles, i), "weights",
					       json_type_array);

		for (size_t j = 0; w && j < json_object_array_length(w); j++) {
			double d;

			if (!number(json_object_array_get_idx(w, j), &d) || d < 0 || d > 9e15 ||
			    d != floor(d))
				return 0;
			g = gcd(g, (uint64_t)d);
		}
	}
	return g;
}

/* The largest sampling period (1e9 / Hz rounded down, out_speedscope.c)
 * that divides g, else 0. */
static uint64_t cpu_period(uint64_t g)
{
	for (uint64_t hz = 1; g && hz <= IN_MAX_HZ; hz++)
		if (g % (1000000000ull / hz) == 0)
			return 1000000000ull / hz;
	return 0;
}

/* Every profile's unit, which must agree; ours in cpu mode as samples. */
static int ss_unit(struct reader *r, struct ss *ss)
{
	const char *unit = NULL;
	uint64_t period;

	for (size_t i = 0; i < json_object_array_length(ss->profiles); i++) {
		struct json_object *u = member(json_object_array_get_idx(ss->profiles, i), "unit",
					       json_type_string);
		const char *s = u ? json_object_get_string(u) : "none";

		if (unit && strcmp(unit, s)) {
			char a[33], b[33];

			printable(a, sizeof(a), unit);
			printable(b, sizeof(b), s);
			return fail(r, "profiles of different units ('%s', '%s')", a, b);
		}
		unit = s;
	}
	ss->period = 1;
	if (!unit || !strcmp(unit, "none")) {
		unit = "samples";
	} else if (ss->ours && !strcmp(unit, "nanoseconds") &&
		   (period = cpu_period(ss_weights_gcd(ss)))) {
		unit = "samples";
		ss->period = (double)period;
	}
	snprintf(r->p->unit, sizeof(r->p->unit), "%s", unit);
	return 0;
}

/* Our profile names, "PID COMMAND / thread TID NAME": the pid, and where
 * the command is. */
static bool ss_name_process(const char *name, long long *pid, const char **cmd, size_t *len)
{
	const char *t = NULL;
	char *end;

	if (!isdigit((unsigned char)name[0]))
		return false;
	*pid = strtoll(name, &end, 10);
	if (*end != ' ')
		return false;
	for (const char *s = strstr(end + 1, " / thread "); s; s = strstr(s + 1, " / thread "))
		t = s;
	if (!t)
		return false;
	*cmd = end + 1;
	*len = (size_t)(t - *cmd);
	return true;
}

static const char *ss_name(struct json_object *prof)
{
	struct json_object *n = member(prof, "name", json_type_string);

	return n ? json_object_get_string(n) : "";
}

/* With more than one pid among our profiles, each profile's process root
 * frame, "process PID COMMAND;" as out_root_frames writes it. */
static int ss_processes(struct reader *r, struct ss *ss)
{
	size_t n = json_object_array_length(ss->profiles);
	long long first = 0, pid;
	bool seen = false, several = false;
	const char *cmd;
	size_t len;

	for (size_t i = 0; ss->ours && i < n && !several; i++)
		if (ss_name_process(ss_name(json_object_array_get_idx(ss->profiles, i)), &pid, &cmd,
				    &len)) {
			several = seen && pid != first;
			first = seen ? first : pid;
			seen = true;
		}
	if (!several)
		return 0;
	if (!(ss->prefix = calloc(n, sizeof(char *))))
		return fail(r, "out of memory");
	for (size_t i = 0; i < n; i++) {
		struct sbuf b = { 0 };

		if (!ss_name_process(ss_name(json_object_array_get_idx(ss->profiles, i)), &pid, &cmd,
				     &len))
			continue;
		sb_printf(&b, "process %lld ", pid);
		put_clean(&b, cmd, len, false);
		sb_putc(&b, ';');
		if (!sb_ok(&b) || !(ss->prefix[i] = strdup(sb_str(&b)))) {
			sb_free(&b);
			return fail(r, "out of memory");
		}
		sb_free(&b);
	}
	return 0;
}

/* Frame index o of profile pi, checked, into *out. */
static int ss_index(struct reader *r, const struct ss *ss, struct json_object *o, size_t pi,
		    size_t *out)
{
	int64_t i = json_object_get_int64(o);
	char shown[41];

	if (!json_object_is_type(o, json_type_int) || i < 0 || (uint64_t)i >= ss->nframes) {
		printable(shown, sizeof(shown), json_object_to_json_string(o));
		return fail(r, "profile %zu: frame '%s' is not one of the %zu shared frames", pi,
			    shown, ss->nframes);
	}
	*out = (size_t)i;
	return 0;
}

/* r->key: profile pi's root frame and frames[0..n) (shared frame indices) */
static void ss_key(struct reader *r, const struct ss *ss, size_t pi, const size_t *frames,
		   size_t n)
{
	sb_reset(&r->key);
	if (ss->prefix && ss->prefix[pi])
		sb_puts(&r->key, ss->prefix[pi]);
	for (size_t j = 0; j < n; j++) {
		if (j)
			sb_putc(&r->key, ';');
		sb_puts(&r->key, ss->labels[frames[j]]);
	}
}

static int ss_sampled(struct reader *r, const struct ss *ss, struct json_object *prof, size_t pi,
		      size_t *frames)
{
	struct json_object *samples = member(prof, "samples", json_type_array);
	struct json_object *weights = member(prof, "weights", json_type_array);
	size_t n = samples ? json_object_array_length(samples) : 0;

	if (!samples || !weights || json_object_array_length(weights) != n)
		return fail(r, "profile %zu: its samples and weights are missing or differ in number",
			    pi);
	for (size_t i = 0; i < n; i++) {
		struct json_object *st = json_object_array_get_idx(samples, i);
		size_t depth = json_object_is_type(st, json_type_array) ?
			       json_object_array_length(st) : SIZE_MAX;
		double w;

		if (depth > IN_MAX_DEPTH)
			return fail(r, "profile %zu: sample %zu is no list of at most %d frames", pi,
				    i, IN_MAX_DEPTH);
		if (!number(json_object_array_get_idx(weights, i), &w) || w < 0)
			return fail(r, "profile %zu: weight %zu is not a number of at least 0", pi, i);
		for (size_t j = 0; j < depth; j++)
			if (ss_index(r, ss, json_object_array_get_idx(st, j), pi, &frames[j]))
				return -1;
		ss_key(r, ss, pi, frames, depth);
		if (add_stack(r, w / ss->period))
			return -1;
	}
	return 0;
}

/* One event of an evented profile: its type ('O' or 'C'), time and frame. */
static int ss_event(struct reader *r, const struct ss *ss, struct json_object *ev, size_t pi,
		    char *type, double *at, size_t *frame)
{
	struct json_object *t = member(ev, "type", json_type_string);
	struct json_object *a = NULL, *f = NULL;

	if (json_object_is_type(ev, json_type_object)) {
		json_object_object_get_ex(ev, "at", &a);
		json_object_object_get_ex(ev, "frame", &f);
	}

	if (!t || (strcmp(json_object_get_string(t), "O") && strcmp(json_object_get_string(t), "C")) ||
	    !number(a, at))
		return fail(r, "profile %zu: an event is not {\"type\": \"O\" or \"C\", \"at\", "
			    "\"frame\"}", pi);
	*type = json_object_get_string(t)[0];
	return ss_index(r, ss, f, pi, frame);
}

/* Evented: between two events, the open frames weigh the time that passed. */
static int ss_evented(struct reader *r, const struct ss *ss, struct json_object *prof, size_t pi,
		      size_t *open)
{
	struct json_object *events = member(prof, "events", json_type_array);
	size_t depth = 0;
	double last = 0;

	if (!events)
		return fail(r, "profile %zu: evented, without events", pi);
	for (size_t i = 0; i < json_object_array_length(events); i++) {
		double at;
		size_t frame;
		char type = 0;

		if (ss_event(r, ss, json_object_array_get_idx(events, i), pi, &type, &at, &frame))
			return -1;
		if (i && at < last)
			return fail(r, "profile %zu: event %zu goes back in time", pi, i);
		if (depth && at > last) {
			ss_key(r, ss, pi, open, depth);
			if (add_stack(r, (at - last) / ss->period))
				return -1;
		}
		last = at;
		if (type == 'O' && depth == IN_MAX_DEPTH)
			return fail(r, "profile %zu: more than %d frames open", pi, IN_MAX_DEPTH);
		if (type == 'O')
			open[depth++] = frame;
		else if (!depth || open[depth - 1] != frame)
			return fail(r, "profile %zu: event %zu closes a frame that is not the "
				    "innermost open one", pi, i);
		else
			depth--;
	}
	return 0;
}

static int ss_profiles(struct reader *r, struct ss *ss)
{
	size_t *frames = malloc(IN_MAX_DEPTH * sizeof(*frames));
	int rc = frames ? 0 : fail(r, "out of memory");

	for (size_t i = 0; !rc && i < json_object_array_length(ss->profiles); i++) {
		struct json_object *prof = json_object_array_get_idx(ss->profiles, i);
		struct json_object *type = member(prof, "type", json_type_string);
		const char *t = type ? json_object_get_string(type) : "";
		char shown[33];

		if (!strcmp(t, "sampled"))
			rc = ss_sampled(r, ss, prof, i, frames);
		else if (!strcmp(t, "evented"))
			rc = ss_evented(r, ss, prof, i, frames);
		else {
			printable(shown, sizeof(shown), t);
			rc = fail(r, "profile %zu: type '%s' is not supported (sampled or evented)",
				  i, shown);
		}
	}
	free(frames);
	return rc;
}

static int ss_read(struct reader *r, struct json_object *root)
{
	struct json_object *exporter = member(root, "exporter", json_type_string);
	struct ss ss;
	int rc;

	memset(&ss, 0, sizeof(ss));
	ss.profiles = member(root, "profiles", json_type_array);
	ss.ours = exporter && !strncmp(json_object_get_string(exporter), "pyperf-bpf", 10);
	if (!ss.profiles)
		rc = fail(r, "no profiles list: not a speedscope file");
	else
		rc = ss_frames(r, &ss, root) || ss_unit(r, &ss) || ss_processes(r, &ss) ||
		     ss_profiles(r, &ss) ? -1 : 0;
	for (size_t i = 0; ss.labels && i < ss.nframes; i++)
		free(ss.labels[i]);
	free(ss.labels);
	for (size_t i = 0; ss.prefix && i < json_object_array_length(ss.profiles); i++)
		free(ss.prefix[i]);
	free(ss.prefix);
	return rc;
}

static int read_speedscope(struct reader *r, const char *text, size_t len)
{
	struct json_tokener *tok = json_tokener_new_ex(JSON_DEPTH);
	struct json_object *root;
	enum json_tokener_error jerr;
	size_t end;
	int rc;

	snprintf(r->p->format, sizeof(r->p->format), "speedscope");
	if (!tok)
		return fail(r, "out of memory");
	root = json_tokener_parse_ex(tok, text, (int)len);
	jerr = json_tokener_get_error(tok);
	end = json_tokener_get_parse_end(tok);
	if (!root || jerr != json_tokener_success)
		rc = fail(r, "not JSON (at byte %zu: %s)", end,
			  jerr == json_tokener_continue ? "cut short" : json_tokener_error_desc(jerr));
	else if (end + strspn(text + end, " \t\r\n") != len)
		rc = fail(r, "not JSON (more after the object, at byte %zu)", end);
	else
		rc = ss_read(r, root);
	json_object_put(root);
	json_tokener_free(tok);
	return rc;
}

/* ---- files ---- */

/* The whole file, NUL-terminated, into *out (*len bytes, IN_MAX_BYTES at most). */
static int read_file(struct reader *r, int fd, char **out, size_t *len)
{
	size_t cap = 1u << 16, n = 0;
	struct stat st;
	char *buf = NULL;

	if (!fstat(fd, &st) && S_ISREG(st.st_mode)) {
		if ((uint64_t)st.st_size > IN_MAX_BYTES)
			return fail(r, "%.1f MiB, more than the %u MiB a profile may have",
				    (double)st.st_size / 1048576.0, IN_MAX_BYTES >> 20);
		cap = (size_t)st.st_size + 2;
	}
	for (;;) {
		ssize_t got;

		if (!buf || cap - n < 2) {
			char *nb;

			cap = buf ? cap * 2 : cap;
			if (cap > IN_MAX_BYTES + 2)
				cap = IN_MAX_BYTES + 2;
			if (!(nb = realloc(buf, cap))) {
				free(buf);
				return fail(r, "out of memory");
			}
			buf = nb;
		}
		got = read(fd, buf + n, cap - n - 1);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			free(buf);
			return fail(r, "%s", strerror(errno));
		}
		if (!got)
			break;
		n += (size_t)got;
		if (n > IN_MAX_BYTES) {
			free(buf);
			return fail(r, "more than the %u MiB a profile may have", IN_MAX_BYTES >> 20);
		}
	}
	buf[n] = 0;
	*out = buf;
	*len = n;
	return 0;
}

static int read_any(struct reader *r, char *buf, size_t len)
{
	size_t skip = strspn(buf, " \t\r\n");

	if (!len)
		return fail(r, "empty file");
	if (len >= 2 && (uint8_t)buf[0] == 0x1f && (uint8_t)buf[1] == 0x8b)
		return read_pprof(r, (const uint8_t *)buf, len);
	if (buf[skip] == '{')
		return read_speedscope(r, buf + skip, len - skip);
	return read_folded(r, buf, len);
}

int in_profile_read(const char *path, struct in_profile *out, char *err, size_t errlen)
{
	struct reader r = { .path = path, .p = out, .err = err, .errlen = errlen };
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t len = 0;
	char *buf = NULL;
	int rc;

	memset(out, 0, sizeof(*out));
	if (fd < 0)
		return fail(&r, "%s", strerror(errno));
	rc = read_file(&r, fd, &buf, &len);
	close(fd);
	if (rc)
		return -1;
	rc = read_any(&r, buf, len);
	free(buf);
	hmap_free(&r.index, NULL);
	sb_free(&r.key);
	if (rc)
		in_profile_free(out);
	return rc;
}

void in_profile_free(struct in_profile *p)
{
	for (size_t i = 0; i < p->n; i++)
		free(p->v[i].frames);
	free(p->v);
	memset(p, 0, sizeof(*p));
}
