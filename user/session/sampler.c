/* sampler.c - owns the libbpf skeleton of pyperf.bpf.c.
 *
 * Counts live in two BPF hash maps; the program fills counts[active].  To
 * drain, we flip `active`, give programs already running on other CPUs a
 * moment to finish, handle the ring buffer (stack announcements precede their
 * counts), then read-and-delete the idle map in batches.  Nothing is lost at a
 * flip and nothing is counted twice. */
#include "sampler.h"
#include "sampler_compat.h"
#include "runcache.h"
#include "minbtf.h"
#include "errmsg.h"
#include "clock.h"
#include "native.h"
#include "hmap.h"
#include "mode.h"
#include "procmaps.h"
#include "pyperf.skel.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <bpf/btf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <linux/capability.h>
#include <linux/perf_event.h>
#include <math.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define DRAIN_BATCH 4096

/* bytes of a program's verifier statistics: level 4 leaves a few lines,
 * but the kernel refuses the load (ENOSPC) when what it wrote on the way
 * (and took back) ever ran past the buffer: 1 KiB did on 6.18.  Only the
 * pages written are resident. */
#define VERIFIER_LOG 65536
#define MAX_PROGS 64

struct sampler {
	struct pyperf_bpf *skel;
	bool compat;                 /* the object without bpf_loop (sampler_compat.c) */
	char (*vlog)[VERIFIER_LOG];  /* per program, the verifier's statistics (or NULL) */
	struct ring_buffer *rb;
	struct bpf_link **links;
	int *pfds;
	int ncpus;
	int freq;
	uint64_t *table_used;        /* the table_used map, mmap'ed */
	/* the scratch map, mmap'ed to read: each CPU's struct scratch opens
	 * with its counts (sstat), scratch_elem bytes apart */
	uint8_t *scratch;
	size_t scratch_len, scratch_elem;
	struct native_store store;
	struct sampler_events ev;
	enum pyperf_mode mode;
	struct ev_stack *stack;      /* one record unpacked (32 KB) */
	struct hmap alloc_links;     /* --mode alloc: pid -> struct alloc_links * */
	bool track_live;             /* `leaks`: the returns and free are probed too */
	struct reaper *reaper;       /* takes probes out off the main loop */
	unsigned events;             /* --events */
	struct hmap event_links;     /* binary (dev, ino) -> struct event_links * */
	unsigned counts_max;         /* a counts map's max_entries */
	/* --mode wall|offcpu: the off-CPU slots (mmap'ed, slot_bytes apart) and
	 * the threads a block was walked for (tgid << 32 | tid), whose blocks
	 * still in flight a drain credits (sampler_flush_blocks) */
	uint8_t *slots;
	size_t slots_len, slot_bytes;
	unsigned slot_bits;
	struct hmap offcpu_threads;
	uint64_t blocks_in_flight;   /* taken by sampler_block_in_flight */
};

/* --events: the marker probes of one interpreter binary */
#define EVENT_LINKS 4
struct event_links {
	struct bpf_link *l[EVENT_LINKS];
	int found;                   /* 1: markers there, 0: none */
};

static void event_links_free(void *v)
{
	struct event_links *e = v;

	for (int i = 0; e && i < EVENT_LINKS; i++)
		bpf_link__destroy(e->l[i]);
	free(e);
}

/* the allocator functions --mode alloc probes: their entries, for
 * `leaks` their returns and free too */
#define ALLOC_FUNCS 7
#define ALLOC_LINKS (2 * ALLOC_FUNCS + 2)      /* + free and munmap */
struct alloc_links {
	struct bpf_link *l[ALLOC_LINKS];
	dev_t dev;                   /* the C library they are in */
	ino_t ino;
	bool held;                   /* put in before the command's exec: kept over it */
	struct alloc_links *next;    /* in the reaper's queue */
};

static void alloc_links_free(void *v)
{
	struct alloc_links *a = v;

	for (int i = 0; a && i < ALLOC_LINKS; i++)
		bpf_link__destroy(a->l[i]);
	free(a);
}

/* Taking a uprobe out waits for the kernel's RCU grace periods, one after
 * another (~90 ms a probe here: 0.6 s for --mode alloc's seven, 1.4 s for
 * leaks' sixteen), so probes of a process that exited or exec'ed are taken
 * out by a thread of their own, not by the loop that drains samples. */
struct reaper {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	struct alloc_links *queue;
	bool stop;
};

static void *reaper_main(void *arg)
{
	struct reaper *rp = arg;
	struct alloc_links *a;

	pthread_mutex_lock(&rp->lock);
	for (;;) {
		while (!rp->queue && !rp->stop)
			pthread_cond_wait(&rp->wake, &rp->lock);
		if (!rp->queue)
			break;
		a = rp->queue;
		rp->queue = a->next;
		pthread_mutex_unlock(&rp->lock);
		alloc_links_free(a);
		pthread_mutex_lock(&rp->lock);
	}
	pthread_mutex_unlock(&rp->lock);
	return NULL;
}

/* a's probes out, later; at once where no thread can be started */
static void alloc_links_drop(struct sampler *s, struct alloc_links *a)
{
	if (!a)
		return;
	if (!s->reaper && (s->reaper = calloc(1, sizeof(*s->reaper)))) {
		pthread_mutex_init(&s->reaper->lock, NULL);
		pthread_cond_init(&s->reaper->wake, NULL);
		if (pthread_create(&s->reaper->thread, NULL, reaper_main, s->reaper)) {
			free(s->reaper);
			s->reaper = NULL;
		}
	}
	if (!s->reaper) {
		alloc_links_free(a);
		return;
	}
	pthread_mutex_lock(&s->reaper->lock);
	a->next = s->reaper->queue;
	s->reaper->queue = a;
	pthread_cond_signal(&s->reaper->wake);
	pthread_mutex_unlock(&s->reaper->lock);
}

/* the probes still queued are taken out before the programs go */
static void reaper_join(struct sampler *s)
{
	if (!s->reaper)
		return;
	pthread_mutex_lock(&s->reaper->lock);
	s->reaper->stop = true;
	pthread_cond_signal(&s->reaper->wake);
	pthread_mutex_unlock(&s->reaper->lock);
	pthread_join(s->reaper->thread, NULL);
	pthread_mutex_destroy(&s->reaper->lock);
	pthread_cond_destroy(&s->reaper->wake);
	free(s->reaper);
	s->reaper = NULL;
}

static bool libbpf_verbose;

/* -v passes libbpf's warnings and notes through (a verifier log among
 * them); its debug trace (every relocation of every program, hundreds of
 * kilobytes) only with PYPERF_LIBBPF_DEBUG set: a reader of our stderr that
 * waits for the end would otherwise block us on a full pipe */
static int print_libbpf(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (!libbpf_verbose || (level == LIBBPF_DEBUG && !getenv("PYPERF_LIBBPF_DEBUG")))
		return 0;
	return vfprintf(stderr, fmt, ap);
}

#define NO_PRIVILEGE_MSG "permission denied: run as root (or with CAP_BPF, CAP_PERFMON and CAP_SYS_PTRACE)"

static bool has_cap(const struct __user_cap_data_struct *d, int cap)
{
	return d[cap / 32].effective & (1u << (cap % 32));
}

int sampler_check_privileges(char *err, size_t errlen)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2];

	if (syscall(SYS_capget, &h, d))
		return 0; /* cannot tell: let the kernel decide at load time */
	if (has_cap(d, CAP_SYS_ADMIN) || (has_cap(d, CAP_BPF) && has_cap(d, CAP_PERFMON)))
		return 0;
	set_err(err, errlen, NO_PRIVILEGE_MSG);
	return -1;
}

/* The kernel's BTF, which libbpf reads for CO-RE at every start: sysfs
 * hands it out 4 KiB a read, and reading its 5.5 MB was ~5 ms of a 30-ms
 * start-up here; a copy in a regular file is read at once.  The copy is
 * made once per boot (the BTF cannot change until the next one; /run is
 * emptied then too) in a directory only we may write.  NULL: read sysfs. */
#define BTF_SYSFS "/sys/kernel/btf/vmlinux"
#define BTF_CACHE_DIR RUNCACHE_DIR

/* this boot's id in boot (for the names of the copies), once the cache
 * directory is there and only we may write it (runcache.h) */
static bool btf_cache_ready(char *boot, size_t len)
{
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");
	bool ok;

	if (!f)
		return false;
	ok = fgets(boot, (int)len, f) != NULL;
	fclose(f);
	boot[strcspn(boot, "\n")] = 0;
	return ok && boot[0] && !strchr(boot, '/') && runcache_ready();
}

