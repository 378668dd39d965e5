/* sampler.h - the BPF side seen from user space: load, configure, attach one
 * cpu-clock perf event per CPU, read the ring buffer, drain the counts. */
#ifndef PYPERF_SAMPLER_H
#define PYPERF_SAMPLER_H

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "pyperf.h"
#include "mode.h"

struct sampler;

struct sampler_opts {
	bool filter_targets;         /* only processes added with sampler_add_target */
	enum pyperf_mode mode;
	int freq;                    /* samples per second per CPU */
	bool verbose;                /* pass libbpf's messages through */
	unsigned counts_entries;     /* size of each counts map; 0: PYPERF_COUNTS_ENTRIES */
	unsigned drain_ms;           /* how often the loader drains the counts: in --mode
				      * cpu they are sized by it (0: not, the mode's size) */
	unsigned offcpu_slots;       /* --mode wall|offcpu: threads the off-CPU table holds, a
				      * power of two up to 65536 (0: 65536) */
	bool kernel_stacks;          /* take the kernel stack of samples in the kernel */
	bool native_stacks;          /* unwind native user stacks */
	bool stack_scan;             /* leave code without CFI by a scan of the stack too */
	bool gil_only;               /* only samples of threads holding the GIL (--gil) */
	bool async_stacks;           /* note each sample's asyncio task (--async) */
	bool track_live;             /* --mode alloc for `leaks`: keep sampled allocations
				      * until freed (sampler_live) */
	uint64_t interval;           /* bytes a walk stands for on average: --mode faults
				      * (0: FAULT_INTERVAL_DEFAULT), --mode alloc (0:
				      * ALLOC_INTERVAL_DEFAULT) */
	bool verifier_stats;         /* keep each program's verifier figures (sampler_programs) */
	bool no_bpf_loop;            /* open the object without bpf_loop (bpf/loop.bpf.h)
				      * even where the kernel has it */
	const char *vmlinux_btf;     /* the kernel's BTF for CO-RE from this file instead of
				      * /sys/kernel/btf/vmlinux (NULL: that one) */
	unsigned events;             /* --events: EVENTS_GC | EVENTS_IMPORT */
	bool timeline;               /* -f timeline: every counted sample in time (ev_sample) */
};

/* --events: which of CPython's USDT markers are timed */
#define EVENTS_GC 1u                 /* gc__start / gc__done */
#define EVENTS_IMPORT 2u             /* import__find__load__start / done */

/* The ring buffer's records, decoded and checked; every callback is optional.
 * A record that does not hold together (a length that does not match its
 * counts) is dropped. */
struct sampler_events {
	/* a stack first seen since the last drain, unpacked */
	void (*stack)(void *ctx, const struct ev_stack *ev);
	/* a process the sampler does not know (see sampler_set_proc, sampler_skip) ran */
	void (*new_pid)(void *ctx, int pid);
	void (*exec)(void *ctx, int pid);       /* it exec'ed a new program */
	/* profiled process ppid forked pid, which the sampler now profiles as
	 * its copy (generation gen, the parent's) */
	void (*fork)(void *ctx, int pid, int ppid, uint32_t gen);
	void (*exit)(void *ctx, int pid);
	/* a profiled process ran code at pc, in no mapping the unwinder has */
	void (*maps)(void *ctx, int pid, uint64_t pc);
	/* a sample needs unwind table `table` (native_mapping.table) built */
	void (*table)(void *ctx, uint32_t table);
	/* --events: a collection or an import ended */
	void (*gc)(void *ctx, const struct ev_gc *e);
	void (*import)(void *ctx, const struct ev_import *e);
	/* -f timeline: a sample counted, in time */
	void (*sample)(void *ctx, const struct ev_sample *e);
	void *ctx;
};
/* A drained count (of a stack announced before it, kernel frames and all) */
typedef void (*sampler_count_fn)(void *ctx, const struct stack_key *k, uint64_t count);

/* --mode wall|offcpu: about how many blocks off the CPU a thread has walked
 * per second at most (blocks beyond are walked with a probability and
 * weighted by its inverse): twice the sampling rate, at least 200. */
unsigned offcpu_walk_hz(int freq);
/* A stack record as the sampler packs it on the ring buffer (EV_WIRE_HEAD
 * in pyperf.h) into *out; -1 for a record whose counts do not match its
 * length. */
int sampler_unpack_stack(const void *data, size_t size, struct ev_stack *out);
/* --mode faults: a fault brings in a page of this many bytes; one in
 * interval / FAULT_PAGE of them is picked (256 KiB: one in 64) */
