/* diff.c - the `diff` command: did a change make it faster, and where?
 *
 * pyperf-bpf diff BASE NEW reads two of our own outputs (folded, pprof or
 * speedscope, mixed as they come: in_profile.h) and compares each frame's
 * and each function's share of its own profile's total, so that runs of
 * different lengths compare.  Frames line up by their labels: a function
 * and its file:line (--no-lines: the function), a native symbol and its
 * binary; a process's or thread's root frame by its command or name, not
 * its pid.  Writes a report of the functions whose own and total shares
 * changed most (the default, on stdout), a differential flame graph (svg:
 * NEW's shape coloured by the change, out_svg_diff) and a pprof whose
 * samples hold NEW less BASE scaled to NEW's total (what pprof -diff_base
 * -normalize shows).  Profiles of different kinds (samples against bytes),
 * empty ones and unreadable files are refused in one line, exit 2. */
#include "diff.h"
#include "cmdline.h"
#include "errmsg.h"
#include "hmap.h"
#include "in_profile.h"
#include "outfile.h"
#include "output.h"
#include "pdict.h"
#include "profile.pb-c.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DIFF_MAX_OUTPUTS 8
enum { DIFF_REPORT, DIFF_SVG, DIFF_PPROF };

struct diff_opts {
	const char *base, *cur;
	struct {
		const char *path;
		int format;
	} out[DIFF_MAX_OUTPUTS];
	size_t nout;
	const char *format;          /* -f, for the outputs without a known suffix */
	bool no_lines;
	size_t top;
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: pyperf-bpf diff BASE NEW [-o FILE]... [-f FORMAT] [--no-lines] [--top N]\n"
		"\n"
		"Compare two recordings: BASE and NEW are folded, pprof or speedscope files\n"
		"written by pyperf-bpf (the two may differ).  Each frame's and each\n"
		"function's share of its profile's total is compared, so runs of different\n"
		"lengths compare.\n"
		"\n"
		"  -o, --output FILE        write to FILE (default: the report on stdout);\n"
		"                           repeat for several formats\n"
		"  -f, --format FORMAT      report (functions whose share changed most), svg\n"
		"                           (differential flame graph: NEW's shape, red where a\n"
		"                           share grew, blue where it shrank) or pprof (NEW less\n"
		"                           BASE scaled to NEW's total); default from -o's\n"
		"                           extension (.txt, .svg, .pb.gz, .pprof), else report\n"
		"      --no-lines, --function  compare by function, not by line\n"
		"      --top N              rows in the report (default 20)\n"
		"  -h, --help               this help\n");
}

static int fail(const char *fmt, const char *arg)
{
	fprintf(stderr, "pyperf-bpf: diff: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\n");
	return 2;
}

static int format_of(const char *name)
{
	size_t n = strlen(name);

	if (!strcmp(name, "report") || (n > 4 && !strcmp(name + n - 4, ".txt")))
		return DIFF_REPORT;
	if (!strcmp(name, "svg") || (n > 4 && !strcmp(name + n - 4, ".svg")))
		return DIFF_SVG;
	if (!strcmp(name, "pprof") || (n > 6 && !strcmp(name + n - 6, ".pb.gz")) ||
	    (n > 6 && !strcmp(name + n - 6, ".pprof")))
		return DIFF_PPROF;
	return -1;
}

static int parse(int argc, char **argv, struct diff_opts *o)
{
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "format", required_argument, NULL, 'f' },
		{ "no-lines", no_argument, NULL, 'L' },
		{ "function", no_argument, NULL, 'L' },
		{ "top", required_argument, NULL, 'T' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	long v;
	int c;

	o->top = 20;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "o:f:h", opts, NULL)) != -1) {
		switch (c) {
		case 'o':
			if (!*optarg)
				return fail("-o: empty file name%s", "");
			if (o->nout == DIFF_MAX_OUTPUTS)
				return fail("-o: at most 8 output files, not more ('%s')", optarg);
			o->out[o->nout++].path = optarg;
			break;
		case 'f':
			if (format_of(optarg) < 0 || strchr(optarg, '.'))
				return fail("-f: report, svg or pprof, not '%s'", optarg);
			o->format = optarg;
			break;
		case 'L':
			o->no_lines = true;
			break;
		case 'T':
			if (!cmdline_long(optarg, 1, 1000000, &v))
				return fail("--top: not a positive number: '%s'", optarg);
			o->top = (size_t)v;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			return fail("unknown option '%s' (see pyperf-bpf diff --help)", argv[optind - 1]);
		}
	}
	if (argc - optind != 2)
		return fail("two files to compare, BASE and NEW%s (see pyperf-bpf diff --help)",
			    argc - optind < 2 ? ", are needed" : ", not more");
	o->base = argv[optind];
	o->cur = argv[optind + 1];
	for (size_t i = 0; i < o->nout; i++) {
		o->out[i].format = format_of(o->format ? o->format : o->out[i].path);
		if (o->out[i].format < 0)
			o->out[i].format = DIFF_REPORT;
	}
	if (!o->nout) {
		o->out[0].path = NULL;
		o->out[0].format = o->format ? format_of(o->format) : DIFF_REPORT;
		o->nout = 1;
	}
	return 0;
}