static const char *cached_vmlinux_btf(char *path, size_t len)
{
	char boot[64] = "", tmp[PATH_MAX + 16], buf[1 << 16];
	struct stat sys, st;
	bool ok;
	int in, out;
	ssize_t n = 0;

	if (!btf_cache_ready(boot, sizeof(boot)) || stat(BTF_SYSFS, &sys) || sys.st_size <= 0)
		return NULL;
	snprintf(path, len, BTF_CACHE_DIR "/vmlinux-%s.btf", boot);
	if (!lstat(path, &st) && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
	    st.st_size == sys.st_size)
		return path;
	/* made whole under another name, then renamed: a run started meanwhile
	 * never reads half a copy */
	snprintf(tmp, sizeof(tmp), "%s.%d", path, (int)getpid());
	in = open(BTF_SYSFS, O_RDONLY | O_CLOEXEC);
	out = in < 0 ? -1 : open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	ok = out >= 0;
	while (ok && (n = read(in, buf, sizeof(buf))) > 0)
		ok = write(out, buf, (size_t)n) == n;
	ok = ok && n == 0 && !fstat(out, &st) && st.st_size == sys.st_size;
	if (in >= 0)
		close(in);
	if (out >= 0)
		ok = !close(out) && ok;
	if (ok && !rename(tmp, path))
		return path;
	if (out >= 0)
		unlink(tmp);
	return NULL;
}

static void explain_load_error(int e, char *err, size_t errlen)
{
	if (e == EPERM)
		set_err(err, errlen, NO_PRIVILEGE_MSG);
	else if (e == EACCES)
		set_err(err, errlen, "the kernel's BPF verifier rejected the sampler (rerun with -v "
			 "for its log)");
	else
		set_err(err, errlen, "cannot load the BPF sampler: %s (rerun with -v for details)",
			 strerror(e));
}

unsigned offcpu_walk_hz(int freq)
{
	return freq * 2 > 200 ? (unsigned)freq * 2 : 200;
}

unsigned fault_every(uint64_t interval)
{
	uint64_t k = (interval ? interval : FAULT_INTERVAL_DEFAULT) / FAULT_PAGE;

	return k < 1 ? 1 : k > (1u << 20) ? 1u << 20 : (unsigned)k;
}

/* --mode alloc's tables (pyperf.h): the exponential gap's quantiles, and
 * x / (1 - exp(-x)), the weight of a sampled allocation of x intervals */
static void alloc_tables(struct pyperf_bpf *skel, uint64_t interval)
{
	skel->rodata->alloc_interval = interval;
	for (int i = 0; i < ALLOC_GAPS; i++)
		skel->rodata->alloc_gap[i] = (__u32)(-log((i + 0.5) / ALLOC_GAPS) * 1024);
	for (int i = 0; i < ALLOC_XSTEPS; i++) {
		double x = (i + 0.5) * ALLOC_XMAX / ALLOC_XSTEPS;

		skel->rodata->alloc_weight[i] = (__u32)(x / (1 - exp(-x)) * 1024);
	}
}

/* the weights of what the mode's row says it counts: what one perf event
 * hit stands for (a sample of the clock: 1, or its period in ns where
 * counts are thread time; a picked page fault: the bytes of the faults it
 * stands for), and the allocator probes' sampling tables */
static void set_weights(struct pyperf_bpf *skel, const struct sampler_opts *o)
{
	const struct mode_desc *md = mode_desc(o->mode);

	if (md->perf_event == PERF_COUNT_SW_CPU_CLOCK && md->quantity == MQ_NS)
		skel->rodata->cpu_weight = 1000000000ull / (unsigned)o->freq;
	if (md->perf_event == PERF_COUNT_SW_PAGE_FAULTS) {
		skel->rodata->fault_every = fault_every(o->interval);
		skel->rodata->cpu_weight = (__u64)fault_every(o->interval) * FAULT_PAGE;
	}
	if (md->allocator)
		alloc_tables(skel, o->interval ? o->interval : ALLOC_INTERVAL_DEFAULT);
}

/* `leaks`: the mode's live programs and maps too (only a mode whose row has
 * them: the allocator probes' returns and free) */
static bool wants_live(const struct sampler_opts *o)
{
	const char *const *lp = mode_desc(o->mode)->live_progs;

	return o->track_live && lp && *lp;
}

int sampler_unpack_stack(const void *data, size_t size, struct ev_stack *out)
{
	const unsigned char *p = data;
	size_t fbytes, nbytes, kbytes;

	if (size < EV_WIRE_HEAD)
		return -1;
	memcpy(out, p, EV_WIRE_HEAD);
	if (out->nframes > PYPERF_MAX_FRAMES || out->nnative > PYPERF_MAX_NATIVE ||
	    out->nkernel > PYPERF_KSTACK_DEPTH)
		return -1;
	fbytes = (size_t)out->nframes * sizeof(struct py_frame);
	nbytes = (size_t)out->nnative * sizeof(out->native[0]);
	kbytes = (size_t)out->nkernel * sizeof(out->kernel[0]);
	if (size != EV_WIRE_HEAD + fbytes + nbytes + kbytes)
		return -1;
	memcpy(out->frames, p + EV_WIRE_HEAD, fbytes);
	memcpy(out->native, p + EV_WIRE_HEAD + fbytes, nbytes);
	memcpy(out->kernel, p + EV_WIRE_HEAD + fbytes + nbytes, kbytes);
	return 0;
}

/* one ring buffer record to its callback */
static int dispatch(void *ctx, void *data, size_t size)
{
	struct sampler *s = ctx;
	const struct sampler_events *e = &s->ev;
	const struct ev_header *h = data;
	int pid;

	if (size < sizeof(*h))
		return 0;
	pid = (int)h->pid;
	switch (h->kind) {
	case EV_STACK:
		if (sampler_unpack_stack(data, size, s->stack))
			break;
		if (s->slots && (s->stack->flags & STACK_OFFCPU)) {
			uint64_t id = (uint64_t)s->stack->pid << 32 | s->stack->tid;
			static char one = 1;

			if (!hmap_get(&s->offcpu_threads, &id, sizeof(id)))
				(void)hmap_put(&s->offcpu_threads, &id, sizeof(id), &one);
		}
		if (e->stack)
			e->stack(e->ctx, s->stack);
		break;
	case EV_NEW_PID:
		if (e->new_pid)
			e->new_pid(e->ctx, pid);
		break;
	case EV_EXEC:
		if (e->exec)
			e->exec(e->ctx, pid);
		break;
	case EV_FORK:
		if (e->fork && size >= sizeof(struct ev_fork))
			e->fork(e->ctx, pid, (int)((const struct ev_fork *)data)->ppid,
				((const struct ev_fork *)data)->gen);
		break;
	case EV_EXIT:
		if (e->exit)
			e->exit(e->ctx, pid);
		break;
	case EV_TABLE:
		if (e->table && size >= sizeof(struct ev_table))
			e->table(e->ctx, ((const struct ev_table *)data)->table);
		break;
	case EV_MAPS:
		if (e->maps && size >= sizeof(struct ev_maps))
			e->maps(e->ctx, pid, ((const struct ev_maps *)data)->pc);
		break;
	case EV_GC:
		if (e->gc && size >= sizeof(struct ev_gc))
			e->gc(e->ctx, data);
		break;
	case EV_SAMPLE:
		if (e->sample && size >= sizeof(struct ev_sample))
			e->sample(e->ctx, data);
		break;
	case EV_IMPORT:
		if (e->import && size >= sizeof(struct ev_import)) {
			struct ev_import im = *(const struct ev_import *)data;

			im.name[sizeof(im.name) - 1] = 0;
			e->import(e->ctx, &im);
		}
		break;
	}
	return 0;
}

/* the processes and threads a run with targets (a command, -p) tracks;
 * the distinct stacks each counts map holds (drained sooner when half full:
 * sampler_counts_filling), the code objects and Python parts of new
 * stacks kept */
#define TARGETED_PROCS 4096
#define TARGETED_THREADS 4096
#define TARGETED_COUNTS 8192
#define COUNTS_MIN 1024
#define TARGETED_CODE_IDS 4096
#define TARGETED_PY_PARTS 2048
/* the native unwinder's requests to the loader, each held back a while
 * (table_req by table, maps_req by process, stray_pcs by page): an entry
 * evicted only lets its request come sooner */
#define TARGETED_REQUESTS 1024

