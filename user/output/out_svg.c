/* out_svg.c - an interactive flame graph in one self-contained SVG file.
 *
 * The samples are merged into a tree of frames, root first, with the same
 * frame labels as the folded output (synthetic process/thread/marker frames,
 * Python and native frames, kernel frames "NAME_[k]"), under a root "all".
 * Children are ordered by label, so a profile always draws the same way.
 * Each frame is a <g class="f"> holding a <title> (what any viewer shows on
 * hover), a <rect> and a <text>, with data attributes: the label, its kind
 * (python, native, kernel, mark), its sample count, its offset from the left
 * in samples and its depth.  Frames narrower than 0.1 px at full width are
 * not drawn; their samples still count in their parents.
 *
 * A small script (embedded, no network) makes it interactive: hovering shows
 * "label (N samples, P%)" at the bottom; clicking a frame zooms so that it
 * spans the width, with its ancestors kept and everything else hidden; "Reset
 * Zoom" undoes that; "Search" (or search(term) from a console, or a URL
 * ending in #s=TERM) highlights frames whose label contains the term (or
 * matches it as a regular expression) and shows "Matched: P%", the share of
 * all samples under a matched frame, nested matches counted once.  Colours
 * are by kind: Python yellow to orange, native red, kernel blue, synthetic
 * frames grey, the shade from a hash of the name.  --icicle puts the root at
 * the top.  The image is as tall as its deepest drawn frame, and a flame
 * graph taller than the window opens scrolled to its root, at the bottom. */
#include "out_common.h"
#include "in_profile.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define WIDTH 1200
#define FRAME_H 16
#define TOP 64          /* title, subtitle and controls */
#define BOTTOM 28       /* the details line */
#define MIN_PX 0.1

enum svg_kind { K_MARK, K_PYTHON, K_NATIVE, K_KERNEL };
static const char *const kind_names[] = { "mark", "python", "native", "kernel" };

struct node {
	char *label;
	enum svg_kind kind;
	uint64_t count;
	uint64_t off;                /* of count, from stacks taken off the CPU */
	double base;                 /* out_svg_diff: the base's share of this frame path
				      * (0..1), -1: the path is not in the base */
	struct node **kids;
	size_t nkids, capkids;
};

struct tree {
	struct node root;
	struct hmap index;           /* (parent pointer, label) -> child */
	bool failed;
};

static struct node *child(struct tree *t, struct node *parent, const char *label, size_t len,
			  enum svg_kind kind)
{
	size_t klen = sizeof(parent) + len + 1;
	char *key = malloc(klen);
	struct node *n;

	if (!key) {
		t->failed = true;
		return NULL;
	}
	memcpy(key, &parent, sizeof(parent));
	memcpy(key + sizeof(parent), label, len);
	key[klen - 1] = (char)kind; /* a kernel and a user frame may share a name */
	n = hmap_get(&t->index, key, klen);
	if (!n) {
		n = calloc(1, sizeof(*n));
		if (n)
			n->label = strndup(label, len);
		if (!n || !n->label || hmap_put(&t->index, key, klen, n)) {
			if (n)
				free(n->label);
			free(n);
			free(key);
			t->failed = true;
			return NULL;
		}
		n->kind = kind;
		if (parent->nkids == parent->capkids) {
			size_t cap = parent->capkids ? parent->capkids * 2 : 4;
			struct node **v = realloc(parent->kids, cap * sizeof(*v));

			if (!v) {
				free(key);
				t->failed = true;
				return NULL;
			}
			parent->kids = v;
			parent->capkids = cap;
		}
		parent->kids[parent->nkids++] = n;
	}
	free(key);
	return n;
}

static enum svg_kind kind_of(const struct pframe *f)
{
	switch (f->fn->kind) {
	case FN_PYTHON:
		return K_PYTHON;
	case FN_MARK:
		return K_MARK;
	default:
		return K_NATIVE;
	}
}

