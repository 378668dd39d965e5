/* output.c - the formats: their names, the suffixes that imply them, and
 * which writer writes each. */
#include "output.h"

#include <stdbool.h>
#include <string.h>

const char out_format_names[] = "report, folded, svg, pprof, speedscope, otlp, timeline";

int out_format_parse(const char *name)
{
	static const struct { const char *name; int fmt; } names[] = {
		{ "report", FMT_REPORT }, { "folded", FMT_FOLDED }, { "collapsed", FMT_FOLDED },
		{ "svg", FMT_SVG }, { "flamegraph", FMT_SVG }, { "pprof", FMT_PPROF },
		{ "speedscope", FMT_SPEEDSCOPE }, { "otlp", FMT_OTLP }, { "timeline", FMT_TIMELINE },
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(name, names[i].name))
			return names[i].fmt;
	return -1;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);

	return n > k && !strcmp(s + n - k, suffix);
}

int out_format_from_path(const char *path)
{
	static const struct { const char *suffix; int fmt; } suffixes[] = {
		{ ".folded", FMT_FOLDED }, { ".collapsed", FMT_FOLDED }, { ".txt", FMT_REPORT },
		{ ".svg", FMT_SVG }, { ".pb.gz", FMT_PPROF }, { ".pprof", FMT_PPROF },
		{ ".speedscope.json", FMT_SPEEDSCOPE }, { ".speedscope", FMT_SPEEDSCOPE },
		{ ".otlp", FMT_OTLP }, { ".trace.json", FMT_TIMELINE }, { ".json.gz", FMT_TIMELINE_GZ },
	};

	for (size_t i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++)
		if (ends_with(path, suffixes[i].suffix))
			return suffixes[i].fmt;
	return -1;
}

int out_write(FILE *f, const struct out_ctx *c, int fmt)
{
	switch (fmt) {
	case FMT_FOLDED:
		return out_folded(f, c);
	case FMT_SVG:
		return out_svg(f, c);
	case FMT_PPROF:
		return out_pprof(f, c);
	case FMT_SPEEDSCOPE:
		return out_speedscope(f, c);
	case FMT_OTLP:
		return out_otlp(f, c);
	case FMT_TIMELINE:
	case FMT_TIMELINE_GZ:
		return out_timeline(f, c, fmt == FMT_TIMELINE_GZ);
	default:
		return out_report(f, c);
	}
}