/* the ring buffer's bytes (a power of 2): per CPU, at least, at most */
#define RINGBUF_PER_CPU (512u << 10)
#define RINGBUF_MIN (1u << 20)
#define RINGBUF_MAX (4u << 20)

/* processes whose mappings the native unwinder knows, where that table is
 * preallocated (kernels before 6.1, with the object without bpf_loop) */
#define COMPAT_NATIVE_PROCS 1024

/* The skeleton over the object built without bpf_loop: pyperf_bpf__open_opts
 * with that object's ELF bytes in place of its own (the two skeletons'
 * declarations are the same: the Makefile checks). */
static struct pyperf_bpf *open_compat(const struct bpf_object_open_opts *opts)
{
	struct pyperf_bpf *obj = calloc(1, sizeof(*obj));
	int e;

	if (!obj) {
		errno = ENOMEM;
		return NULL;
	}
	e = pyperf_bpf__create_skeleton(obj);
	if (!e) {
		obj->skeleton->data = (void *)sampler_compat_elf(&obj->skeleton->data_sz);
		e = bpf_object__open_skeleton(obj->skeleton, opts);
	}
	if (e) {
		pyperf_bpf__destroy(obj);
		errno = -e;
		return NULL;
	}
	return obj;
}

/* An array map's values, mmap'ed (a BPF_F_MMAPABLE array): its values are
 * 8-byte aligned, *elem bytes apart, and mapped by pages, *len bytes in
 * all; NULL (errno set) if it cannot be. */
static uint8_t *map_array(const struct bpf_map *m, int prot, size_t *elem, size_t *len)
{
	long page = sysconf(_SC_PAGESIZE);
	void *v;

	*elem = (bpf_map__value_size(m) + 7) / 8 * 8;
	*len = (bpf_map__max_entries(m) * *elem + page - 1) / page * page;
	v = mmap(NULL, *len, prot, MAP_SHARED, bpf_map__fd(m), 0);
	return v == MAP_FAILED ? NULL : v;
}

