/* sinks.c - the daemon's kinds of sink, one line each (their rows are in
 * their own files, sink.h's struct sink_kind), and what the daemon asks of
 * them all. */
#include "sink.h"
#include "errmsg.h"

#include <stdio.h>
#include <string.h>

#define SINKS(X) X(dir) X(pyroscope) X(otlp)

#define SINK_DECLARE(name) extern const struct sink_kind sink_##name##_kind;
SINKS(SINK_DECLARE)
#define SINK_ROW(name) &sink_##name##_kind,
const struct sink_kind *const sink_kinds[] = { SINKS(SINK_ROW) };
const size_t nsink_kinds = sizeof(sink_kinds) / sizeof(sink_kinds[0]);

_Static_assert(sizeof(sink_kinds) / sizeof(sink_kinds[0]) <= SINK_KINDS_MAX,
	       "SINK_KINDS_MAX: room for every kind of sink");

bool sinks_asked(const struct daemon_cfg *c, char *err, size_t errlen)
{
	char list[256] = "";
	size_t n = 0;

	for (size_t i = 0; i < nsink_kinds; i++)
		if (sink_kinds[i]->asked(c))
			return true;
	for (size_t i = 0; i < nsink_kinds && n < sizeof(list); i++)
		n += (size_t)snprintf(list + n, sizeof(list) - n, "%s%s",
				      !i ? "" : i + 1 < nsink_kinds ? ", " : " and/or ",
				      sink_kinds[i]->option);
	set_err(err, errlen, "no sink: give %s", list);
	return false;
}

int sinks_check(const struct daemon_cfg *c, char *err, size_t errlen)
{
	for (size_t i = 0; i < nsink_kinds; i++)
		if (sink_kinds[i]->check && sink_kinds[i]->check(c, err, errlen))
			return -1;
	return 0;
}

bool sinks_restart_differs(const struct daemon_cfg *now, const struct daemon_cfg *was)
{
	for (size_t i = 0; i < nsink_kinds; i++)
		if (sink_kinds[i]->restart_differs(now, was))
			return true;
	return false;
}

void sinks_restart_keep(struct daemon_cfg *now, const struct daemon_cfg *was)
{
	for (size_t i = 0; i < nsink_kinds; i++)
		sink_kinds[i]->keep(now, was);
}

void sinks_restart_settings(char *buf, size_t len)
{
	size_t n = (size_t)snprintf(buf, len, "turning ");

	for (size_t i = 0; i < nsink_kinds && n < len; i++) /* the options' names */
		n += (size_t)snprintf(buf + n, len - n, "%s%.*s",
				      !i ? "" : i + 1 < nsink_kinds ? ", " : " or ",
				      (int)strcspn(sink_kinds[i]->option, " "), sink_kinds[i]->option);
	if (n < len)
		n += (size_t)snprintf(buf + n, len - n, " on or off");
	for (size_t i = 0; i < nsink_kinds && n < len; i++)
		if (sink_kinds[i]->restart_note)
			n += (size_t)snprintf(buf + n, len - n, ", and %s", sink_kinds[i]->restart_note);
}
