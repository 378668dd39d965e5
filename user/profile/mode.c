/* mode.c - the modes' rows (mode.h), each at its mode's index: a new mode
 * is a row at the end (with a constant in enum pyperf_mode only if code
 * names it) and its header in bpf/modes/. */
#include "mode.h"

#include <linux/perf_event.h>
#include <stdio.h>
#include <string.h>

static const char *const alloc_progs[] = { "on_malloc", "on_calloc", "on_alloc_arg2",
					   "on_posix_memalign", "on_realloc", "on_mmap", NULL };
static const char *const alloc_maps[] = { "pending_allocs", "alloc_objects", "libc_texts", NULL };
static const char *const alloc_live_progs[] = { "on_alloc_ret", "on_free", "on_munmap", NULL };
static const char *const alloc_live_maps[] = { "live_allocs", NULL };
static const char *const offcpu_progs[] = { "on_switch", NULL };
static const char *const offcpu_maps[] = { "offcpu_slots", NULL };
static const char *const none[] = { NULL };

const struct mode_desc mode_descs[] = {
	[MODE_CPU] = { .name = "cpu", .option = true, .quantity = MQ_SAMPLES, .type = "cpu",
	  .periodic = true, .perf_event = PERF_COUNT_SW_CPU_CLOCK, .did = "ran on a CPU",
	  .report = MR_SAMPLES, .progs = none, .maps = none, .live_progs = none, .live_maps = none },
	[MODE_WALL] = { .name = "wall", .option = true, .quantity = MQ_NS, .type = "wall",
	  .periodic = true, .perf_event = PERF_COUNT_SW_CPU_CLOCK, .did = "was seen",
	  .report = MR_THREAD_TIME, .progs = offcpu_progs, .maps = offcpu_maps, .live_progs = none,
	  .live_maps = none },
	[MODE_OFFCPU] = { .name = "offcpu", .option = true, .quantity = MQ_NS,
	  .type = "offcpu", .perf_event = -1, .did = "was seen", .report = MR_THREAD_TIME,
	  .progs = offcpu_progs, .maps = offcpu_maps, .live_progs = none, .live_maps = none },
	[MODE_FAULTS] = { .name = "faults", .option = true, .quantity = MQ_BYTES,
	  .type = "faults", .perf_event = PERF_COUNT_SW_PAGE_FAULTS, .did = "was seen",
	  .amount = "faulted in", .svg_amount = "of anonymous memory faulted in",
	  .report = MR_BYTES, .report_amount = "of anonymous memory faulted in",
	  .events_stat = STAT_FAULTS, .events = "page faults", .walked_stat = STAT_FAULT_WALKS,
	  .walked = "walked: anonymous memory",
	  .progs = none, .maps = none, .live_progs = none, .live_maps = none },
	/* the clock only finds processes; the allocator probes count */
	[MODE_ALLOC] = { .name = "alloc", .option = true, .quantity = MQ_BYTES,
	  .type = "alloc_space", .perf_event = PERF_COUNT_SW_CPU_CLOCK, .did = "was seen",
	  .amount = "allocated", .svg_amount = "allocated", .report = MR_BYTES,
	  .report_amount = "allocated (estimated from sampled bytes)",
	  .events_stat = STAT_ALLOCS, .events = "allocator calls", .walked_stat = STAT_ALLOC_WALKS,
	  .walked = "sampled", .allocator = true, .progs = alloc_progs, .maps = alloc_maps,
	  .live_progs = alloc_live_progs, .live_maps = alloc_live_maps },
	/* `leaks`' outputs: the sampled allocations still live */
	[MODE_LEAKS] = { .name = "leaks", .quantity = MQ_BYTES, .type = "inuse_space",
	  .perf_event = PERF_COUNT_SW_CPU_CLOCK, .did = "was seen", .amount = "still live",
	  .svg_amount = "still live (sampled allocations)", .report = MR_LIVE, .allocator = true,
	  .progs = alloc_progs, .maps = alloc_maps, .live_progs = alloc_live_progs,
	  .live_maps = alloc_live_maps },
};
const size_t mode_ndescs = sizeof(mode_descs) / sizeof(mode_descs[0]);

const struct mode_desc *mode_desc(enum pyperf_mode m)
{
	return (size_t)m < mode_ndescs ? &mode_descs[m] : &mode_descs[0];
}

int mode_parse(const char *name, enum pyperf_mode *out)
{
	for (size_t i = 0; i < mode_ndescs; i++)
		if (mode_descs[i].option && !strcmp(name, mode_descs[i].name)) {
			*out = (enum pyperf_mode)i;
			return 0;
		}
	return -1;
}

static bool listed(const char *const *v, const char *name)
{
	for (; v && *v; v++)
		if (!strcmp(*v, name))
			return true;
	return false;
}

bool mode_wants(const struct mode_desc *d, bool live, const char *name, bool map)
{
	return listed(map ? d->maps : d->progs, name) ||
	       (live && listed(map ? d->live_maps : d->live_progs, name));
}

bool mode_owned(const char *name, bool map)
{
	for (size_t i = 0; i < mode_ndescs; i++)
		if (mode_wants(&mode_descs[i], true, name, map))
			return true;
	return false;
}

void mode_names(char *buf, size_t len)
{
	size_t n = 0, k = 0;

	for (size_t i = 0; i < mode_ndescs; i++)
		n += mode_descs[i].option;
	buf[0] = 0;
	for (size_t i = 0; i < mode_ndescs; i++)
		if (mode_descs[i].option) {
			size_t at = strlen(buf);

			snprintf(buf + at, len - at, "%s%s", !k ? "" : k + 1 == n ? " or " : ", ",
				 mode_descs[i].name);
			k++;
		}
}