#define FAULT_PAGE 4096u
#define FAULT_INTERVAL_DEFAULT (256u * 1024)
unsigned fault_every(uint64_t interval);
/* --mode alloc: one allocated byte in this many is picked (Go's and
 * tcmalloc's default) */
#define ALLOC_INTERVAL_DEFAULT (512u * 1024)
/* 0 if this process may load and attach the sampler; else -1 and why. */
int sampler_check_privileges(char *err, size_t errlen);
int sampler_open(struct sampler **out, const struct sampler_opts *o,
		 const struct sampler_events *ev, char *err, size_t errlen);
int sampler_add_target(struct sampler *s, uint32_t pid);
int sampler_set_proc(struct sampler *s, uint32_t pid, const struct proc_info *pi);
/* Does the sampler profile pid (its image since its last exec adopted)? */
bool sampler_has_proc(struct sampler *s, uint32_t pid);
/* Where the native unwinder's tables go (native.h); NULL on failure. */
struct native_store;
const struct native_store *sampler_table_store(struct sampler *s);
/* Tell the unwinder pid's executable mappings. */
int sampler_set_native_maps(struct sampler *s, uint32_t pid, const struct native_maps *nm);
/* --mode alloc: put the allocator probes into pid's C library (per
 * process: no other process pays for them).  0, or -1 with a message. */
int sampler_attach_allocs(struct sampler *s, uint32_t pid, char *err, size_t errlen);
/* --mode alloc for a command not yet started: the probes for pid go into
 * the C library at libc (the one its program is expected to map), before
 * its exec, so that none of its allocations after it is adopted go unseen
 * while they are put in (the first probe a process gets takes 10-30 ms).
 * sampler_attach_allocs keeps them if the program maps that library. */
int sampler_hold_allocs(struct sampler *s, uint32_t pid, const char *libc, char *err,
			size_t errlen);
/* `leaks`: every sampled allocation still live, and the objects (in 1/1024
 * units) the sampled allocations of each stack stand for. */
typedef void (*sampler_live_fn)(void *ctx, const struct live_key *k, const struct live_alloc *a);
typedef void (*sampler_objects_fn)(void *ctx, const struct stack_key *k, uint64_t objs1024);
void sampler_live(struct sampler *s, sampler_live_fn fn, sampler_objects_fn objs, void *ctx);
/* --events: time the markers asked for in the interpreter binary at path
 * (as this process opens it: the file that holds _PyRuntime), for every
 * process that maps it; once per binary.  0: attached, or looked at before;
 * 1: the first look found none of those markers (a build without
 * --with-dtrace); -1 with a message. */
int sampler_attach_events(struct sampler *s, const char *path, char *err, size_t errlen);
/* Drop everything the sampler knows about pid (it exec'ed). */
void sampler_forget(struct sampler *s, uint32_t pid);
/* pid exited: its probes are taken out (in the background). */
void sampler_exited(struct sampler *s, uint32_t pid);
/* Call fn for each pid the sampler keeps state of (its maps of processes
 * and of their mappings, its probes), a pid possibly more than once: a
 * prune finds there the processes whose exit it was never told (one whose
 * classification was written just after it exited). */
void sampler_each_pid(struct sampler *s, void (*fn)(void *ctx, int pid), void *ctx);
/* The unwinder asks to reread pid's mappings for a pc in pc's page no sooner
 * than retry_after_ns (CLOCK_MONOTONIC), and for any pc of pid not within
 * the next SAMPLER_STRAY_PAUSE_MS: a reread that found nothing new is not
 * repeated at the fast rate new code gets. */
#define SAMPLER_STRAY_PAUSE_MS 100
int sampler_stray_pc(struct sampler *s, uint32_t pid, uint64_t pc, uint64_t retry_after_ns);
/* Do not announce pid again before retry_after_ns (CLOCK_MONOTONIC);
 * refused: the loader cannot profile it, so the sampler weighs its samples
 * from now on (sampler_skipped_weight). */
int sampler_skip(struct sampler *s, uint32_t pid, uint64_t retry_after_ns, bool refused);
/* What a refused pid's samples weighed since (0 when its skip entry is
 * gone). */
uint64_t sampler_skipped_weight(struct sampler *s, uint32_t pid);
/* What the sampler saw of code object `code` of pid whose check was `check`
 * when it walked a new stack (struct code_id); 0, or -1: not (any longer)
 * known. */
