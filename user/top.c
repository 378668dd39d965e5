/* top.c - `pyperf-bpf top`: which functions use the CPU now, refreshed every
 * second, like top for processes (and py-spy top).
 *
 * It is a recording (record.c) without output files: after each drain of the
 * sampler's counts, the profile so far is folded into per-function counts,
 * self (the function is the leaf) and total (it is anywhere on the stack,
 * counted once per sample).  The previous totals are kept, so the difference
 * is the last interval.  Rows are sorted by the last interval's self share,
 * then its total share, then overall self time.
 *
 * On a terminal the view takes the alternate screen, hides the cursor and
 * reads keys without echo; everything is restored on exit, whichever way the
 * view ends.  Elsewhere (a pipe, a test) each refresh is printed as plain
 * text. */
#include "top.h"
#include "output.h"
#include "profile.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

struct top;
static void term_enter(struct top *t);

struct fstat {
	uint64_t self, total;        /* overall */
	uint64_t pself, ptotal;      /* overall at the previous refresh */
	uint64_t seen;               /* refresh number of the last sample counted */
	char label[];
};

struct top {
	const struct record_opts *o;
	struct hmap funcs;           /* label -> struct fstat */
	uint64_t refresh;            /* refreshes so far */
	uint64_t total, ptotal;      /* samples overall, at the previous refresh */
	bool entered, tty, raw;
	struct termios saved;
	bool quit;
};

static struct fstat *fstat_of(struct top *t, const char *label, size_t len)
{
	struct fstat *f = hmap_get(&t->funcs, label, len);

	if (f)
		return f;
	f = calloc(1, sizeof(*f) + len + 1);
	if (!f)
		return NULL;
	memcpy(f->label, label, len);
	if (hmap_put(&t->funcs, label, len, f)) {
		free(f);
		return NULL;
	}
	return f;
}

/* frames shown: Python ones, and native ones when they were recorded */
static bool shown(const struct pframe *f)
{
	return f->fn->kind != FN_MARK;
}

/* Count one (stack, thread) sample into the per-function totals. */
static void count_sample(struct top *t, const struct psample *s, struct sbuf *b)
{
	bool leaf = true;

	t->refresh++; /* a fresh mark per sample: a recursive function counts once */
	for (uint32_t i = 0; i < s->stack->nframes; i++) {
		const struct pframe *pf = &s->stack->frames[i];
		struct fstat *f;

		if (!shown(pf))
			continue;
		sb_reset(b);
		out_frame_label(b, pf, false);
		if (!sb_ok(b) || !(f = fstat_of(t, b->s, b->len)))
			continue;
		if (leaf)
			f->self += s->count;
		leaf = false;
		if (f->seen != t->refresh) {
			f->total += s->count;
			f->seen = t->refresh;
		}
	}
}

struct row {
	const struct fstat *f;
	uint64_t dself, dtotal;
};

static int cmp_row(const void *a, const void *b)
{
	const struct row *x = a, *y = b;

	if (x->dself != y->dself)
		return x->dself < y->dself ? 1 : -1;
	if (x->dtotal != y->dtotal)
		return x->dtotal < y->dtotal ? 1 : -1;
	if (x->f->self != y->f->self)
		return x->f->self < y->f->self ? 1 : -1;
	return strcmp(x->f->label, y->f->label);
}

static int screen_rows(const struct top *t)
{
	struct winsize ws;

	if (t->tty && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 6)
		return ws.ws_row;
	return 0; /* not a terminal: no limit but --top */
}

static double pct(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * part / whole : 0.0;
}

