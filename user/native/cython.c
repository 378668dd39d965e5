/* cython.c - see cython.h. */
#include "cython.h"

#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CYTHON_MAX_SOURCES 256       /* C files kept read */
#define CYTHON_MAX_LINES 4000000     /* lines of one C file read at most */

bool cython_name(const char *sym, const char *module, char *out, size_t len)
{
	static const char *const prefixes[] = { "__pyx_pw_", "__pyx_pf_", "__pyx_f_", "__pyx_gb_" };
	const char *p = NULL, *comp[16];
	size_t clen[16], nc = 0, mlen = module ? strlen(module) : 0, at = 0;
	int after_module = -1;

	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]) && !p; i++)
		if (!strncmp(sym, prefixes[i], strlen(prefixes[i])))
			p = sym + strlen(prefixes[i]);
	if (!p || !isdigit((unsigned char)*p))
		return false;
	/* <len><component>_ ... : the module's dotted name, then a class */
	while (isdigit((unsigned char)*p) && nc < 16) {
		char *end;
		unsigned long n = strtoul(p, &end, 10);

		if (!n || strlen(end) < n + 1 || end[n] != '_')
			break;
		comp[nc] = end;
		clen[nc] = n;
		if (mlen && n == mlen && !strncmp(end, module, n))
			after_module = (int)nc + 1;
		nc++;
		p = end + n + 1;
	}
	if (!nc)
		return false;
	while (isdigit((unsigned char)*p)) /* a wrapper's index */
		p++;
	if (!*p || !(isalpha((unsigned char)*p) || *p == '_'))
		return false;
	out[0] = 0;
	/* a class between the module and the name: Class.method */
	for (size_t i = after_module < 0 ? nc : (size_t)after_module; i < nc; i++)
		at += (size_t)snprintf(out + at, at < len ? len - at : 0, "%.*s.", (int)clen[i],
				       comp[i]);
	/* ".cold", ".isra.0": the compiler's parts of one function */
	snprintf(out + (at < len ? at : len - 1), at < len ? len - at : 1, "%.*s",
		 (int)strcspn(p, "."), p);
	return true;
}

/* one generated C file: for each of its lines, the .pyx line it was made from */
struct csource {
	int nlines;
	int32_t *line;               /* 0: none */
	uint16_t *file;              /* index into files */
	char **files;
	size_t nfiles;
};

static void csource_free(void *v)
{
	struct csource *c = v;

	if (!c)
		return;
	for (size_t i = 0; i < c->nfiles; i++)
		free(c->files[i]);
	free(c->files);
	free(c->line);
	free(c->file);
	free(c);
}

void cython_sources_free(struct cython_sources *s)
{
	hmap_free(&s->files, csource_free);
}

/* A mark's .pyx name and line: `/ * "NAME":LINE` at the start of a line
 * (after blanks), as Cython writes them; 0 if line is not one. */
static int parse_mark(const char *line, const char **name, size_t *nlen)
{
	const char *p = line, *q;
	long v;

	while (*p == ' ' || *p == '\t')
		p++;
	if (strncmp(p, "/* \"", 4))
		return 0;
	p += 4;
	q = strstr(p, "\":");
	if (!q || q == p || !isdigit((unsigned char)q[2]))
		return 0;
	v = strtol(q + 2, NULL, 10);
	if (v <= 0 || v > 10000000)
		return 0;
	*name = p;
	*nlen = (size_t)(q - p);
	return (int)v;
}

static int file_index(struct csource *c, const char *name, size_t nlen)
{
	char **v;

	for (size_t i = 0; i < c->nfiles; i++)
		if (strlen(c->files[i]) == nlen && !strncmp(c->files[i], name, nlen))
			return (int)i;
	if (c->nfiles >= 65535 || !(v = realloc(c->files, (c->nfiles + 1) * sizeof(*v))))
		return -1;
	c->files = v;
	if (!(v[c->nfiles] = strndup(name, nlen)))
		return -1;
	return (int)c->nfiles++;
}

static struct csource *csource_read(const char *path)
{
	FILE *f = fopen(path, "r");
	struct csource *c;
	char *buf = NULL;
	size_t cap = 0, room = 0;
	int cur = 0, cur_file = 0;
	ssize_t got;

	if (!f || !(c = calloc(1, sizeof(*c)))) {
		if (f)
			fclose(f);
		return NULL;
	}
	while ((got = getline(&buf, &cap, f)) >= 0 && c->nlines < CYTHON_MAX_LINES) {
		const char *name;
		size_t nlen;
		int v = parse_mark(buf, &name, &nlen), idx;

		if (v && (idx = file_index(c, name, nlen)) >= 0) {
			cur = v;
			cur_file = idx;
		}
		/* Cython's own helpers follow the module's code: not .pyx lines */
		if (strstr(buf, "--- Runtime support code ---"))
			cur = 0;
		if ((size_t)c->nlines == room) {
			size_t n = room ? 2 * room : 4096;
			int32_t *l = realloc(c->line, n * sizeof(*l));
			uint16_t *fi = l ? realloc(c->file, n * sizeof(*fi)) : NULL;

			if (l)
				c->line = l;
			if (!fi)
				break;
			c->file = fi;
			room = n;
		}
		c->line[c->nlines] = cur;
		c->file[c->nlines] = (uint16_t)cur_file;
		c->nlines++;
	}
	free(buf);
	fclose(f);
	return c;
}

int cython_source_line(struct cython_sources *s, const char *cfile, int cline,
		       const char **pyx)
{
	struct csource *c = hmap_get(&s->files, cfile, strlen(cfile));

	if (!c) {
		if (s->files.len >= CYTHON_MAX_SOURCES)
			return 0;
		c = csource_read(cfile);
		/* an unreadable file is remembered as one without marks */
		if (!c && !(c = calloc(1, sizeof(*c))))
			return 0;
		if (hmap_put(&s->files, cfile, strlen(cfile), c)) {
			csource_free(c);
			return 0;
		}
	}
	if (cline < 1 || cline > c->nlines || !c->line[cline - 1] || !c->nfiles)
		return 0;
	*pyx = c->files[c->file[cline - 1]];
	return c->line[cline - 1];
}
