/* top.c - `pyperf-bpf top`: which functions use the CPU now, refreshed every
 * second, like top for processes (and py-spy top).
 *
 * It is a sampling session (session.c) without output files: after each drain of the
 * sampler's counts, the profile so far is counted per function (fncount.c:
 * own, the function is the leaf; total, it is anywhere on the stack).  The
 * previous refresh's counts are kept, so the difference is the last
 * interval.  Rows are sorted by the last interval's self share,
 * then its total share, then overall self time.
 *
 * On a terminal the view takes the alternate screen, hides the cursor and
 * reads keys without echo; everything is restored on exit, whichever way the
 * view ends.  Elsewhere (a pipe, a test) each refresh is printed as plain
 * text. */
#include "top.h"
#include "cmdline.h"
#include "options.h"
#include "fncount.h"
#include "output.h"
#include "profile.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

struct top;
static void term_enter(struct top *t);

struct top {
	const struct record_opts *o;
	struct fn_counts prev;       /* per function, at the previous refresh */
	uint64_t total, ptotal;      /* samples overall, at the previous refresh */
	bool entered, tty, raw;
	struct termios saved;
	bool quit;
};

/* a function's row: its counts overall and in the last interval */
struct row {
	const struct fn_count *f;
	uint64_t dself, dtotal;
	char *label;                 /* "name (file)": out_frame_label without lines */
};