int sampler_open(struct sampler **out, const struct sampler_opts *o,
		 const struct sampler_events *ev, char *err, size_t errlen)
{
	LIBBPF_OPTS(bpf_object_open_opts, oo);
	struct sampler *s;
	bool compat, runtime_alloc;
	int e, inner_fd = -1, cpus;

	const char *btf = o->vmlinux_btf ? o->vmlinux_btf : "/sys/kernel/btf/vmlinux";

	if (access(btf, R_OK)) {
		set_err(err, errlen, "the kernel has no BTF (%s: %s); pyperf-bpf needs a kernel "
			 "built with CONFIG_DEBUG_INFO_BTF", btf, strerror(errno));
		return -1;
	}
	libbpf_verbose = o->verbose;
	libbpf_set_print(print_libbpf);
	/* the kernel is probed, not its version parsed (backports): without
	 * bpf_loop, the object built for such kernels (bpf/loop.bpf.h) */
	compat = o->no_bpf_loop ||
		 libbpf_probe_bpf_helper(BPF_PROG_TYPE_PERF_EVENT, BPF_FUNC_loop, NULL) != 1;
	if (compat && o->verbose)
		fprintf(stderr, "pyperf-bpf: %s: the walks run as bounded loops of global "
			"functions (bpf/loop.bpf.h)\n", o->no_bpf_loop ? "PYPERF_BPF_LOOP=0" :
			"this kernel has no bpf_loop (Linux 5.17)");
	/* CO-RE from the kernel's BTF cut down to what the object reads
	 * (minbtf.c), else from a copy of the whole; unless a program with a
	 * BTF-typed attach point (the scheduler hook) makes libbpf read the
	 * kernel's own anyway */
	{
		static char cache[PATH_MAX];
		const struct mode_desc *md = mode_desc(o->mode);
		bool live = wants_live(o);
		char boot[64];

		oo.btf_custom_path = o->vmlinux_btf;
		if (!o->vmlinux_btf && mode_owned("on_switch", false) &&
		    !mode_wants(md, live, "on_switch", false)) {
			size_t sz;
			const void *elf = compat ? sampler_compat_elf(&sz) : pyperf_bpf__elf_bytes(&sz);

			if (btf_cache_ready(boot, sizeof(boot)))
				oo.btf_custom_path = minbtf_cached(elf, sz, BTF_SYSFS, BTF_CACHE_DIR,
								   boot, cache, sizeof(cache),
								   o->verbose);
			if (!oo.btf_custom_path)
				oo.btf_custom_path = cached_vmlinux_btf(cache, sizeof(cache));
		}
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		set_err(err, errlen, "out of memory");
		return -1;
	}
	s->freq = o->freq;
	s->ev = *ev;
	s->stack = malloc(sizeof(*s->stack));
	if (!s->stack) {
		set_err(err, errlen, "out of memory");
		free(s);
		return -1;
	}
	s->compat = compat;
	s->skel = compat ? open_compat(&oo) : pyperf_bpf__open_opts(&oo);
	if (!s->skel) {
		explain_load_error(errno, err, errlen);
		free(s->stack);
		free(s);
		return -1;
	}
	s->skel->rodata->filter_targets = o->filter_targets;
	s->skel->rodata->kernel_stacks = o->kernel_stacks;
	s->skel->rodata->native_stacks = o->native_stacks;
	s->skel->rodata->stack_scan = o->stack_scan;
	s->skel->rodata->gil_only = o->gil_only;
	s->skel->rodata->async_stacks = o->async_stacks;
	s->skel->rodata->timeline = o->timeline;
	s->mode = o->mode;
	set_weights(s->skel, o);
	s->skel->rodata->offcpu_walk_hz = offcpu_walk_hz(o->freq);
	/* the modes' own programs and maps (mode.h): this mode's are loaded,
	 * the others' left out and their maps one entry long (the kernel fills
	 * a preallocated map at load: the allocator's ~14 MB are most of a
	 * short run's start-up).  The allocator probes are attached per
	 * process (sampler_attach_allocs). */
	{
		const struct mode_desc *md = mode_desc(o->mode);
		bool live = wants_live(o);
		struct bpf_program *prog;
		struct bpf_map *map;

		bpf_object__for_each_program(prog, s->skel->obj)
			if (mode_owned(bpf_program__name(prog), false))
				bpf_program__set_autoload(prog, mode_wants(md, live,
							  bpf_program__name(prog), false));
		bpf_object__for_each_map(map, s->skel->obj)
			if (mode_owned(bpf_map__name(map), true) &&
			    !mode_wants(md, live, bpf_map__name(map), true))
				bpf_map__set_max_entries(map, 1);
	}
	/* --events: the marker probes, per interpreter binary (sampler_attach_events) */
	s->events = o->events;
	bpf_program__set_autoload(s->skel->progs.on_gc_start, o->events & EVENTS_GC);
	bpf_program__set_autoload(s->skel->progs.on_gc_done, o->events & EVENTS_GC);
	bpf_program__set_autoload(s->skel->progs.on_import_start, o->events & EVENTS_IMPORT);
	bpf_program__set_autoload(s->skel->progs.on_import_done, o->events & EVENTS_IMPORT);
	if (!(o->events & EVENTS_GC))
		bpf_map__set_max_entries(s->skel->maps.gc_starts, 1);
	if (!(o->events & EVENTS_IMPORT))
		bpf_map__set_max_entries(s->skel->maps.import_starts, 1);
	s->skel->rodata->alloc_live = wants_live(o);
	s->track_live = wants_live(o);
	/* the scheduler hook costs every context switch of the host: only in
	 * the modes that want off-CPU time (their row lists it) */
	s->skel->rodata->offcpu = bpf_program__autoload(s->skel->progs.on_switch);
	if (s->skel->rodata->offcpu && o->offcpu_slots) {
		unsigned bits = 0;

		while ((1u << bits) < o->offcpu_slots && bits < 16)
			bits++;
		bpf_map__set_max_entries(s->skel->maps.offcpu_slots, 1u << bits);
		s->skel->rodata->offcpu_slot_bits = bits;
	}
	/* before 6.1 a perf_event program may use only preallocated hash
	 * maps (the compat object's kernels, and 5.17-6.0 with bpf_loop):
	 * native_procs is preallocated there, and smaller (16 KiB a process),
	 * and so are procs and targets */
	runtime_alloc = sampler_runtime_alloc_ok(); /* asked in compat too: -v says */
	if (compat || !runtime_alloc) {
		struct bpf_map *m = s->skel->maps.native_procs;
		struct bpf_map *small[] = { s->skel->maps.procs, s->skel->maps.targets };

		if (o->verbose && !runtime_alloc)
			fprintf(stderr, "pyperf-bpf: this kernel lets perf_event programs use only "
				"preallocated hash maps (before 6.1): native_procs is preallocated, "
				"for %d processes\n", COMPAT_NATIVE_PROCS);
		bpf_map__set_map_flags(m, bpf_map__map_flags(m) & ~BPF_F_NO_PREALLOC);
		bpf_map__set_max_entries(m, COMPAT_NATIVE_PROCS);
		for (size_t i = 0; i < sizeof(small) / sizeof(small[0]); i++)
			bpf_map__set_map_flags(small[i],
					       bpf_map__map_flags(small[i]) & ~BPF_F_NO_PREALLOC);
	}
	if (o->filter_targets) {
		/* One command's tree or the -p processes, not a host: smaller
		 * tables (the kernel fills a preallocated map at load, and the
		 * host-wide sizes were ~15 MiB of it).  skip and tcache are
		 * LRU: when full, the oldest entry goes. */
		bpf_map__set_max_entries(s->skel->maps.procs, TARGETED_PROCS);
		bpf_map__set_max_entries(s->skel->maps.targets, TARGETED_PROCS);
		bpf_map__set_max_entries(s->skel->maps.skip, TARGETED_PROCS);
		bpf_map__set_max_entries(s->skel->maps.tcache, TARGETED_THREADS);
		bpf_map__set_max_entries(s->skel->maps.counts0, TARGETED_COUNTS);
		bpf_map__set_max_entries(s->skel->maps.counts1, TARGETED_COUNTS);
		bpf_map__set_max_entries(s->skel->maps.announced, TARGETED_COUNTS);
		bpf_map__set_max_entries(s->skel->maps.code_ids, TARGETED_CODE_IDS);
		bpf_map__set_max_entries(s->skel->maps.py_seen, TARGETED_PY_PARTS);
		bpf_map__set_max_entries(s->skel->maps.table_req, TARGETED_REQUESTS);
		bpf_map__set_max_entries(s->skel->maps.maps_req, TARGETED_REQUESTS);
		bpf_map__set_max_entries(s->skel->maps.stray_pcs, TARGETED_REQUESTS);
	}
	if (!o->native_stacks) {
		/* no native unwinder: no tables, no requests; the smallest
		 * maps (the LRU ones are filled at load) */
		bpf_map__set_max_entries(s->skel->maps.unwind_tables, 1);
		bpf_map__set_max_entries(s->skel->maps.table_req, 1);
		bpf_map__set_max_entries(s->skel->maps.maps_req, 1);
		bpf_map__set_max_entries(s->skel->maps.stray_pcs, 1);
	}
	cpus = libbpf_num_possible_cpus();
	if (cpus <= 0)
		cpus = 1;
	bpf_map__set_max_entries(s->skel->maps.scratch_map, (__u32)cpus);
	{
		/* The ring buffer's pages are all resident in the loader once
		 * mapped, twice over (its data is mapped twice, for records
		 * that wrap): 4 MiB of ring was 8 MiB of a short run's RSS.
		 * What fills it grows with the CPUs sampling: 512 KiB each,
		 * 1 to 4 MiB. */
		__u32 ring = RINGBUF_PER_CPU * (__u32)cpus;

		ring = ring < RINGBUF_MIN ? RINGBUF_MIN : ring > RINGBUF_MAX ? RINGBUF_MAX : ring;
		while (ring & (ring - 1)) /* a power of 2 */
			ring &= ring - 1;
		bpf_map__set_max_entries(s->skel->maps.events, ring);
		s->skel->rodata->ringbuf_wake_at = ring / 4;
	}
	if (o->counts_entries) {
		bpf_map__set_max_entries(s->skel->maps.counts0, o->counts_entries);
		bpf_map__set_max_entries(s->skel->maps.counts1, o->counts_entries);
	} else if (o->mode == MODE_CPU && o->freq > 0 && o->drain_ms) {
		/* A counts map holds the distinct stacks of one drain, which in
		 * --mode cpu are at most its samples: freq on each CPU for
		 * drain_ms.  Twice that, as the loader drains when it is half
		 * full (sampler_counts_filling); at least COUNTS_MIN.  A 99 Hz
		 * run on 2 CPUs: 1024 entries, not 8192 filled at each start
		 * (1.4 MiB of a -p run's maps); the other modes' counts are
		 * nanoseconds or events, of any number of stacks. */
		uint64_t want = 2ull * (unsigned)o->freq * (unsigned)cpus * o->drain_ms / 1000;
		__u32 n = COUNTS_MIN;

		while (n < want && n < bpf_map__max_entries(s->skel->maps.counts0))
			n *= 2;
		if (n < bpf_map__max_entries(s->skel->maps.counts0)) {
			bpf_map__set_max_entries(s->skel->maps.counts0, n);
			bpf_map__set_max_entries(s->skel->maps.counts1, n);
		}
	}
	s->counts_max = bpf_map__max_entries(s->skel->maps.counts0);
	s->skel->rodata->counts_wake_at = s->counts_max / 2 ? s->counts_max / 2 : 1;
	/* libbpf makes the outer map's inner template as the definition has it
	 * (32768 entries, preallocated: made and freed at load for nothing):
	 * one of 1 entry instead (the kernel does not compare a hash map's
	 * size with its template's; libbpf 1.1 cannot resize the template) */
	inner_fd = bpf_map_create(BPF_MAP_TYPE_HASH, "counts_inner", sizeof(struct stack_key),
				  sizeof(__u64), 1, NULL);
	if (inner_fd >= 0 && bpf_map__set_inner_map_fd(s->skel->maps.counts, inner_fd)) {
		close(inner_fd);
		inner_fd = -1;
	}
	/* the kernel's own names of kernel addresses: a syscall program
	 * (5.14) with bpf_snprintf (5.13); without, /proc/kallsyms
	 * (naming_name_kernel) */
	if (libbpf_probe_bpf_prog_type(BPF_PROG_TYPE_SYSCALL, NULL) != 1)
		bpf_program__set_autoload(s->skel->progs.name_ksym, false);
	if (o->verifier_stats && (s->vlog = calloc(MAX_PROGS, VERIFIER_LOG))) {
		/* level 4: the statistics alone (level 1 would log every
		 * instruction: megabytes); a failed load's reasons then need -v */
		struct bpf_program *prog;
		int i = 0;

		bpf_object__for_each_program(prog, s->skel->obj) {
			if (i < MAX_PROGS && bpf_program__autoload(prog)) {
				bpf_program__set_log_buf(prog, s->vlog[i], VERIFIER_LOG);
				bpf_program__set_log_level(prog, 4);
			}
			i++;
		}
	}
	e = pyperf_bpf__load(s->skel);
	if (inner_fd >= 0)
		close(inner_fd);
	if (e) {
		explain_load_error(-e, err, errlen);
		goto fail;
	}
	s->scratch = map_array(s->skel->maps.scratch_map, PROT_READ, &s->scratch_elem,
			       &s->scratch_len);
	if (!s->scratch) {
		set_err(err, errlen, "cannot map the sampler's scratch: %s", strerror(errno));
		goto fail;
	}
	if (s->skel->rodata->offcpu) {
		s->slot_bits = s->skel->rodata->offcpu_slot_bits;
		s->slots = map_array(s->skel->maps.offcpu_slots, PROT_READ | PROT_WRITE,
				     &s->slot_bytes, &s->slots_len);
		if (!s->slots) {
			set_err(err, errlen, "cannot map the off-CPU thread table: %s", strerror(errno));
			goto fail;
		}
	}
	e = pyperf_bpf__attach(s->skel); /* the tracepoints; perf events come in sampler_start */
	if (e) {
		set_err(err, errlen, "cannot attach the process tracepoints: %s", strerror(-e));
		goto fail;
	}
	s->rb = ring_buffer__new(bpf_map__fd(s->skel->maps.events), dispatch, s, NULL);
	if (!s->rb) {
		set_err(err, errlen, "cannot open the ring buffer: %s", strerror(errno));
		goto fail;
	}
	*out = s;
	return 0;
fail:
	sampler_close(s);
	return -1;
}