/* ---- labels ---- */

/* Is l a Python frame, "name (file:line)"?  Where its ':' is, else NULL. */
static char *python_colon(char *l)
{
	size_t n = strlen(l);
	char *open = strrchr(l, '('), *colon;

	if (!n || l[n - 1] != ')' || !open || open == l)
		return NULL;
	colon = strrchr(open, ':');
	if (!colon || !(isdigit((unsigned char)colon[1]) || colon[1] == '-'))
		return NULL;
	for (char *p = colon + 2; p < l + n - 1; p++)
		if (!isdigit((unsigned char)*p))
			return NULL;
	return colon;
}

/* the function a label is of: "name (file)" for a Python line, else itself */
static void function_of(const char *label, char *out, size_t len)
{
	char *colon;

	snprintf(out, len, "%s", label);
	if ((colon = python_colon(out)))
		strcpy(colon, ")");
}

/* Labels that line up across runs: a process's root frame by its command,
 * a thread's by its name (pids and tids differ from run to run); with
 * no_lines, Python frames by function. */
static void normalize(struct in_profile *p, bool no_lines)
{
	for (size_t i = 0; i < p->n; i++)
		for (size_t j = 0; j < p->v[i].n; j++) {
			char *l = p->v[i].frames[j], *colon, *sp;

			if ((!strncmp(l, "process ", 8) || !strncmp(l, "thread ", 7)) &&
			    isdigit((unsigned char)l[strcspn(l, " ") + 1])) {
				sp = strchr(strchr(l, ' ') + 1, ' ');
				if (sp)
					memmove(strchr(l, ' ') + 1, sp + 1, strlen(sp + 1) + 1);
				else
					*strchr(l, ' ') = 0;
			} else if (no_lines && (colon = python_colon(l))) {
				strcpy(colon, ")");
			}
		}
}

/* ---- shares of functions ---- */

struct fshare {
	char *name;
	double own[2], total[2];     /* shares of BASE's [0] and NEW's [1] totals */
	size_t last[2];              /* the last stack that added to total */
};

static struct fshare *fshare_of(struct hmap *m, const char *name)
{
	struct fshare *s = hmap_get(m, name, strlen(name));

	if (s)
		return s;
	if (!(s = calloc(1, sizeof(*s))) || !(s->name = strdup(name)) ||
	    hmap_put(m, s->name, strlen(s->name), s)) {
		if (s)
			free(s->name);
		free(s);
		return NULL;
	}
	s->last[0] = s->last[1] = SIZE_MAX;
	return s;
}

static int add_shares(struct hmap *m, const struct in_profile *p, int side)
{
	char name[4096];

	for (size_t i = 0; i < p->n; i++) {
		const struct in_stack *st = &p->v[i];
		double share = st->value / p->total;

		for (size_t j = 0; j < st->n; j++) {
			struct fshare *s;

			function_of(st->frames[j], name, sizeof(name));
			if (!(s = fshare_of(m, name)))
				return -1;
			if (j == st->n - 1)
				s->own[side] += share;
			if (s->last[side] != i) { /* recursion counts once */
				s->total[side] += share;
				s->last[side] = i;
			}
		}
	}
	return 0;
}

/* changes compare as printed (hundredths of a point): two rows that print
 * the same change are ordered by name, not by the last bits of a share,
 * which differ between formats (a folded file's counts, pprof's values) */
static long long printed(double d)
{
	return llround(fabs(d) * 100);
}

static int by_change(const void *a, const void *b)
{
	const struct fshare *x = *(const struct fshare *const *)a, *y = *(const struct fshare *const *)b;
	long long dx = printed(x->total[1] - x->total[0]), dy = printed(y->total[1] - y->total[0]);
	long long ox = printed(x->own[1] - x->own[0]), oy = printed(y->own[1] - y->own[0]);

	if (dx != dy)
		return dx < dy ? 1 : -1;
	if (ox != oy)
		return ox < oy ? 1 : -1;
	return strcmp(x->name, y->name);
}

static void free_fshare(void *v)
{
	struct fshare *s = v;

	free(s->name);
	free(s);
}