static void add_weight(struct node *n, const struct psample *s)
{
	n->count += s->count;
	if (s->stack->flags & STACK_OFFCPU)
		n->off += s->count;
}

/* add one sample's frames, root first */
static void add_sample(struct tree *t, const struct out_ctx *c, const struct psample *s,
		       struct sbuf *b)
{
	struct node *n = &t->root;
	const char *p, *semi;

	add_weight(n, s);
	sb_reset(b);
	out_root_frames(b, c, s);
	if (!sb_ok(b)) {
		t->failed = true;
		return;
	}
	for (p = b->len ? b->s : ""; n && (semi = strchr(p, ';')); p = semi + 1) {
		n = child(t, n, p, (size_t)(semi - p), K_MARK);
		if (n)
			add_weight(n, s);
	}
	for (uint32_t i = s->stack->nframes; n && i-- > 0;) {
		sb_reset(b);
		out_frame_label(b, &s->stack->frames[i], c->lines);
		n = sb_ok(b) ? child(t, n, b->s, b->len, kind_of(&s->stack->frames[i])) : NULL;
		if (n)
			add_weight(n, s);
	}
	for (uint32_t i = s->kstack ? s->kstack->n : 0; n && i-- > 0;) {
		sb_reset(b);
		sb_printf(b, "%s_[k]", s->kstack->names[i]);
		n = sb_ok(b) ? child(t, n, b->s, b->len, K_KERNEL) : NULL;
		if (n)
			add_weight(n, s);
	}
	if (!n)
		t->failed = true;
}

static int cmp_node(const void *a, const void *b)
{
	return strcmp((*(struct node *const *)a)->label, (*(struct node *const *)b)->label);
}

static void free_node(struct node *n)
{
	for (size_t i = 0; i < n->nkids; i++) {
		free_node(n->kids[i]);
		free(n->kids[i]);
	}
	free(n->kids);
	free(n->label);
}

/* XML text: escaped, and '?' for bytes that do not make valid UTF-8 */
static void put_xml(FILE *f, const char *str)
{
	const unsigned char *s = (const unsigned char *)str;

	while (*s) {
		unsigned char c = *s;
		int len = out_utf8_len((const char *)s);

		if (!len || (c < 0x20 && c != '\t')) {
			fputc('?', f);
			s++;
			continue;
		}
		switch (c) {
		case '&': fputs("&amp;", f); break;
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '"': fputs("&quot;", f); break;
		case '\'': fputs("&apos;", f); break;
		default: fwrite(s, 1, (size_t)len, f);
		}
		s += len;
	}
}

