/* dbgfetch.h - debug files from debuginfod servers, fetched off the
 * naming path.
 *
 * libdwfl asks the servers in DEBUGINFOD_URLS itself, on the thread that
 * names frames, for as long as they take (a server that accepts and never
 * answers held a 2 s recording for 4.5 minutes).  So the variable is taken
 * out of this process's environment, and each build-id wanted is fetched by
 * a helper process (this program, `debuginfod-fetch BUILDID`, with the
 * variable back) that libdebuginfod runs in: its cache
 * (~/.cache/debuginfod_client, or $DEBUGINFOD_CACHE_PATH), its negative
 * cache of what a server does not have, its own timeouts.  One helper at a
 * time, killed after the fetch timeout; the answer (the debug file's path)
 * is polled by the naming thread, which then names the binary anew. */
#ifndef PYPERF_DBGFETCH_H
#define PYPERF_DBGFETCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DBGFETCH_TIMEOUT_S 30   /* a helper still running then is killed */

struct dbgfetch;

/* If DEBUGINFOD_URLS is set and not empty: take it out of the environment
 * (call before other threads start, after a command to run is forked: it
 * keeps it) and start the fetching thread.  NULL when it is unset or empty, or the
 * thread cannot start (said on stderr). */
struct dbgfetch *dbgfetch_start(double timeout_s, bool verbose);
/* Fetch the debug file of build-id hex (lowercase), once: later calls for
 * the same id do nothing. */
void dbgfetch_want(struct dbgfetch *f, const char *hex);
/* Bumped whenever a fetch ends: cheap to poll. */
uint64_t dbgfetch_generation(struct dbgfetch *f);
/* The fetched debug file of hex (a copy, the caller frees), or NULL: not
 * asked, not fetched yet, or failed. */
char *dbgfetch_path(struct dbgfetch *f, const char *hex);
/* Wait until every fetch asked for has ended, at most seconds.  Returns
 * true if none is left. */
bool dbgfetch_wait(struct dbgfetch *f, double seconds);
/* Stop: a helper still running is killed. */
void dbgfetch_stop(struct dbgfetch *f);

/* The helper's side (`pyperf-bpf debuginfod-fetch BUILDID`): print the path
 * of the debug file libdebuginfod fetched or found in its cache, and return
 * 0; else a line on stderr and 1. */
int dbgfetch_helper(const char *hex);

#endif