static int cmp_row(const void *a, const void *b)
{
	const struct row *x = a, *y = b;

	if (x->dself != y->dself)
		return x->dself < y->dself ? 1 : -1;
	if (x->dtotal != y->dtotal)
		return x->dtotal < y->dtotal ? 1 : -1;
	if (x->f->own != y->f->own)
		return x->f->own < y->f->own ? 1 : -1;
	return strcmp(x->label, y->label);
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

#define TOP_THREADS 4     /* threads named on the Threads line */
#define TOP_NAME_SHOWN 32 /* bytes of a thread's name shown there */

static int by_weight(const void *a, const void *b)
{
	const struct pthread_total *x = a, *y = b;

	if (x->weight != y->weight)
		return x->weight > y->weight ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

/* "Threads: " and the busiest of them over the whole run, by name and
 * share, then how many others (th[0..nth), any order; sorted here) */
static void print_threads(const struct profile *prof, struct pthread_total *th, size_t nth)
{
	uint64_t all = 0;

	if (!nth)
		return;
	qsort(th, nth, sizeof(*th), by_weight);
	for (size_t i = 0; i < nth; i++)
		all += th[i].weight;
	printf("Threads: %zu", nth);
	for (size_t i = 0; i < nth && i < TOP_THREADS; i++) {
		const char *name = profile_thread_name(prof, th[i].tid);
		char shown[TOP_NAME_SHOWN + 4];
		size_t k = 0;

		/* one line whatever the name holds, cut at a character */
		for (const char *c = name; *c && k < TOP_NAME_SHOWN; c++)
			shown[k++] = (unsigned char)*c < 0x20 || *c == 0x7f ? '?' : *c;
		while (k && name[k] && ((unsigned char)name[k] & 0xc0) == 0x80)
			k--;
		snprintf(shown + k, sizeof(shown) - k, "%s", name[k] ? "..." : "");
		printf("%s\"%s\" (%u) %.1f%%", i ? ", " : " (busiest: ", shown, th[i].tid,
		       pct(th[i].weight, all));
	}
	printf("%s)\n", nth > TOP_THREADS ? ", ..." : "");
}

static void render(struct top *t, struct row *rows, size_t n, double elapsed,
		   const struct profile *prof, struct pthread_total *th, size_t nth)
{
	uint64_t dt = t->total - t->ptotal;
	int lines = screen_rows(t);
	size_t show = t->o->top;
	/* seconds per count: a sample, or a nanosecond in the off-CPU modes;
	 * MiB per count (a byte) in faults and alloc mode */
	bool bytes = mode_is_bytes(t->o->s.mode);
	double period = mode_per_count(t->o->s.mode, t->o->s.freq);
	char u = bytes ? 'M' : 's';

	if (lines && (size_t)(lines - 6) < show)
		show = (size_t)(lines - 6);
	if (t->tty)
		fputs("\033[H\033[2J", stdout);
	if (mode_desc(t->o->s.mode)->quantity == MQ_SAMPLES)
		printf("pyperf-bpf top: %.0f s, %d Hz, %llu samples (%llu in the last interval)%s\n",
		       elapsed, t->o->s.freq, (unsigned long long)t->total,
		       (unsigned long long)dt, t->tty ? "   q: quit" : "");
	else if (bytes)
		printf("pyperf-bpf top: %.0f s, %s mode, %.2f MiB %s (%.2f MiB in the "
		       "last interval)%s\n", elapsed, mode_name(t->o->s.mode), t->total * period,
		       mode_desc(t->o->s.mode)->amount, dt * period,
		       t->tty ? "   q: quit" : "");
	else
		printf("pyperf-bpf top: %.0f s, %s mode, %.2f s of thread time (%.2f s in the last "
		       "interval)%s\n", elapsed, mode_name(t->o->s.mode),
		       t->total * 1e-9, dt * 1e-9, t->tty ? "   q: quit" : "");
	print_threads(prof, th, nth);
	printf("\n%7s %7s %9s %9s  %s\n", "%Own", "%Total", bytes ? "OwnMiB" : "OwnTime",
	       bytes ? "TotalMiB" : "TotalTime", "Function (file)");
	for (size_t i = 0; i < n && i < show; i++)
		printf("%6.1f%% %6.1f%% %8.2f%c %8.2f%c  %s\n", pct(rows[i].dself, dt),
		       pct(rows[i].dtotal, dt), rows[i].f->own * period, u,
		       rows[i].f->total * period, u, rows[i].label);
	if (!t->tty)
		putchar('\n');
	fflush(stdout);
}

static char *label_of(const struct func *fn)
{
	struct pframe pf = { .fn = (struct func *)fn, .instr = UINT32_MAX };
	struct sbuf b = { 0 };

	out_frame_label(&b, &pf, false);
	if (!sb_ok(&b)) {
		sb_free(&b);
		return NULL;
	}
	return b.s ? b.s : strdup("");
}

static void on_drain(void *ctx, struct profile *prof, const uint64_t *stats, double elapsed,
		     bool final)
{
	struct top *t = ctx;
	struct fn_counts cur = { .skip_marks = true };
	struct fn_count **fs = NULL;
	struct psample **v;
	struct row *rows = NULL;
	struct pthread_total *th = NULL;
	size_t n, nf = 0, nrows = 0, nth = 0;

	if (final)
		return; /* the view closes */
	if (!t->entered)
		term_enter(t); /* now that the recording runs: errors before it stay readable */
	v = profile_samples(prof, &n);
	if (!v)
		return;
	/* the profile holds everything so far: count it all, and the difference
	 * from the previous refresh is the last interval */
	for (size_t i = 0; i < n; i++)
		if (fn_counts_add(&cur, v[i]->stack, v[i]->count))
			goto out;
	t->ptotal = t->total;
	t->total = prof->total;
	fs = fn_counts_list(&cur, &nf);
	rows = calloc(nf + 1, sizeof(*rows));
	if (!fs || !rows)
		goto out;
	for (size_t i = 0; i < nf; i++) {
		const struct fn_count *p = fn_counts_get(&t->prev, fs[i]->fn);
		struct row *r = &rows[nrows];

		if (!(r->label = label_of(fs[i]->fn)))
			continue;
		r->f = fs[i];
		r->dself = fs[i]->own - (p ? p->own : 0);
		r->dtotal = fs[i]->total - (p ? p->total : 0);
		nrows++;
	}
	qsort(rows, nrows, sizeof(*rows), cmp_row);
	th = profile_thread_totals(v, n, &nth);
	render(t, rows, nrows, elapsed, prof, th, nth);
out:
	free(th);
	for (size_t i = 0; rows && i < nrows; i++)
		free(rows[i].label);
	free(rows);
	free(fs);
	free(v);
	fn_counts_free(&t->prev);
	t->prev = cur;
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

int top_run(struct record_opts *o)
{
	struct top t;
	struct session_hooks h = { .on_drain = on_drain, .should_stop = should_stop, .ctx = &t };
	int rc;

	memset(&t, 0, sizeof(t));
	t.o = o;
	rc = session_run(&o->s, &h);
	term_leave(&t);
	if (t.quit)
		rc = 0; /* the user closed the view: whatever the command's status */
	fn_counts_free(&t.prev);
	return rc;
}

/* ---- the command line ---- */

static void usage(const struct record_opts *defaults)
{
	printf("usage: pyperf-bpf top [-p PID[,PID...]] [options] [-- COMMAND [ARGS...]]\n\n"
	       "A live view of the functions that use the CPU (or, with --mode, the\n"
	       "time off it too), refreshed every second:\n"
	       "own (leaf) and total shares over the last second, and times overall.\n"
	       "Without -p or a command, every CPython process.  q or Ctrl-C quits.\n\n");
	opt_usage(OPT_TOP, defaults);
}

int top_main(int argc, char **argv)
{
	struct record_opts o = { .s = { .freq = 99, .no_native = true, .no_kernel = true }, .top = 100 };
	int rc;

	if ((rc = record_parse_as(OPT_TOP, argc, argv, &o, usage)))
		return rc;
	if ((rc = cmdline_env(&o.s)))
		return rc;
	rc = top_run(&o);
	free(o.s.pids);
	return rc;
}