int sampler_attach_events(struct sampler *s, const char *path, char *err, size_t errlen)
{
	static const struct {
		unsigned want;
		const char *name;
	} marks[EVENT_LINKS] = { { EVENTS_GC, "gc__start" }, { EVENTS_GC, "gc__done" },
				 { EVENTS_IMPORT, "import__find__load__start" },
				 { EVENTS_IMPORT, "import__find__load__done" } };
	struct bpf_program *progs[EVENT_LINKS] = { s->skel->progs.on_gc_start,
						   s->skel->progs.on_gc_done,
						   s->skel->progs.on_import_start,
						   s->skel->progs.on_import_done };
	struct event_links *e;
	struct stat st;
	uint64_t key[2];

	if (!s->events)
		return 0;
	if (stat(path, &st))
		return set_err(err, errlen, "%s: %s", path, strerror(errno)), -1;
	key[0] = st.st_dev;
	key[1] = st.st_ino;
	if (hmap_get(&s->event_links, key, sizeof(key)))
		return 0; /* looked at before (and told, if it has none) */
	if (!(e = calloc(1, sizeof(*e))))
		return set_err(err, errlen, "out of memory"), -1;
	for (int i = 0; i < EVENT_LINKS; i++) {
		if (!(s->events & marks[i].want))
			continue;
		/* every process mapping it (-1); the programs pass over the
		 * processes the sampler does not profile */
		e->l[i] = bpf_program__attach_usdt(progs[i], -1, path, "python", marks[i].name, NULL);
		if (e->l[i])
			e->found = 1;
	}
	if (hmap_put(&s->event_links, key, sizeof(key), e)) {
		event_links_free(e);
		return set_err(err, errlen, "out of memory"), -1;
	}
	return e->found ? 0 : 1;
}

int sampler_add_target(struct sampler *s, uint32_t pid)
{
	uint8_t one = 1;

	return bpf_map__update_elem(s->skel->maps.targets, &pid, sizeof(pid), &one, 1, BPF_ANY);
}

int sampler_set_proc(struct sampler *s, uint32_t pid, const struct proc_info *pi)
{
	int rc;

	bpf_map__delete_elem(s->skel->maps.skip, &pid, sizeof(pid), 0);
	rc = bpf_map__update_elem(s->skel->maps.procs, &pid, sizeof(pid), pi, sizeof(*pi), BPF_ANY);
	__atomic_fetch_add(&s->skel->data->procs_epoch, 1, __ATOMIC_SEQ_CST);
	return rc;
}

bool sampler_has_proc(struct sampler *s, uint32_t pid)
{
	struct proc_info pi;

	return bpf_map__lookup_elem(s->skel->maps.procs, &pid, sizeof(pid), &pi, sizeof(pi), 0) == 0;
}

/* The allocator probes, for pid, into the C library at path (as this
 * process sees it); NULL with a message if malloc (and for `leaks` its
 * return and free) could not be probed. */
static struct alloc_links *alloc_links_attach(struct sampler *s, uint32_t pid, const char *path,
					      char *err, size_t errlen)
{
	static const struct {
		const char *name;
		int prog;    /* 0 malloc, 1 calloc, 2 size second, 3 posix_memalign, 4 realloc,
			      * 5 mmap */
	} funcs[ALLOC_FUNCS] = { { "malloc", 0 }, { "calloc", 1 }, { "realloc", 4 },
				 { "aligned_alloc", 2 }, { "memalign", 2 },
				 { "posix_memalign", 3 }, { "mmap", 5 } };
	struct bpf_program *progs[6] = { s->skel->progs.on_malloc, s->skel->progs.on_calloc,
					 s->skel->progs.on_alloc_arg2,
					 s->skel->progs.on_posix_memalign, s->skel->progs.on_realloc,
					 s->skel->progs.on_mmap };
	struct alloc_links *a = calloc(1, sizeof(*a));
	struct stat st;

	if (!a) {
		set_err(err, errlen, "out of memory");
		return NULL;
	}
	if (stat(path, &st)) {
		set_err(err, errlen, "%s: %s", path, strerror(errno));
		free(a);
		return NULL;
	}
	a->dev = st.st_dev;
	a->ino = st.st_ino;
	for (int i = 0; i < ALLOC_FUNCS; i++) {
		LIBBPF_OPTS(bpf_uprobe_opts, uo, .func_name = funcs[i].name);

		a->l[i] = bpf_program__attach_uprobe_opts(progs[funcs[i].prog], (pid_t)pid, path, 0,
							  &uo);
		if (!a->l[i] && i == 0)
			break;
		if (s->track_live) {
			LIBBPF_OPTS(bpf_uprobe_opts, ro, .func_name = funcs[i].name, .retprobe = true);

			a->l[ALLOC_FUNCS + i] = bpf_program__attach_uprobe_opts(
				s->skel->progs.on_alloc_ret, (pid_t)pid, path, 0, &ro);
		}
	}
	if (a->l[0] && s->track_live) {
		LIBBPF_OPTS(bpf_uprobe_opts, fo, .func_name = "free");
		LIBBPF_OPTS(bpf_uprobe_opts, mo, .func_name = "munmap");

		a->l[2 * ALLOC_FUNCS] = bpf_program__attach_uprobe_opts(s->skel->progs.on_free,
									(pid_t)pid, path, 0, &fo);
		a->l[2 * ALLOC_FUNCS + 1] = bpf_program__attach_uprobe_opts(
			s->skel->progs.on_munmap, (pid_t)pid, path, 0, &mo);
	}
	if (!a->l[0] || (s->track_live && (!a->l[ALLOC_FUNCS] || !a->l[2 * ALLOC_FUNCS]))) {
		set_err(err, errlen, "cannot probe malloc%s in %s: %s",
			 s->track_live ? " and free" : "", path, strerror(errno));
		alloc_links_drop(s, a);
		return NULL;
	}
	return a;
}

static int alloc_links_put(struct sampler *s, uint32_t pid, struct alloc_links *a, char *err,
			   size_t errlen)
{
	alloc_links_drop(s, hmap_del(&s->alloc_links, &pid, sizeof(pid)));
	if (hmap_put(&s->alloc_links, &pid, sizeof(pid), a)) {
		alloc_links_drop(s, a);
		set_err(err, errlen, "out of memory");
		return -1;
	}
	return 0;
}

int sampler_hold_allocs(struct sampler *s, uint32_t pid, const char *libc, char *err,
			size_t errlen)
{
	struct alloc_links *a = alloc_links_attach(s, pid, libc, err, errlen);

	if (!a)
		return -1;
	a->held = true;
	return alloc_links_put(s, pid, a, err, errlen);
}

int sampler_attach_allocs(struct sampler *s, uint32_t pid, char *err, size_t errlen)
{
	struct libc_text text = { 0, 0 };
	struct proc_maps m = { 0 };
	const struct proc_map *libc;
	struct alloc_links *a;
	char path[4096];
	struct stat st;

	if (procmaps_read((int)pid, &m, err, errlen))
		return -1;
	libc = procmaps_first_basename_prefix(&m, "libc.so");
	if (!libc || !procmaps_host_path((int)pid, libc->path, path, sizeof(path))) {
		procmaps_free(&m);
		alloc_links_drop(s, hmap_del(&s->alloc_links, &pid, sizeof(pid)));
		set_err(err, errlen, "no C library (libc.so) mapped: its allocations are not seen");
		return -1;
	}
	/* its code: the executable mappings of that file */
	for (size_t i = 0; i < m.n; i++)
		if (m.v[i].path && !strcmp(m.v[i].path, libc->path) && m.v[i].perms[2] == 'x') {
			text.lo = text.lo && text.lo < m.v[i].start ? text.lo : m.v[i].start;
			text.hi = text.hi > m.v[i].end ? text.hi : m.v[i].end;
		}
	procmaps_free(&m);
	bpf_map__update_elem(s->skel->maps.libc_texts, &pid, sizeof(pid), &text, sizeof(text),
			     BPF_ANY);
	/* probes put in before the exec are in the right library already */
	a = hmap_get(&s->alloc_links, &pid, sizeof(pid));
	if (a && !stat(path, &st) && st.st_dev == a->dev && st.st_ino == a->ino) {
		a->held = false;
		return 0;
	}
	a = alloc_links_attach(s, pid, path, err, errlen);
	if (!a) {
		alloc_links_drop(s, hmap_del(&s->alloc_links, &pid, sizeof(pid)));
		return -1;
	}
	return alloc_links_put(s, pid, a, err, errlen);
}