static uint32_t name_hash(const char *s)
{
	uint32_t h = 2166136261u;

	/* the function name only, so one function keeps its colour on every line */
	for (; *s && *s != ' '; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

/* off: the frame's time is mostly off the CPU (--mode wall, offcpu) */
static void color(enum svg_kind k, bool off, const char *label, char *out, size_t len)
{
	uint32_t h = name_hash(label);
	unsigned v1 = h % 56, v2 = (h >> 8) % 56, v3 = (h >> 16) % 40;

	if (off && k != K_KERNEL && k != K_MARK) { /* teal to aqua */
		snprintf(out, len, "rgb(%u,%u,%u)", 40 + v3, 170 + v1 % 50, 170 + v2 % 50);
		return;
	}
	switch (k) {
	case K_PYTHON: /* yellow to orange */
		snprintf(out, len, "rgb(%u,%u,%u)", 205 + v1 % 50, 150 + v2 + v3 % 30, 40 + v3);
		break;
	case K_NATIVE: /* reds */
		snprintf(out, len, "rgb(%u,%u,%u)", 200 + v1 % 55, 60 + v2, 50 + v3);
		break;
	case K_KERNEL: /* blues */
		snprintf(out, len, "rgb(%u,%u,%u)", 70 + v3, 130 + v1, 200 + v2 % 55);
		break;
	default: /* greys */
		snprintf(out, len, "rgb(%u,%u,%u)", 170 + v3, 170 + v3, 170 + v3);
	}
}

enum { UNIT_SAMPLE = 0, UNIT_NS = 1, UNIT_BYTE = 2 }; /* the script's `unit` too */

struct draw {
	FILE *f;
	uint64_t total;
	double maxdelta;             /* out_svg_diff: the largest change of a share (> 0);
				      * 0: not a differential graph */
	double scale;                /* pixels per sample */
	unsigned height;
	bool icicle;
	int unit;                    /* what a count is: UNIT_SAMPLE, UNIT_NS, UNIT_BYTE */
};

static double frame_y(const struct draw *d, unsigned depth)
{
	return d->icicle ? TOP + (double)depth * FRAME_H
			 : d->height - BOTTOM - (double)(depth + 1) * FRAME_H;
}

/* out_svg_diff: a frame's share now less its share in the base */
static double share_delta(const struct draw *d, const struct node *n)
{
	return (double)n->count / (double)d->total - (n->base < 0 ? 0 : n->base);
}

/* red where the share grew, blue where it shrank, white where it stayed;
 * the saturation grows with the change against the largest one */
static void diff_color(const struct draw *d, const struct node *n, char *out, size_t len)
{
	double delta = share_delta(d, n), s = fabs(delta) / d->maxdelta;
	unsigned v = (unsigned)(255.0 * (1.0 - (s > 1 ? 1 : s)));

	if (delta > 0)
		snprintf(out, len, "rgb(255,%u,%u)", v, v);
	else if (delta < 0)
		snprintf(out, len, "rgb(%u,%u,255)", v, v);
	else
		snprintf(out, len, "rgb(255,255,255)");
}

static void diff_title(const struct draw *d, const struct node *n)
{
	double now = 100.0 * (double)n->count / (double)d->total;

	if (n->base < 0)
		fprintf(d->f, " (new: %.2f%%, not in the base)", now);
	else
		fprintf(d->f, " (base %.2f%%, new %.2f%%, %+.2f points)", 100.0 * n->base, now,
			now - 100.0 * n->base);
}

static void draw(const struct draw *d, const struct node *n, uint64_t x, unsigned depth)
{
	double w = (double)n->count * d->scale;
	char fill[32];

	if (w < MIN_PX)
		return;
	if (d->maxdelta > 0)
		diff_color(d, n, fill, sizeof(fill));
	else
		color(n->kind, n->off * 2 > n->count, n->label, fill, sizeof(fill));
	fprintf(d->f, "<g class=\"f\" data-kind=\"%s\" data-samples=\"%llu\" data-x=\"%llu\" "
		"data-depth=\"%u\" data-name=\"", kind_names[n->kind],
		(unsigned long long)n->count, (unsigned long long)x, depth);
	put_xml(d->f, n->label);
	if (d->maxdelta > 0)
		fprintf(d->f, "\" data-delta=\"%.3f", 100.0 * share_delta(d, n));
	fputs("\"><title>", d->f);
	put_xml(d->f, n->label);
	if (d->maxdelta > 0)
		diff_title(d, n);
	else if (d->unit == UNIT_NS)
		fprintf(d->f, " (%.3f ms, %.0f%% off-CPU, ", n->count / 1e6,
			100.0 * (double)n->off / (double)(n->count ? n->count : 1));
	else if (d->unit == UNIT_BYTE)
		fprintf(d->f, " (%.2f MiB, ", n->count / 1048576.0);
	else
		fprintf(d->f, " (%llu samples, ", (unsigned long long)n->count);
	if (d->maxdelta <= 0)
		fprintf(d->f, "%.2f%%)", 100.0 * (double)n->count / (double)d->total);
	fprintf(d->f, "</title><rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" "
		"height=\"%d\" fill=\"%s\" rx=\"2\"/><text x=\"%.2f\" y=\"%.1f\"></text></g>\n",
		(double)x * d->scale + 10, frame_y(d, depth), w, FRAME_H - 1, fill,
		(double)x * d->scale + 13, frame_y(d, depth) + FRAME_H - 4.5);
	for (size_t i = 0; i < n->nkids; i++) {
		draw(d, n->kids[i], x, depth + 1);
		x += n->kids[i]->count;
	}
}

/* The depth of the deepest frame drawn (at least MIN_PX wide) under n at
 * depth: what the image's height follows.  A deep stack of a few samples,
 * not drawn, would leave the first screen of a tall image empty. */
static unsigned drawn_depth(const struct node *n, double scale, unsigned depth)
{
	unsigned deepest = depth;

	for (size_t i = 0; i < n->nkids; i++) {
		if ((double)n->kids[i]->count * scale >= MIN_PX) {
			unsigned d = drawn_depth(n->kids[i], scale, depth + 1);

			if (d > deepest)
				deepest = d;
		}
	}
	return deepest;
}

static void sort_tree(struct node *n)
{
	if (n->nkids) /* a leaf has no kids array: qsort wants one */
		qsort(n->kids, n->nkids, sizeof(*n->kids), cmp_node);
	for (size_t i = 0; i < n->nkids; i++)
		sort_tree(n->kids[i]);
}

/* The script: zoom, search, details.  Frame positions are recomputed from
 * data-x, data-samples and data-depth, so zooming needs no layout data. */
static const char script[] =
	"var W = %d, PAD = 10, total = %llu, zoomed = null, unit = %d;\n"
	"function amount(v) { return unit == 1 ? (v / 1e6).toFixed(3) + ' ms' : unit == 2 ?\n"
	"  (v / 1048576).toFixed(2) + ' MiB' : v + ' samples'; }\n"
	"var frames = Array.prototype.slice.call(document.querySelectorAll('g.f'));\n"
	"var details = document.getElementById('details'), matched = document.getElementById('matched');\n"
	"var unzoom = document.getElementById('unzoom');\n"
	"function num(g, a) { return parseFloat(g.getAttribute('data-' + a)); }\n"
	"function label(g) { return g.getAttribute('data-name'); }\n"
	"function fit(g) {\n"
	"  var r = g.querySelector('rect'), t = g.querySelector('text'), w = parseFloat(r.getAttribute('width'));\n"
	"  var n = Math.floor((w - 6) / 6.6), s = label(g);\n"
	"  t.textContent = n < 3 ? '' : s.length <= n ? s : s.substring(0, n - 2) + '..';\n"
	"}\n"
	"function place(g, x0, span) {\n"
	"  var scale = (W - 2 * PAD) / span, x = (num(g, 'x') - x0) * scale + PAD;\n"
	"  var r = g.querySelector('rect'), t = g.querySelector('text');\n"
	"  r.setAttribute('x', x.toFixed(2)); r.setAttribute('width', (num(g, 'samples') * scale).toFixed(2));\n"
	"  t.setAttribute('x', (x + 3).toFixed(2)); fit(g);\n"
	"}\n"
	"function zoom(z) {\n"
	"  var zx = num(z, 'x'), zs = num(z, 'samples'), zd = num(z, 'depth');\n"
	"  zoomed = z; unzoom.style.opacity = 1;\n"
	"  frames.forEach(function (g) {\n"
	"    var x = num(g, 'x'), s = num(g, 'samples'), d = num(g, 'depth');\n"
	"    var inside = d >= zd && x >= zx && x + s <= zx + zs;\n"
	"    var above = d < zd && x <= zx && x + s >= zx + zs;\n"
	"    g.style.display = inside || above ? '' : 'none';\n"
	"    if (inside) place(g, zx, zs);\n"
	"    else if (above) fitAbove(g);\n"
	"  });\n"
	"}\n"
	"function fitAbove(g) {\n"
	"  var r = g.querySelector('rect'); r.setAttribute('x', PAD); r.setAttribute('width', W - 2 * PAD);\n"
	"  g.querySelector('text').setAttribute('x', PAD + 3); fit(g);\n"
	"}\n"
	"function resetZoom() {\n"
	"  zoomed = null; unzoom.style.opacity = 0.3;\n"
	"  frames.forEach(function (g) { g.style.display = ''; place(g, 0, total); });\n"
	"}\n"
	"function search(term) {\n"
	"  var re = null, spans = [], sum = 0, end = -1;\n"
	"  try { re = new RegExp(term); } catch (e) { re = null; }\n"
	"  frames.forEach(function (g) {\n"
	"    var r = g.querySelector('rect'), s = label(g);\n"
	"    if (!r.hasAttribute('data-fill')) r.setAttribute('data-fill', r.getAttribute('fill'));\n"
	"    var hit = term !== '' && (s.indexOf(term) >= 0 || (re && re.test(s)));\n"
	"    r.setAttribute('fill', hit ? 'rgb(230,0,230)' : r.getAttribute('data-fill'));\n"
	"    g.setAttribute('data-match', hit ? '1' : '0');\n"
	"    if (hit) spans.push([num(g, 'x'), num(g, 'x') + num(g, 'samples')]);\n"
	"  });\n"
	"  spans.sort(function (a, b) { return a[0] - b[0]; });\n"
	"  spans.forEach(function (s) {\n"
	"    if (s[0] >= end) { sum += s[1] - s[0]; end = s[1]; }\n"
	"    else if (s[1] > end) { sum += s[1] - end; end = s[1]; }\n"
	"  });\n"
	"  matched.textContent = term === '' ? '' : 'Matched: ' + (100 * sum / total).toFixed(1) + '%%';\n"
	"  matched.setAttribute('data-share', term === '' ? '' : (100 * sum / total).toFixed(3));\n"
	"  return sum;\n"
	"}\n"
	"frames.forEach(function (g) {\n"
	"  fit(g);\n"
	"  g.addEventListener('mouseover', function () {\n"
	"    details.textContent = label(g) + ' (' + amount(num(g, 'samples')) + ', ' +\n"
	"      (100 * num(g, 'samples') / total).toFixed(2) + '%%)';\n"
	"  });\n"
	"  g.addEventListener('mouseout', function () { details.textContent = ' '; });\n"
	"  g.addEventListener('click', function () { zoom(g); });\n"
	"});\n"
	"unzoom.addEventListener('click', resetZoom);\n"
	"document.getElementById('search').addEventListener('click', function () {\n"
	"  var t = prompt('Search for (text or regular expression):', '');\n"
	"  if (t !== null) search(t);\n"
	"});\n"
	"var m = /[#?&]s=([^&]*)/.exec(location.href);\n"
	"if (m) search(decodeURIComponent(m[1]));\n"
	"// the first screen shows the root and what sits on it: a flame graph\n"
	"// taller than the window opens scrolled to its bottom (an icicle's root\n"
	"// is on top already)\n"
	"var root = document.querySelector('g.f[data-depth=\"0\"] rect');\n"
	"if (root && root.scrollIntoView) root.scrollIntoView({block: 'end'});\n";

/* The document: title, subtitle, controls, the frames under root (sized by
 * d's total and scale), the details line and the script. */
static int write_graph(struct draw *d, const char *title, const char *subtitle,
		       const struct node *root)
{
	FILE *f = d->f;
	unsigned depth;

	d->scale = d->total ? (double)(WIDTH - 20) / (double)d->total : 0;
	depth = drawn_depth(root, d->scale, 0) + 1;
	d->height = TOP + depth * FRAME_H + BOTTOM + 4;
	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
		"<svg version=\"1.1\" width=\"%d\" height=\"%u\" viewBox=\"0 0 %d %u\" "
		"xmlns=\"http://www.w3.org/2000/svg\" font-family=\"monospace\" font-size=\"11\">\n"
		"<style>g.f { cursor: pointer; } g.f:hover rect { stroke: black; stroke-width: 0.5; }"
		" g.f text { pointer-events: none; fill: black; } .ctl { cursor: pointer; fill: #00c; }"
		"</style>\n<rect width=\"100%%\" height=\"100%%\" fill=\"#fafafa\"/>\n",
		WIDTH, d->height, WIDTH, d->height);
	fputs("<text id=\"title\" x=\"600\" y=\"20\" text-anchor=\"middle\" font-size=\"16\">", f);
	put_xml(f, title);
	fputs("</text>\n<text id=\"subtitle\" x=\"600\" y=\"38\" text-anchor=\"middle\">", f);
	put_xml(f, subtitle);
	fputs("</text>\n<text id=\"unzoom\" class=\"ctl\" x=\"10\" y=\"56\" style=\"opacity:0.3\">"
	      "Reset Zoom</text>\n<text id=\"search\" class=\"ctl\" x=\"1190\" y=\"56\" "
	      "text-anchor=\"end\">Search</text>\n<text id=\"matched\" x=\"1100\" y=\"56\" "
	      "text-anchor=\"end\"></text>\n", f);
	if (!d->total)
		fprintf(f, "<text x=\"600\" y=\"%u\" text-anchor=\"middle\">no samples</text>\n",
			TOP + 20);
	else
		draw(d, root, 0, 0);
	fprintf(f, "<text id=\"details\" x=\"10\" y=\"%u\"> </text>\n<script><![CDATA[\n",
		d->height - 10);
	fprintf(f, script, WIDTH, (unsigned long long)(d->total ? d->total : 1), d->unit);
	fputs("]]></script>\n</svg>\n", f);
	return ferror(f) ? -1 : 0;
}

static int write_svg(FILE *f, const struct out_ctx *c, struct tree *t)
{
	struct draw d = { .f = f, .total = t->root.count, .icicle = c->icicle,
			  .unit = mode_is_time(c->mode) ? UNIT_NS : mode_is_bytes(c->mode) ? UNIT_BYTE
									       : UNIT_SAMPLE };
	char title[600], sub[400];

	snprintf(title, sizeof(title), "Flame graph: %s", c->title ? c->title : "pyperf-bpf");
	if (mode_desc(c->mode)->quantity == MQ_SAMPLES)
		snprintf(sub, sizeof(sub), "%s mode: %llu samples in %.1f s at %d Hz per CPU; "
			 "Python yellow, native red, kernel blue", mode_name(c->mode),
			 (unsigned long long)d.total, c->duration_s, c->freq);
	else if (mode_is_bytes(c->mode))
		snprintf(sub, sizeof(sub), "%s mode: %.2f MiB %s in %.1f s; Python yellow, native "
			 "red, kernel blue", mode_name(c->mode), d.total / 1048576.0,
			 mode_desc(c->mode)->svg_amount, c->duration_s);
	else
		snprintf(sub, sizeof(sub), "%s mode: %.2f s of thread time in %.1f s (off-CPU %.2f "
			 "s); Python yellow, native red, kernel blue, mostly off-CPU teal",
			 mode_name(c->mode), d.total / 1e9, c->duration_s,
			 t->root.off / 1e9);
	return write_graph(&d, title, sub, &t->root);
}

/* ---- the differential flame graph (pyperf-bpf diff) ---- */

/* what a frame of our own output is, from its label */
static enum svg_kind label_kind(const char *l)
{
	size_t n = strlen(l);
	const char *open = strrchr(l, '('), *colon;

	if (n > 4 && !strcmp(l + n - 4, "_[k]"))
		return K_KERNEL;
	if (!n || l[n - 1] != ')' || !open || open == l)
		return K_MARK;
	colon = strrchr(open, ':');
	return colon && (isdigit((unsigned char)colon[1]) || colon[1] == '-') ? K_PYTHON : K_NATIVE;
}

static void add_profile(struct tree *t, const struct in_profile *p)
{
	for (size_t i = 0; i < p->n && !t->failed; i++) {
		uint64_t v = (uint64_t)llround(p->v[i].value < 0 ? 0 : p->v[i].value);
		struct node *n = &t->root;

		n->count += v;
		for (size_t j = 0; j < p->v[i].n && n; j++) {
			const char *l = p->v[i].frames[j];

			if ((n = child(t, n, l, strlen(l), label_kind(l))))
				n->count += v;
		}
	}
}

/* parent's kid with this label in t, or NULL */
static const struct node *find_child(struct tree *t, const struct node *parent,
				     const struct node *like)
{
	size_t len = strlen(like->label), klen = sizeof(parent) + len + 1;
	char *key = malloc(klen);
	const struct node *n;

	if (!key)
		return NULL;
	memcpy(key, &parent, sizeof(parent));
	memcpy(key + sizeof(parent), like->label, len);
	key[klen - 1] = (char)like->kind;
	n = hmap_get(&t->index, key, klen);
	free(key);
	return n;
}

/* each frame path of cur gets its share in the base (b, under bn); the
 * largest change of a share into *maxdelta */
static void set_base(struct node *cn, double ctotal, struct tree *b, const struct node *bn,
		     double btotal, double *maxdelta)
{
	double delta;

	cn->base = bn ? (double)bn->count / btotal : -1;
	delta = fabs((double)cn->count / ctotal - (cn->base < 0 ? 0 : cn->base));
	if (delta > *maxdelta)
		*maxdelta = delta;
	for (size_t i = 0; i < cn->nkids; i++)
		set_base(cn->kids[i], ctotal, b, bn ? find_child(b, bn, cn->kids[i]) : NULL, btotal,
			 maxdelta);
}

int out_svg_diff(FILE *f, const char *title, const struct in_profile *base,
		 const struct in_profile *cur)
{
	struct tree c, b;
	struct draw d = { .f = f, .unit = UNIT_SAMPLE };
	char sub[400];
	int rc = -1;

	memset(&c, 0, sizeof(c));
	memset(&b, 0, sizeof(b));
	c.root.label = strdup("all");
	b.root.label = strdup("all");
	if (!c.root.label || !b.root.label)
		goto out;
	add_profile(&c, cur);
	add_profile(&b, base);
	if (c.failed || b.failed || !c.root.count || !b.root.count)
		goto out;
	sort_tree(&c.root);
	set_base(&c.root, (double)c.root.count, &b, &b.root, (double)b.root.count, &d.maxdelta);
	if (d.maxdelta <= 0)
		d.maxdelta = 1e-12; /* no change anywhere: every frame white */
	d.total = c.root.count;
	snprintf(sub, sizeof(sub), "the new profile's shape; red: a larger share of its total than "
		 "in the base, blue: a smaller one (the largest change %.2f points)",
		 100.0 * (d.maxdelta > 1e-9 ? d.maxdelta : 0));
	rc = write_graph(&d, title, sub, &c.root);
out:
	if (rc && !errno)
		errno = ENOMEM;
	free_node(&c.root);
	free_node(&b.root);
	hmap_free(&c.index, NULL);
	hmap_free(&b.index, NULL);
	return rc;
}

int out_svg(FILE *f, const struct out_ctx *c)
{
	struct tree t;
	struct sbuf b = { 0 };
	size_t n;
	struct psample **v = out_samples(c, &n);
	int rc = -1;

	memset(&t, 0, sizeof(t));
	t.root.label = strdup("all");
	t.root.kind = K_MARK;
	if (!v || !t.root.label)
		goto out;
	for (size_t i = 0; i < n && !t.failed; i++)
		add_sample(&t, c, v[i], &b);
	if (t.failed)
		goto out;
	sort_tree(&t.root);
	rc = write_svg(f, c, &t);
out:
	if (rc && !errno)
		errno = ENOMEM;
	free_node(&t.root);
	hmap_free(&t.index, NULL);
	sb_free(&b);
	free(v);
	return rc;
}