static int write_report(FILE *f, const struct diff_opts *o, const struct in_profile *b,
			const struct in_profile *n)
{
	struct hmap m = { 0 };
	struct fshare **v = NULL;
	size_t k = 0, rows;
	const char *unit = n->unit[0] ? n->unit : b->unit[0] ? b->unit : "samples";
	int rc = -1;

	if (add_shares(&m, b, 0) || add_shares(&m, n, 1) || !(v = calloc(m.len + 1, sizeof(*v))))
		goto out;
	hmap_for_each(&m, e)
		v[k++] = e->val;
	qsort(v, k, sizeof(*v), by_change);
	fprintf(f, "pyperf-bpf diff: %s (%.0f %s) -> %s (%.0f %s); shares of each profile's "
		"total, changes in points\n", o->base, b->total, unit, o->cur, n->total, unit);
	fprintf(f, "\nFunctions whose share changed most\n"
		"  ΔTotal    ΔOwn  Total before  Total after  Function\n");
	rows = k < o->top ? k : o->top;
	for (size_t i = 0; i < rows; i++) {
		const struct fshare *s = v[i];
		bool gone = s->total[1] == 0, fresh = s->total[0] == 0;

		fprintf(f, " %+7.2f %+7.2f %12.2f%% %11.2f%%  %s%s\n",
			100 * (s->total[1] - s->total[0]), 100 * (s->own[1] - s->own[0]),
			100 * s->total[0], 100 * s->total[1], s->name,
			fresh ? " (new)" : gone ? " (gone)" : "");
	}
	rc = ferror(f) ? -1 : 0;
out:
	free(v);
	hmap_free(&m, free_fshare);
	return rc;
}

/* ---- pprof: NEW less BASE scaled to NEW's total ---- */

struct pp {
	struct pdict d;
	struct hmap locs;            /* frame label -> location index */
	struct hmap samples;         /* the frames' labels -> struct pp_sample * */
	bool failed;
};

/* the location of a frame label: Python "name (file:line)", native "symbol
 * (binary)", anything else its name alone; a function per label, as the
 * label is all a folded or speedscope input has */
static uint64_t pp_loc(struct pp *p, const char *label)
{
	char name[4096], file[4096] = "";
	char *colon, *open;
	long line = 0;
	void *v = hmap_get(&p->locs, label, strlen(label));
	struct out_loc l = { .kind = OUT_LOC_MARK };
	int32_t i;

	if (v)
		return (uint64_t)(uintptr_t)v;
	snprintf(name, sizeof(name), "%s", label);
	if ((colon = python_colon(name))) {
		line = strtol(colon + 1, NULL, 10);
		*colon = 0;
		l.kind = OUT_LOC_PYTHON;
	}
	open = strrchr(name, '(');
	if (name[strlen(name) - 1] == ')' || colon) {
		if (open && open > name && open[-1] == ' ') {
			snprintf(file, sizeof(file), "%.*s", (int)strcspn(open + 1, ")"), open + 1);
			open[-1] = 0;
			if (!colon)
				l.kind = OUT_LOC_NATIVE;
		}
	}
	l.name = name;
	l.file = file;
	l.firstline = (int)line;
	l.line = line;
	i = pdict_loc(&p->d, &l);
	if (p->d.failed || hmap_put(&p->locs, label, strlen(label), (void *)(uintptr_t)i))
		p->failed = true;
	return (uint64_t)i;
}

struct pp_sample {
	uint64_t *locs;              /* leaf first */
	size_t n;
	double value;
};

static void pp_add(struct pp *p, const struct in_profile *prof, double scale)
{
	char key[65536];

	for (size_t i = 0; i < prof->n && !p->failed; i++) {
		const struct in_stack *st = &prof->v[i];
		size_t klen = 0;
		struct pp_sample *s;

		for (size_t j = 0; j < st->n && klen < sizeof(key) - 1; j++)
			klen += (size_t)snprintf(key + klen, sizeof(key) - klen, "%s;", st->frames[j]);
		if (klen >= sizeof(key))
			klen = sizeof(key) - 1;
		s = hmap_get(&p->samples, key, klen);
		if (!s) {
			if (!(s = calloc(1, sizeof(*s))) || !(s->locs = calloc(st->n + 1, 8)) ||
			    hmap_put(&p->samples, key, klen, s)) {
				if (s)
					free(s->locs);
				free(s);
				p->failed = true;
				return;
			}
			for (size_t j = 0; j < st->n; j++)
				s->locs[st->n - 1 - j] = pp_loc(p, st->frames[j]);
			s->n = st->n;
		}
		s->value += st->value * scale;
	}
}

