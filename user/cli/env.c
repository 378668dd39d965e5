/* env.c - see env.h. */
#include "env.h"
#include "errmsg.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* a whole number in [lo, hi] from variable name, if set; 0 unset, 1 set, -1 bad */
static int number(const char *name, long long lo, long long hi, long long *v, char *err,
		  size_t errlen)
{
	const char *s = getenv(name);
	char *end;

	if (!s)
		return 0;
	errno = 0;
	*v = strtoll(s, &end, 10);
	if (errno || end == s || *end || *v < lo || *v > hi) {
		set_err(err, errlen, "%s: not a whole number from %lld to %lld: '%s'", name, lo, hi,
			 s);
		return -1;
	}
	return 1;
}

int env_read(struct env *e, char *err, size_t errlen)
{
	long long v;
	int r;

	memset(e, 0, sizeof(*e));
	if ((r = number("PYPERF_COUNTS_ENTRIES", 1, 1 << 24, &v, err, errlen)) < 0)
		return -1;
	if (r)
		e->counts_entries = (unsigned)v;
	if ((r = number("PYPERF_OFFCPU_SLOTS", 2, 1 << 16, &v, err, errlen)) < 0)
		return -1;
	if (r && (v & (v - 1))) {
		set_err(err, errlen, "PYPERF_OFFCPU_SLOTS: not a power of two: %lld", v);
		return -1;
	}
	if (r)
		e->offcpu_slots = (unsigned)v;
	if ((r = number("PYPERF_UNWIND_BYTES", 4096, 1LL << 40, &v, err, errlen)) < 0)
		return -1;
	if (r)
		e->unwind_bytes = (uint64_t)v;
	if ((r = number("PYPERF_STACK_SCAN", 0, 1, &v, err, errlen)) < 0)
		return -1;
	e->no_stack_scan = r && !v;
	if ((r = number("PYPERF_BPF_LOOP", 0, 1, &v, err, errlen)) < 0)
		return -1;
	e->no_bpf_loop = r && !v;
	if ((r = number("PYPERF_IDLE_CLOSE_S", 1, 86400, &v, err, errlen)) < 0)
		return -1;
	if (r)
		e->idle_close_s = (unsigned)v;
	e->debuginfo_path = getenv("PYPERF_DEBUGINFO_PATH");
	e->vmlinux_btf = getenv("PYPERF_VMLINUX_BTF");
	if (e->vmlinux_btf && !*e->vmlinux_btf)
		e->vmlinux_btf = NULL;
	return 0;
}
