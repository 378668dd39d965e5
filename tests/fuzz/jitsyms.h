/* jitsyms.h - the checks the fuzz targets of JIT symbol readers share
 * (perf maps, jitdump files, the GDB JIT interface): every symbol found
 * holds the address asked, names are bounded and free of control bytes.
 * Include after fuzz.h and perfmap.h. */
#ifndef PYPERF_FUZZ_JITSYMS_H
#define PYPERF_FUZZ_JITSYMS_H

static inline void fuzz_check_sym(const struct jit_sym *s, uint64_t pc)
{
	size_t len;

	if (!s)
		return;
	FUZZ_CHECK(s->start <= pc && pc < s->end);
	len = strlen(s->name);
	FUZZ_CHECK(len > 0 && len <= PERFMAP_MAX_NAME + 3);
	for (size_t i = 0; i < len; i++)
		FUZZ_CHECK((unsigned char)s->name[i] >= 0x20);
}

/* m sorted: at each symbol's first and last byte a symbol is found that
 * holds that address, and what is found just past it (or at 0) holds that
 * address too */
static inline void fuzz_check_syms(const struct perfmap *m)
{
	for (size_t i = 0; i < m->n; i++) {
		if (m->v[i].end > m->v[i].start) /* a symbol of some size is found */
			FUZZ_CHECK(perfmap_find(m, m->v[i].start));
		fuzz_check_sym(perfmap_find(m, m->v[i].start), m->v[i].start);
		if (m->v[i].end > m->v[i].start)
			fuzz_check_sym(perfmap_find(m, m->v[i].end - 1), m->v[i].end - 1);
		fuzz_check_sym(perfmap_find(m, m->v[i].end), m->v[i].end);
	}
	fuzz_check_sym(perfmap_find(m, 0), 0);
}

#endif