static int write_pprof(FILE *f, const struct in_profile *b, const struct in_profile *n)
{
	struct pp p = { 0 };
	Perftools__Profiles__Profile prof = PERFTOOLS__PROFILES__PROFILE__INIT;
	Perftools__Profiles__ValueType vt = PERFTOOLS__PROFILES__VALUE_TYPE__INIT, *vtp = &vt;
	Perftools__Profiles__Sample **sv = NULL;
	int64_t *values = NULL;
	uint8_t *buf = NULL;
	void *tables = NULL;
	size_t ns = 0, len;
	int rc = -1;

	if (pdict_init(&p.d))
		goto out;
	pp_add(&p, n, 1.0);
	pp_add(&p, b, -n->total / b->total);
	vt.type = pdict_str(&p.d, n->unit[0] ? n->unit : "samples");
	vt.unit = pdict_str(&p.d, !strcmp(n->unit, "nanoseconds") ? "nanoseconds" :
				  !strcmp(n->unit, "bytes") ? "bytes" : "count");
	if (p.failed || p.d.failed || !(sv = calloc(p.samples.len + 1, sizeof(*sv))) ||
	    !(values = calloc(p.samples.len + 1, sizeof(*values))))
		goto out;
	hmap_for_each(&p.samples, e) {
		struct pp_sample *s = e->val;
		Perftools__Profiles__Sample *x = calloc(1, sizeof(*x));

		if (!x)
			goto out;
		perftools__profiles__sample__init(x);
		x->location_id = s->locs;
		x->n_location_id = s->n;
		values[ns] = (int64_t)llround(s->value);
		x->value = &values[ns];
		x->n_value = 1;
		sv[ns++] = x;
	}
	prof.sample_type = &vtp;
	prof.n_sample_type = 1;
	prof.sample = sv;
	prof.n_sample = ns;
	if (!(tables = pdict_to_pprof(&p.d, &prof)))
		goto out;
	len = perftools__profiles__profile__get_packed_size(&prof);
	if (!(buf = malloc(len ? len : 1)))
		goto out;
	perftools__profiles__profile__pack(&prof, buf);
	rc = out_gzip(f, buf, len);
out:
	for (size_t i = 0; i < ns; i++)
		free(sv[i]);
	free(sv);
	free(values);
	free(buf);
	free(tables);
	pdict_free(&p.d);
	hmap_for_each(&p.samples, e) {
		free(((struct pp_sample *)e->val)->locs);
		free(e->val);
	}
	hmap_free(&p.samples, NULL);
	hmap_free(&p.locs, NULL);
	if (rc && !errno)
		errno = ENOMEM;
	return rc;
}

/* ---- the command ---- */

static int check(const struct in_profile *b, const struct in_profile *n, const struct diff_opts *o)
{
	if (!b->total || !b->n)
		return fail("%s holds no samples", o->base);
	if (!n->total || !n->n)
		return fail("%s holds no samples", o->cur);
	if (b->unit[0] && n->unit[0] && strcmp(b->unit, n->unit)) {
		fprintf(stderr, "pyperf-bpf: diff: %s counts %s and %s counts %s: profiles of "
			"different modes do not compare\n", o->base, b->unit, o->cur, n->unit);
		return 2;
	}
	return 0;
}

int diff_main(int argc, char **argv)
{
	struct diff_opts o = { 0 };
	struct in_profile b = { 0 }, n = { 0 };
	struct outfile out[DIFF_MAX_OUTPUTS] = { 0 };
	char err[1024], title[4200];
	int rc;

	if ((rc = parse(argc, argv, &o)))
		return rc;
	if (in_profile_read(o.base, &b, err, sizeof(err)) ||
	    in_profile_read(o.cur, &n, err, sizeof(err))) {
		rc = fail("%s", err);
		goto done;
	}
	if ((rc = check(&b, &n, &o)))
		goto done;
	normalize(&b, o.no_lines);
	normalize(&n, o.no_lines);
	snprintf(title, sizeof(title), "Differential flame graph: %s against %s", o.cur, o.base);
	rc = 1;
	for (size_t i = 0; i < o.nout; i++)
		if (outfile_open(&out[i], o.out[i].path, err, sizeof(err))) {
			fprintf(stderr, "pyperf-bpf: diff: %s\n", err);
			goto discard;
		}
	for (size_t i = 0; i < o.nout; i++) {
		int w = o.out[i].format == DIFF_SVG ? out_svg_diff(out[i].f, title, &b, &n) :
			o.out[i].format == DIFF_PPROF ? write_pprof(out[i].f, &b, &n) :
							  write_report(out[i].f, &o, &b, &n);

		if (w || ferror(out[i].f)) {
			fprintf(stderr, "pyperf-bpf: diff: cannot write %s: %s\n",
				o.out[i].path ? o.out[i].path : "stdout", strerror(errno ? errno : EIO));
			goto discard;
		}
	}
	for (size_t i = 0; i < o.nout; i++)
		if (outfile_commit(&out[i], err, sizeof(err))) {
			fprintf(stderr, "pyperf-bpf: diff: %s\n", err);
			goto discard;
		}
	rc = 0;
discard:
	for (size_t i = 0; i < o.nout; i++)
		outfile_discard(&out[i]);
done:
	in_profile_free(&b);
	in_profile_free(&n);
	return rc;
}
