/* pdict.h - the dictionary a protobuf profile's samples share: its strings,
 * functions, mappings and locations, each added once, in the order first
 * asked for (so equal profiles give equal tables), entry 0 of each the zero
 * value.  pprof (out_pprof.c, diff's pprof) and OTLP (out_otlp.c) build the
 * same dictionary here and only turn its records into their own messages:
 * pprof's ids are these indices (0 meaning none), OTLP's ProfilesDictionary
 * takes the tables as they are.  Strings are kept UTF-8 (U+FFFD for bad
 * bytes), as proto3 requires. */
#ifndef PYPERF_PDICT_H
#define PYPERF_PDICT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hmap.h"
#include "out_common.h"

struct pdict_func {
	int32_t name, file;          /* string indices */
	int64_t start_line;
};

struct pdict_map {
	const struct binary *bin;    /* its path, build-id and ELF span */
	int32_t file, build_id;      /* string indices (build_id 0: none) */
};

struct pdict_loc {
	int32_t func, map;           /* map 0: none */
	int64_t line;
	uint64_t addr;
	enum out_loc_kind kind;
};

struct pdict {
	char **str;
	struct pdict_func *func;
	struct pdict_map *map;
	struct pdict_loc *loc;
	size_t nstr, nfunc, nmap, nloc;           /* with entry 0 */
	size_t capstr, capfunc, capmap, caploc;
	struct hmap str_ids, func_ids, map_ids, loc_ids; /* key -> index + 1 */
	bool failed;                 /* out of memory: what is asked for now is 0 */
};

/* An empty dictionary, each table holding its zero entry; -1: no memory. */
int pdict_init(struct pdict *d);
void pdict_free(struct pdict *d);
/* The index of each, added on first use (0 once d->failed). */
int32_t pdict_str(struct pdict *d, const char *s);
int32_t pdict_map(struct pdict *d, const struct binary *bin);
/* l's location: its function (kind, name, file, first line), its line,
 * and for a native frame in a known binary that binary's mapping and the
 * frame's ELF address. */
int32_t pdict_loc(struct pdict *d, const struct out_loc *l);

/* pprof (out_pprof.c): d's functions, locations, mappings and strings as
 * p's tables, ids the dictionary's indices; p points into the returned
 * block (free it after packing p) and into d.  NULL: no memory. */
struct Perftools__Profiles__Profile;
void *pdict_to_pprof(const struct pdict *d, struct Perftools__Profiles__Profile *p);

#endif