static void render(struct top *t, struct row *rows, size_t n, double elapsed)
{
	uint64_t dt = t->total - t->ptotal;
	int lines = screen_rows(t);
	size_t show = t->o->top;
	double period = 1.0 / t->o->freq;

	if (lines && (size_t)(lines - 5) < show)
		show = (size_t)(lines - 5);
	if (t->tty)
		fputs("\033[H\033[2J", stdout);
	printf("pyperf-bpf top: %.0f s, %d Hz, %llu samples (%llu in the last interval)%s\n",
	       elapsed, t->o->freq, (unsigned long long)t->total, (unsigned long long)dt,
	       t->tty ? "   q: quit" : "");
	printf("\n%7s %7s %9s %9s  %s\n", "%Own", "%Total", "OwnTime", "TotalTime",
	       "Function (file)");
	for (size_t i = 0; i < n && i < show; i++)
		printf("%6.1f%% %6.1f%% %8.2fs %8.2fs  %s\n", pct(rows[i].dself, dt),
		       pct(rows[i].dtotal, dt), rows[i].f->self * period,
		       rows[i].f->total * period, rows[i].f->label);
	if (!t->tty)
		putchar('\n');
	fflush(stdout);
}

static void on_drain(void *ctx, struct profile *prof, const uint64_t *stats, double elapsed,
		     bool final)
{
	struct top *t = ctx;
	size_t n, nrows = 0;
	struct psample **v;
	struct sbuf b = { 0 };
	struct row *rows;

	if (final)
		return; /* the view closes */
	if (!t->entered)
		term_enter(t); /* now that the recording runs: errors before it stay readable */
	v = profile_samples(prof, &n);
	if (!v)
		return;
	hmap_for_each(&t->funcs, e) {
		struct fstat *f = e->val;

		f->pself = f->self;
		f->ptotal = f->total;
		f->self = f->total = 0;
	}
	t->ptotal = t->total;
	t->total = prof->total;
	for (size_t i = 0; i < n; i++)
		count_sample(t, v[i], &b);
	sb_free(&b);
	free(v);
	rows = malloc((t->funcs.len + 1) * sizeof(*rows));
	if (!rows)
		return;
	hmap_for_each(&t->funcs, e) {
		const struct fstat *f = e->val;

		rows[nrows].f = f;
		rows[nrows].dself = f->self - f->pself;
		rows[nrows++].dtotal = f->total - f->ptotal;
	}
	qsort(rows, nrows, sizeof(*rows), cmp_row);
	render(t, rows, nrows, elapsed);
	free(rows);
}

static bool should_stop(void *ctx)
{
	struct top *t = ctx;
	char c;

	while (t->raw && read(STDIN_FILENO, &c, 1) == 1)
		if (c == 'q' || c == 'Q')
			t->quit = true;
	return t->quit;
}

static void term_enter(struct top *t)
{
	struct termios raw;

	t->entered = true;
	t->tty = isatty(STDOUT_FILENO);
	if (t->tty)
		fputs("\033[?1049h\033[?25l", stdout); /* alternate screen, no cursor */
	if (isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO, &t->saved) == 0) {
		raw = t->saved;
		raw.c_lflag &= ~(ICANON | ECHO); /* keys one by one; Ctrl-C still signals */
		raw.c_cc[VMIN] = 0;
		raw.c_cc[VTIME] = 0;
		t->raw = tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0;
	}
	fflush(stdout);
}

static void term_leave(struct top *t)
{
	if (t->raw)
		tcsetattr(STDIN_FILENO, TCSANOW, &t->saved);
	if (t->tty)
		fputs("\033[?25h\033[?1049l", stdout);
	fflush(stdout);
}

static void free_fstat(void *v)
{
	free(v);
}

int top_run(struct record_opts *o)
{
	struct top t;
	int rc;

	memset(&t, 0, sizeof(t));
	t.o = o;
	o->noutputs = 0;
	o->on_drain = on_drain;
	o->should_stop = should_stop;
	o->cb_ctx = &t;
	rc = record_run(o);
	term_leave(&t);
	if (t.quit)
		rc = 0; /* the user closed the view: whatever the command's status */
	hmap_free(&t.funcs, free_fstat);
	return rc;
}