int sampler_code_id(struct sampler *s, uint32_t pid, uint64_t code, uint32_t check,
		     struct code_id *out);
/* The PyThreadState the sampler found for thread tid of pid, 0: none. */
uint64_t sampler_thread_state(struct sampler *s, uint32_t pid, uint32_t tid);
/* Open and attach the perf events: sampling starts. */
int sampler_start(struct sampler *s, char *err, size_t errlen);
/* Detach the perf events: sampling stops. */
void sampler_stop(struct sampler *s);
/* The loader forgot stacks or threads' names: each stack the sampler counts
 * from now on is announced once more (bpf/pyperf.bpf.c, announced), not
 * only those new since it was announced. */
void sampler_announce_again(struct sampler *s);
/* --mode wall|offcpu: a thread of a process the sampler sees from just
 * now, with no slot (it has not left the CPU since), perhaps blocked since
 * before: a block in flight under key, whose stack the loader names before
 * it next drains (or drops, sampler_block_drop, if the thread runs); it
 * counts from since_ns (CLOCK_MONOTONIC) as a walked one would, until the
 * thread runs again (the sampler counts it then) or the next drain.  0:
 * done; 1: the sampler has a slot for it already (it left the CPU
 * meanwhile); -1: no room, or not wall|offcpu. */
int sampler_block_in_flight(struct sampler *s, const struct stack_key *key, uint64_t since_ns);
/* The block sampler_block_in_flight put in flight for key, if still in
 * flight, is dropped uncounted (the thread was running, or its stack could
 * not be named): true.  false: it ended meanwhile (the thread ran; the
 * sampler may have counted it under key, which must then be named). */
bool sampler_block_drop(struct sampler *s, const struct stack_key *key);
/* Wait up to timeout_ms for ring buffer records or for one of more[] (up to
 * SAMPLER_POLL_MAX of them; their revents set, fd < 0 passed over), and
 * handle the records. */
#define SAMPLER_POLL_MAX 256
int sampler_poll(struct sampler *s, int timeout_ms, struct pollfd *more, size_t nmore);
/* Hand every count gathered so far to fn and clear it.  Ring buffer records
 * written before those counts are handled first, so every count's stack is
 * known when fn sees it. */
int sampler_drain(struct sampler *s, sampler_count_fn fn, void *ctx);
/* Is the active counts map half full (by the keys the sampler added since
 * the last drain)?  Then drain now: a full map counts nothing more. */
bool sampler_counts_filling(const struct sampler *s);
/* Name kernel address addr (a sampled pc or a return address) with the
 * kernel's own symbol lookup: buf gets the symbol's name, or "" when no
 * symbol holds it.  0, or -1 when the lookup cannot run. */
int sampler_name_kernel(struct sampler *s, uint64_t addr, char *buf, size_t len);
/* Per-CPU counters summed (enum stat_idx). */
void sampler_stats(struct sampler *s, uint64_t out[STAT_NR]);
/* run_cnt and run_time_ns (kernel.bpf_stats_enabled) of the perf_event
 * program (--mode alloc: of the allocator probes), or of the scheduler hook
 * (--mode wall|offcpu; 0 when not loaded). */
int sampler_prog_stats(struct sampler *s, bool on_switch, uint64_t *run_cnt,
		       uint64_t *run_time_ns);
/* What the verifier did with one loaded program (sampler_opts.verifier_stats). */
struct sampler_prog_info {
	char name[32];
	uint64_t verified_insns;     /* instructions the verifier processed */
	uint64_t verify_us;          /* its time, as the kernel measured it */
	uint32_t insns;              /* the program's size after the verifier */
	uint32_t jited_bytes;        /* its machine code */
};
/* The loaded programs' verifier figures into out (at most max); their
 * number, 0 without sampler_opts.verifier_stats. */
int sampler_programs(struct sampler *s, struct sampler_prog_info *out, int max);
/* One map the sampler created: its size, and the kernel's memory for it. */
struct sampler_map_info {
	char name[32];
	uint32_t max_entries;
	uint64_t memlock;            /* bytes, as /proc/self/fdinfo says */
};
/* The created maps into out (at most max); their number. */
int sampler_maps(struct sampler *s, struct sampler_map_info *out, int max);
/* Do the walks run without bpf_loop (bpf/loop.bpf.h)? */
bool sampler_bounded_loops(const struct sampler *s);
void sampler_close(struct sampler *s);

#endif
