/* mode.h - what one count of a profile is in each --mode, for the outputs
 * and commands that parse, print or export it: a sample (cpu), a
 * nanosecond of thread time (wall, offcpu) or a byte of memory (faults). */
#ifndef PYPERF_MODE_H
#define PYPERF_MODE_H

#include <stdbool.h>
#include <string.h>
#include "pyperf.h"

#define MODE_NAMES "cpu, wall, offcpu, faults or alloc"

/* the mode as --mode names it */
static inline const char *mode_name(enum pyperf_mode m)
{
	switch (m) {
	case MODE_WALL:
		return "wall";
	case MODE_OFFCPU:
		return "offcpu";
	case MODE_FAULTS:
		return "faults";
	case MODE_ALLOC:
		return "alloc";
	case MODE_LEAKS:
		return "leaks";
	default:
		return "cpu";
	}
}

/* --mode's argument: 0 with *out set, -1 for a name not in MODE_NAMES
 * (MODE_LEAKS is the `leaks` command's, not a --mode) */
static inline int mode_parse(const char *name, enum pyperf_mode *out)
{
	static const enum pyperf_mode all[] = { MODE_CPU, MODE_WALL, MODE_OFFCPU, MODE_FAULTS,
						MODE_ALLOC };

	for (unsigned i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		if (!strcmp(name, mode_name(all[i]))) {
			*out = all[i];
			return 0;
		}
	return -1;
}

/* counts are nanoseconds of thread time */
static inline bool mode_is_time(enum pyperf_mode m)
{
	return m == MODE_WALL || m == MODE_OFFCPU;
}

/* counts are bytes of memory */
static inline bool mode_is_bytes(enum pyperf_mode m)
{
	return m == MODE_FAULTS || m == MODE_ALLOC || m == MODE_LEAKS;
}

/* pprof's sample type of the mode's quantity: the mode's name, or Go's
 * heap-profile name for allocated bytes, which pprof and Pyroscope know */
static inline const char *mode_type(enum pyperf_mode m)
{
	return m == MODE_ALLOC ? "alloc_space" : m == MODE_LEAKS ? "inuse_space" : mode_name(m);
}

/* pprof's unit of the mode's quantity (cpu mode: of its cpu time) */
static inline const char *mode_unit(enum pyperf_mode m)
{
	return mode_is_bytes(m) ? "bytes" : "nanoseconds";
}

#endif