void sampler_live(struct sampler *s, sampler_live_fn fn, sampler_objects_fn objs, void *ctx)
{
	struct live_key k, next, *prev = NULL;
	struct live_alloc a;
	struct stack_key sk, snext, *sprev = NULL;
	__u64 n;

	if (!s->track_live)
		return;
	/* the probes out first: the maps hold still while read */
	hmap_free(&s->alloc_links, alloc_links_free);
	hmap_free(&s->event_links, event_links_free);
	reaper_join(s);
	while (!bpf_map__get_next_key(s->skel->maps.live_allocs, prev, &next, sizeof(next))) {
		k = next;
		prev = &k;
		if (!bpf_map__lookup_elem(s->skel->maps.live_allocs, &k, sizeof(k), &a, sizeof(a), 0))
			fn(ctx, &k, &a);
	}
	while (!bpf_map__get_next_key(s->skel->maps.alloc_objects, sprev, &snext, sizeof(snext))) {
		sk = snext;
		sprev = &sk;
		if (!bpf_map__lookup_elem(s->skel->maps.alloc_objects, &sk, sizeof(sk), &n, sizeof(n), 0))
			objs(ctx, &sk, n);
	}
}

void sampler_exited(struct sampler *s, uint32_t pid)
{
	alloc_links_drop(s, hmap_del(&s->alloc_links, &pid, sizeof(pid)));
}

static void each_key(const struct bpf_map *m, void (*fn)(void *ctx, int pid), void *ctx)
{
	uint32_t key, next, *prev = NULL;

	while (!bpf_map__get_next_key(m, prev, &next, sizeof(next))) {
		fn(ctx, (int)next);
		key = next;
		prev = &key;
	}
}

void sampler_each_pid(struct sampler *s, void (*fn)(void *ctx, int pid), void *ctx)
{
	each_key(s->skel->maps.procs, fn, ctx);
	each_key(s->skel->maps.native_procs, fn, ctx);
	hmap_for_each(&s->alloc_links, e) {
		uint32_t pid;

		memcpy(&pid, e->key, sizeof(pid));
		fn(ctx, (int)pid);
	}
}

void sampler_forget(struct sampler *s, uint32_t pid)
{
	struct alloc_links *a = hmap_get(&s->alloc_links, &pid, sizeof(pid));

	if (a && a->held)
		a->held = false; /* the command's own exec: its probes stay */
	else
		alloc_links_drop(s, hmap_del(&s->alloc_links, &pid, sizeof(pid)));
	bpf_map__delete_elem(s->skel->maps.libc_texts, &pid, sizeof(pid), 0);
	bpf_map__delete_elem(s->skel->maps.procs, &pid, sizeof(pid), 0);
	__atomic_fetch_add(&s->skel->data->procs_epoch, 1, __ATOMIC_SEQ_CST);
	bpf_map__delete_elem(s->skel->maps.skip, &pid, sizeof(pid), 0);
	bpf_map__delete_elem(s->skel->maps.native_procs, &pid, sizeof(pid), 0);
}

/* A table is a BPF array of its own, filled through a short-lived mmap of it
 * (a kept mapping would count in our RSS).  It has the BTF types of the
 * outer map's template: Linux 6.1 compares what it derives from them (a
 * timer's place, "none" with BTF and "unknown" without) and refuses a
 * table made without. */
static long store_create(void *ctx, const struct unwind_row *t, size_t n)
{
	struct sampler *s = ctx;
	const struct btf *btf = bpf_object__btf(s->skel->obj);
	LIBBPF_OPTS(bpf_map_create_opts, mo, .map_flags = BPF_F_INNER_MAP | BPF_F_MMAPABLE);
	size_t len = (n * sizeof(*t) + 4095) / 4096 * 4096;
	int key = btf ? btf__find_by_name_kind(btf, "__u32", BTF_KIND_TYPEDEF) : -1;
	int value = btf ? btf__find_by_name_kind(btf, "unwind_row", BTF_KIND_STRUCT) : -1;
	int fd;
	void *m;

	if (key > 0 && value > 0) {
		mo.btf_fd = bpf_object__btf_fd(s->skel->obj);
		mo.btf_key_type_id = (__u32)key;
		mo.btf_value_type_id = (__u32)value;
	}
	fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "unwind_rows", sizeof(__u32), sizeof(*t), (__u32)n,
			    &mo);
	if (fd < 0)
		return -1;
	m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED) {
		close(fd);
		return -1;
	}
	memcpy(m, t, n * sizeof(*t));
	munmap(m, len);
	return fd;
}

static int store_install(void *ctx, uint32_t slot, long h)
{
	struct sampler *s = ctx;
	int fd = (int)h;

	if (bpf_map__update_elem(s->skel->maps.unwind_tables, &slot, sizeof(slot), &fd,
				 sizeof(fd), BPF_ANY))
		return -1;
	close(fd); /* the outer map holds it */
	return 0;
}

static void store_remove(void *ctx, uint32_t slot)
{
	struct sampler *s = ctx;

	bpf_map__delete_elem(s->skel->maps.unwind_tables, &slot, sizeof(slot), 0);
}

static void store_discard(void *ctx, long h)
{
	(void)ctx;
	close((int)h);
}

static const uint64_t *store_used(void *ctx)
{
	return ((struct sampler *)ctx)->table_used;
}

const struct native_store *sampler_table_store(struct sampler *s)
{
	if (!s->table_used) {
		void *m = mmap(NULL, PYPERF_MAX_TABLES * sizeof(uint64_t), PROT_READ, MAP_SHARED,
			       bpf_map__fd(s->skel->maps.table_used), 0);

		if (m == MAP_FAILED)
			return NULL;
		s->table_used = m;
	}
	s->store.create = store_create;
	s->store.install = store_install;
	s->store.remove = store_remove;
	s->store.discard = store_discard;
	s->store.used = store_used;
	s->store.ctx = s;
	return &s->store;
}

int sampler_set_native_maps(struct sampler *s, uint32_t pid, const struct native_maps *nm)
{
	return bpf_map__update_elem(s->skel->maps.native_procs, &pid, sizeof(pid), nm, sizeof(*nm),
				    BPF_ANY);
}

int sampler_stray_pc(struct sampler *s, uint32_t pid, uint64_t pc, uint64_t retry_after_ns)
{
	struct stray_key k = { .tgid = pid, .page = pc >> 12 };
	uint64_t pause = clock_mono_ns() + SAMPLER_STRAY_PAUSE_MS * 1000000ull;

	if (bpf_map__update_elem(s->skel->maps.maps_req, &pid, sizeof(pid), &pause, sizeof(pause),
				 BPF_ANY))
		return -1;
	return bpf_map__update_elem(s->skel->maps.stray_pcs, &k, sizeof(k), &retry_after_ns,
				    sizeof(retry_after_ns), BPF_ANY);
}

int sampler_skip(struct sampler *s, uint32_t pid, uint64_t retry_after_ns, bool refused)
{
	struct skip_info si = { .retry_after_ns = retry_after_ns, .refused = refused };

	return bpf_map__update_elem(s->skel->maps.skip, &pid, sizeof(pid), &si, sizeof(si), BPF_ANY);
}

uint64_t sampler_skipped_weight(struct sampler *s, uint32_t pid)
{
	struct skip_info si = { 0 };

	if (bpf_map__lookup_elem(s->skel->maps.skip, &pid, sizeof(pid), &si, sizeof(si), 0))
		return 0;
	return si.weight;
}

int sampler_code_id(struct sampler *s, uint32_t pid, uint64_t code, uint32_t check,
		     struct code_id *out)
{
	struct code_id_key k = { .tgid = pid, .check = check, .code = code };

	return s ? bpf_map__lookup_elem(s->skel->maps.code_ids, &k, sizeof(k), out, sizeof(*out), 0)
		 : -1;
}

uint64_t sampler_thread_state(struct sampler *s, uint32_t pid, uint32_t tid)
{
	struct tstate_cache c;

	if (!s || bpf_map__lookup_elem(s->skel->maps.tcache, &tid, sizeof(tid), &c, sizeof(c), 0))
		return 0;
	return c.tgid == pid ? c.tstate : 0;
}

/* cpu's event that runs on_sample, as the mode's row says: its cpu-clock
 * at freq, or (--mode faults) every page fault, which on_sample picks from
 * itself */
static int perf_open_sampling(int cpu, int freq, enum pyperf_mode mode)
{
	struct perf_event_attr a;

	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = PERF_TYPE_SOFTWARE;
	a.config = (unsigned)mode_desc(mode)->perf_event;
	if (a.config == PERF_COUNT_SW_CPU_CLOCK)
		a.sample_period = 1000000000ull / (unsigned)freq; /* cpu-clock counts ns */
	else
		a.sample_period = 1;
	return syscall(__NR_perf_event_open, &a, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

int sampler_start(struct sampler *s, char *err, size_t errlen)
{
	int n = libbpf_num_possible_cpus();

	if (n <= 0) {
		set_err(err, errlen, "cannot count CPUs: %s", strerror(-n));
		return -1;
	}
	s->ncpus = n;
	s->links = calloc(n, sizeof(*s->links));
	s->pfds = malloc(n * sizeof(*s->pfds));
	if (!s->links || !s->pfds) {
		set_err(err, errlen, "out of memory");
		return -1;
	}
	for (int cpu = 0; cpu < n; cpu++)
		s->pfds[cpu] = -1;
	for (int cpu = 0; cpu < n && mode_desc(s->mode)->perf_event >= 0; cpu++) {
		s->pfds[cpu] = perf_open_sampling(cpu, s->freq, s->mode);
		if (s->pfds[cpu] < 0) {
			if (errno == ENODEV || errno == ENOENT)
				continue; /* possible but offline CPU */
			set_err(err, errlen, "perf_event_open(%s, cpu %d): %s",
				 mode_desc(s->mode)->perf_event == PERF_COUNT_SW_PAGE_FAULTS ?
				 "page-faults" : "cpu-clock", cpu,
				 strerror(errno));
			return -1;
		}
		s->links[cpu] = bpf_program__attach_perf_event(s->skel->progs.on_sample, s->pfds[cpu]);
		if (!s->links[cpu]) {
			set_err(err, errlen, "cannot attach the sampler to cpu %d: %s", cpu,
				 strerror(errno));
			return -1;
		}
	}
	return 0;
}

void sampler_stop(struct sampler *s)
{
	for (int cpu = 0; cpu < s->ncpus; cpu++) {
		bpf_link__destroy(s->links[cpu]);
		s->links[cpu] = NULL;
		if (s->pfds[cpu] >= 0)
			close(s->pfds[cpu]);
		s->pfds[cpu] = -1;
	}
}

void sampler_announce_again(struct sampler *s)
{
	__atomic_add_fetch(&s->skel->bss->announce_epoch, 1, __ATOMIC_SEQ_CST);
}

int sampler_poll(struct sampler *s, int timeout_ms, struct pollfd *more, size_t nmore)
{
	struct pollfd p[SAMPLER_POLL_MAX + 1] = {
		{ .fd = ring_buffer__epoll_fd(s->rb), .events = POLLIN } };
	int n;

	if (nmore > SAMPLER_POLL_MAX)
		nmore = SAMPLER_POLL_MAX;
	if (nmore)
		memcpy(p + 1, more, nmore * sizeof(*more));
	/* the clock the sampler marks the tables it uses with (table_clock) */
	__atomic_store_n(&s->skel->bss->table_clock, clock_mono_ns(), __ATOMIC_RELAXED);
	n = poll(p, nmore + 1, timeout_ms);
	if (n < 0)
		return errno == EINTR ? 0 : -errno;
	for (size_t i = 0; i < nmore; i++)
		more[i].revents = p[1 + i].revents;
	n = ring_buffer__consume(s->rb);
	return n == -EINTR ? 0 : n;
}

static int drain_map(int fd, sampler_count_fn fn, void *ctx)
{
	static struct stack_key keys[DRAIN_BATCH];
	static uint64_t vals[DRAIN_BATCH];
	uint64_t in = 0, outb = 0;
	void *inp = NULL;
	int e;

	do {
		__u32 count = DRAIN_BATCH;

		e = bpf_map_lookup_and_delete_batch(fd, inp, &outb, keys, vals, &count, NULL);
		if (e && errno != ENOENT)
			return -errno;
		for (__u32 i = 0; i < count; i++)
			if (vals[i]) /* 0: an off-CPU block announced, not ended yet */
				fn(ctx, &keys[i], vals[i]);
		in = outb;
		inp = &in;
	} while (!e);
	return 0;
}

/* thread id's off-CPU slot (as offcpu.bpf.h places it), or NULL */
static struct offcpu_thread *slot_of(struct sampler *s, uint64_t id)
{
	uint32_t tid = (uint32_t)id, mask = (1u << s->slot_bits) - 1;
	uint32_t at[2] = { tid & mask, s->slot_bits ? (tid * 2654435761u) >> (32 - s->slot_bits) : 0 };

	for (int i = 0; i < 2; i++) {
		struct offcpu_thread *t = (struct offcpu_thread *)(s->slots + at[i] * s->slot_bytes);

		if (__atomic_load_n(&t->id, __ATOMIC_ACQUIRE) == id)
			return t;
	}
	return NULL;
}

int sampler_block_in_flight(struct sampler *s, const struct stack_key *key, uint64_t since_ns)
{
	uint64_t id = (uint64_t)key->pid << 32 | key->tid;
	uint32_t mask = (1u << s->slot_bits) - 1;
	uint32_t at[2] = { key->tid & mask,
			   s->slot_bits ? (key->tid * 2654435761u) >> (32 - s->slot_bits) : 0 };
	static const char one = 1;

	if (!s->slots || !key->tid)
		return -1;
	if (slot_of(s, id))
		return 1;
	for (int i = 0; i < 2; i++) {
		struct offcpu_thread *t = (struct offcpu_thread *)(s->slots + at[i] * s->slot_bytes);
		uint64_t none = 0;

		/* claimed as block_starts claims one, with a compare-and-swap;
		 * epoch 0 makes the hook look the process up when the thread
		 * next leaves the CPU, and clear this block (it ran, and its
		 * end was counted at its switch in) */
		if (!__atomic_compare_exchange_n(&t->id, &none, id, false, __ATOMIC_ACQ_REL,
						 __ATOMIC_ACQUIRE))
			continue;
		t->epoch = 0;
		t->every = 1;
		t->countdown = t->gap = 0;
		t->win_switches = t->prev_switches = 0;
		t->win_ns = t->last_ns = 0;
		t->key = *key;
		__atomic_store_n(&t->out_ns, since_ns, __ATOMIC_RELEASE);
		if (!hmap_get(&s->offcpu_threads, &id, sizeof(id)))
			(void)hmap_put(&s->offcpu_threads, &id, sizeof(id), (void *)&one);
		s->blocks_in_flight++;
		return 0;
	}
	return -1;
}

bool sampler_block_drop(struct sampler *s, const struct stack_key *key)
{
	struct offcpu_thread *t = s->slots ? slot_of(s, (uint64_t)key->pid << 32 | key->tid)
					   : NULL;
	uint64_t out;

	if (!t || t->key.hash != key->hash)
		return false;
	out = __atomic_load_n(&t->out_ns, __ATOMIC_ACQUIRE);
	/* as a drain takes it: the sampler's exchange at the block's end, or
	 * its new walk at a switch out (a new start), cannot race this */
	if (!out || !__atomic_compare_exchange_n(&t->out_ns, &out, 0, false, __ATOMIC_ACQ_REL,
						 __ATOMIC_ACQUIRE))
		return false;
	s->blocks_in_flight--;
	return true;
}

/* Blocks still in flight: a thread off the CPU since its block was walked
 * (a worker waiting for work, a process asleep from its birth) would count
 * only when it runs again, perhaps never in the recording.  Each drain
 * counts the time so far and moves the block's start to now, with one
 * compare-and-swap that the sampler's exchange at the block's end
 * (block_ends) cannot race; with -f timeline the piece is a block too. */
static int sampler_flush_blocks(struct sampler *s, sampler_count_fn fn, void *ctx)
{
	uint64_t now = clock_mono_ns(), gone[64];
	size_t ngone = 0;

	hmap_for_each(&s->offcpu_threads, e) {
		uint64_t id = *(const uint64_t *)e->key, out;
		struct offcpu_thread *t = slot_of(s, id);
		struct stack_key key;
		uint32_t every;

		if (!t) { /* it ended, or lost its slot */
			if (ngone < sizeof(gone) / sizeof(gone[0]))
				gone[ngone++] = id;
			continue;
		}
		out = __atomic_load_n(&t->out_ns, __ATOMIC_ACQUIRE);
		if (!out || now <= out)
			continue;
		key = t->key;
		every = t->every ? t->every : 1;
		if (!__atomic_compare_exchange_n(&t->out_ns, &out, now, false, __ATOMIC_ACQ_REL,
						 __ATOMIC_ACQUIRE))
			continue; /* it ran meanwhile: the sampler counted it */
		fn(ctx, &key, (now - out) * every);
		if (s->ev.sample && s->skel->rodata->timeline) {
			struct ev_sample piece = {
				.kind = EV_SAMPLE, .pid = key.pid, .tid = key.tid, .gen = key.gen,
				.hash = key.hash, .ts = out, .dur = now - out,
				.weight = (now - out) * every, .flags = STACK_OFFCPU,
			};

			s->ev.sample(s->ev.ctx, &piece);
		}
	}
	for (size_t i = 0; i < ngone; i++)
		hmap_del(&s->offcpu_threads, &gone[i], sizeof(gone[i]));
	return 0;
}

int sampler_drain(struct sampler *s, sampler_count_fn fn, void *ctx)
{
	__u32 idle = s->skel->bss->active & 1;
	int fds[2] = { bpf_map__fd(s->skel->maps.counts0), bpf_map__fd(s->skel->maps.counts1) };
	struct timespec settle = { 0, 2 * 1000 * 1000 };
	int rc;

	__atomic_store_n(&s->skel->bss->active, idle ^ 1, __ATOMIC_SEQ_CST);
	nanosleep(&settle, NULL); /* programs that picked the old map finish in microseconds */
	ring_buffer__consume(s->rb);
	if (s->slots)
		sampler_flush_blocks(s, fn, ctx);
	rc = drain_map(fds[idle], fn, ctx);
	/* empty again */
	__atomic_store_n(&s->skel->bss->map_fill[idle], 0, __ATOMIC_SEQ_CST);
	__atomic_store_n(&s->skel->bss->map_full[idle], 0, __ATOMIC_SEQ_CST);
	return rc;
}

bool sampler_counts_filling(const struct sampler *s)
{
	__u32 active = __atomic_load_n(&s->skel->bss->active, __ATOMIC_ACQUIRE) & 1;

	return __atomic_load_n(&s->skel->bss->map_fill[active], __ATOMIC_ACQUIRE) >=
	       s->skel->rodata->counts_wake_at;
}

int sampler_name_kernel(struct sampler *s, uint64_t addr, char *buf, size_t len)
{
	uint64_t arg = addr + 1; /* %pB names the symbol holding its argument - 1 */
	LIBBPF_OPTS(bpf_test_run_opts, run, .ctx_in = &arg, .ctx_size_in = sizeof(arg));
	const char *out = s->skel->bss->ksym_name;
	size_t n;

	if (!len)
		return -1;
	s->skel->bss->ksym_name[0] = 0;
	if (bpf_prog_test_run_opts(bpf_program__fd(s->skel->progs.name_ksym), &run) || run.retval)
		return -1;
	/* "name+0x1f/0x80 [module]", or "0xffff..." for an address in no symbol
	 * (bpf_snprintf always ends the buffer) */
	n = strcspn(out, "+ ");
	if (!n || !strncmp(out, "0x", 2)) {
		buf[0] = 0;
		return 0;
	}
	if (n >= len)
		n = len - 1;
	memcpy(buf, out, n);
	buf[n] = 0;
	return 0;
}

void sampler_stats(struct sampler *s, uint64_t out[STAT_NR])
{
	int ncpu = libbpf_num_possible_cpus();
	uint64_t *v = calloc(ncpu > 0 ? ncpu : 1, sizeof(*v));

	memset(out, 0, sizeof(uint64_t) * STAT_NR);
	if (!v)
		return;
	for (__u32 i = 0; i < STAT_NR; i++) {
		if (bpf_map__lookup_elem(s->skel->maps.stats, &i, sizeof(i), v,
					 sizeof(*v) * ncpu, 0))
			continue;
		for (int c = 0; c < ncpu; c++)
			out[i] += v[c];
	}
	free(v);
	/* the sampler's own walks count in each CPU's scratch */
	for (__u32 c = 0; s->scratch && c < bpf_map__max_entries(s->skel->maps.scratch_map); c++) {
		const uint64_t *st = (const uint64_t *)(const void *)(s->scratch + c * s->scratch_elem);

		for (int i = 0; i < STAT_NR; i++)
			out[i] += st[i];
	}
	/* blocks found in flight at an adoption, walked by the loader */
	out[STAT_SWITCHES] += s->blocks_in_flight;
	out[STAT_OFFCPU_WALKS] += s->blocks_in_flight;
}

static void add_prog_stats(struct bpf_program *prog, uint64_t *run_cnt, uint64_t *run_time_ns)
{
	struct bpf_prog_info info;
	__u32 len = sizeof(info);

	memset(&info, 0, sizeof(info));
	if (bpf_program__fd(prog) < 0 || bpf_obj_get_info_by_fd(bpf_program__fd(prog), &info, &len))
		return;
	*run_cnt += info.run_cnt;
	*run_time_ns += info.run_time_ns;
}

int sampler_prog_stats(struct sampler *s, bool on_switch, uint64_t *run_cnt,
		       uint64_t *run_time_ns)
{
	*run_cnt = *run_time_ns = 0;
	if (on_switch) {
		add_prog_stats(s->skel->progs.on_switch, run_cnt, run_time_ns);
		return 0;
	}
	if (mode_desc(s->mode)->allocator) { /* its probes count; the clock only finds processes */
		for (const char *const *p = mode_desc(s->mode)->progs; *p; p++) {
			struct bpf_program *prog = bpf_object__find_program_by_name(s->skel->obj, *p);

			if (prog)
				add_prog_stats(prog, run_cnt, run_time_ns);
		}
		return 0;
	}
	add_prog_stats(s->skel->progs.on_sample, run_cnt, run_time_ns);
	return 0;
}

/* the number after key at the start of a line of a verifier log, or 0
 * (7.2 also has a line "insns processed A+B+..." per function) */
static uint64_t log_number(const char *log, const char *key)
{
	size_t k = strlen(key);

	for (const char *p = log; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (!strncmp(p, key, k))
			return strtoull(p + k, NULL, 10);
	return 0;
}

int sampler_maps(struct sampler *s, struct sampler_map_info *out, int max)
{
	struct bpf_map *map;
	int n = 0;

	bpf_object__for_each_map(map, s->skel->obj) {
		int fd = bpf_map__fd(map);
		char path[64], line[128];
		FILE *f;

		if (fd < 0 || n >= max)
			continue;
		memset(&out[n], 0, sizeof(out[n]));
		snprintf(out[n].name, sizeof(out[n].name), "%s", bpf_map__name(map));
		out[n].max_entries = bpf_map__max_entries(map);
		snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
		if ((f = fopen(path, "re"))) {
			while (fgets(line, sizeof(line), f))
				if (!strncmp(line, "memlock:", 8))
					out[n].memlock = strtoull(line + 8, NULL, 10);
			fclose(f);
		}
		n++;
	}
	return n;
}

int sampler_programs(struct sampler *s, struct sampler_prog_info *out, int max)
{
	struct bpf_program *prog;
	int i = 0, n = 0;

	if (!s->vlog)
		return 0;
	bpf_object__for_each_program(prog, s->skel->obj) {
		struct bpf_prog_info info;
		__u32 len = sizeof(info);
		int fd = bpf_program__fd(prog);

		if (i < MAX_PROGS && n < max && fd >= 0) {
			memset(&info, 0, sizeof(info));
			memset(&out[n], 0, sizeof(out[n]));
			snprintf(out[n].name, sizeof(out[n].name), "%s", bpf_program__name(prog));
			s->vlog[i][VERIFIER_LOG - 1] = 0;
			out[n].verified_insns = log_number(s->vlog[i], "processed ");
			out[n].verify_us = log_number(s->vlog[i], "verification time ");
			if (!bpf_obj_get_info_by_fd(fd, &info, &len)) {
				out[n].insns = info.xlated_prog_len / 8;
				out[n].jited_bytes = info.jited_prog_len;
			}
			n++;
		}
		i++;
	}
	return n;
}

bool sampler_bounded_loops(const struct sampler *s)
{
	return s->compat;
}

void sampler_close(struct sampler *s)
{
	if (!s)
		return;
	free(s->vlog);
	if (s->links)
		sampler_stop(s);
	free(s->links);
	free(s->pfds);
	hmap_free(&s->alloc_links, alloc_links_free);
	reaper_join(s);
	ring_buffer__free(s->rb);
	pyperf_bpf__destroy(s->skel);
	if (s->table_used)
		munmap(s->table_used, PYPERF_MAX_TABLES * sizeof(uint64_t));
	if (s->slots)
		munmap(s->slots, s->slots_len);
	if (s->scratch)
		munmap(s->scratch, s->scratch_len);
	hmap_free(&s->offcpu_threads, NULL);
	free(s->stack);
	free(s);
}
