/* pywalk.c - the sampler's Python and native walks from user space (see
 * pywalk.h).  What a frame is (its length, its code object, its instruction
 * offset, whether it starts an eval-loop call, the code check) is defined
 * once in bpf/pyperf.h for both walks, and the native unwinder's step is the
 * BPF program's own (bpf/unwind_step.h); what is left here is the loop,
 * which differs from the BPF one (python_walk.bpf.h) only because user space
 * can read any amount at once. */
#include "pywalk.h"
#include "pyread.h"
#include "unwind_table.h"

#include <stdbool.h>
#include <string.h>

static uint64_t read_u64(int pid, uint64_t addr)
{
	uint64_t v = 0;

	return addr && mem_read(pid, addr, &v, sizeof(v)) == 0 ? v : 0;
}

int pywalk_threads(const struct pyproc *py, uint64_t *tstates, uint64_t *ids, size_t cap)
{
	const struct py_offsets *o = &py->off;
	uint64_t interp = read_u64(py->pid, py->runtime_addr + o->runtime_interp_head), t;
	size_t n = 0;
	unsigned steps = 0;

	if (!interp)
		return -1;
	/* the sampler's bound: PYPERF_MAX_THREADS states and interpreters in all */
	for (; interp && steps < PYPERF_MAX_THREADS; steps++) {
		uint64_t id = o->interp_id != PYPERF_NO_OFFSET ? read_u64(py->pid, interp + o->interp_id)
							       : 0;

		t = read_u64(py->pid, interp + o->interp_threads_head);
		for (; t && n < cap && steps < PYPERF_MAX_THREADS; steps++) {
			if (ids)
				ids[n] = id;
			tstates[n++] = t;
			t = read_u64(py->pid, t + o->tstate_next);
		}
		if (o->interp_next == PYPERF_NO_OFFSET)
			break;
		interp = read_u64(py->pid, interp + o->interp_next);
	}
	return (int)n;
}

uint64_t pywalk_thread_id(const struct pyproc *py, uint64_t tstate)
{
	return read_u64(py->pid, tstate + py->off.tstate_thread_id);
}

static bool is_known(uint32_t tid, const uint32_t *known, uint32_t nknown)
{
	for (uint32_t i = 0; i < nknown; i++)
		if (known[i] == tid)
			return true;
	return false;
}

/* where glibc's struct pthread keeps its tid on x86-64 */
#define GLIBC_PTHREAD_TID 0x2d0
/* how far into a thread descriptor the scan looks */
#define PTHREAD_SCAN 0x800

int pywalk_thread_tids(const struct pyproc *py, const uint64_t *tstates, uint32_t n,
		       const uint32_t *known, uint32_t nknown, uint32_t *tids)
{
	static uint8_t desc[PTHREAD_SCAN];
	uint32_t found = 0, at = GLIBC_PTHREAD_TID, v;
	bool newer = py->major > 3 || (py->major == 3 && py->minor >= 11);

	for (uint32_t i = 0; i < n; i++) {
		uint64_t self = pywalk_thread_id(py, tstates[i]);

		tids[i] = 0;
		if (newer)
			v = (uint32_t)read_u64(py->pid, tstates[i] + py->off.tstate_thread_id + 8);
		else if (!self || mem_read(py->pid, self + at, &v, sizeof(v)))
			v = 0;
		if (v && is_known(v, known, nknown)) {
			tids[i] = v;
			found++;
		}
	}
	if (found || newer || !n)
		return (int)found;
	/* another C library: the first offset that holds a thread of ours in
	 * the first state's descriptor and in every other's */
	if (mem_read(py->pid, pywalk_thread_id(py, tstates[0]), desc, sizeof(desc)))
		return 0;
	for (at = 0; at + 4 <= sizeof(desc); at += 4) {
		memcpy(&v, desc + at, sizeof(v));
		if (!v || !is_known(v, known, nknown))
			continue;
		found = 0;
		for (uint32_t i = 0; i < n; i++) {
			uint64_t self = pywalk_thread_id(py, tstates[i]);

			tids[i] = self && !mem_read(py->pid, self + at, &v, sizeof(v)) &&
						  is_known(v, known, nknown)
					  ? v
					  : 0;
			found += tids[i] != 0;
		}
		if (found == n)
			return (int)found;
	}
	memset(tids, 0, n * sizeof(*tids));
	return 0;
}

uint32_t pywalk_code_check(const struct pyproc *py, uint64_t code)
{
	return pywalk_code_check_at(py->pid, &py->off, code);
}

/* the GIL's and the collector's checks, shared with the BPF program; ctx:
 * the pid */
#define PY_STATE_READ(ctx, addr, dst, size) mem_read(*(const int *)(ctx), (addr), (dst), (size))
#include "py_state.h"

bool pywalk_holds_gil(const struct pyproc *py, uint64_t tstate)
{
	int pid = py->pid;

	return py_holds_gil(&pid, &py->off, py->runtime_addr, tstate);
}

bool pywalk_runs_gc(const struct pyproc *py, uint64_t tstate)
{
	int pid = py->pid;

	return py_runs_gc(&pid, &py->off, py->runtime_addr, tstate);
}

uint32_t pywalk_code_check_at(int pid, const struct py_offsets *o, uint64_t code)
{
	uint8_t buf[PYPERF_FRAME_READ_MAX];
	uint64_t filename, name;
	uint32_t first;
	uint16_t lo, len;

	py_code_span(o, &lo, &len);
	if (len > sizeof(buf) || mem_read(pid, code + lo, buf, len))
		return 0;
	memcpy(&first, buf + (o->code_firstlineno - lo), sizeof(first));
	memcpy(&filename, buf + (o->code_filename - lo), sizeof(filename));
	memcpy(&name, buf + (o->code_name - lo), sizeof(name));
	return py_code_check(first, filename, name);
}

uint32_t pywalk_frames(const struct pyproc *py, uint64_t tstate, struct py_frame *out,
		       uint64_t *addrs, uint32_t cap, uint32_t *flags)
{
	const struct py_offsets *o = &py->off;
	uint8_t buf[PYPERF_FRAME_READ_MAX];
	uint64_t frame = read_u64(py->pid, tstate + o->tstate_frame), code, raw, at, before = 0;
	uint32_t n = 0;
	size_t len = py_frame_read_len(o);

	*flags = 0;
	memset(buf, 0, sizeof(buf));
	if (frame && o->cframe_current_frame != PYPERF_NO_OFFSET)
		frame = read_u64(py->pid, frame + o->cframe_current_frame);
	for (unsigned steps = 0; frame; steps++) {
		if (n >= cap || steps >= 4 * PYPERF_MAX_FRAMES) {
			*flags |= STACK_TRUNCATED;
			break;
		}
		if (mem_read(py->pid, frame, buf, len)) {
			*flags |= STACK_BAD_READ;
			break;
		}
		memcpy(&code, buf + o->frame_code, sizeof(code));
		code = py_frame_code(o, code);
		at = frame;
		memcpy(&frame, buf + o->frame_back, sizeof(frame));
		if (frame && (frame == at || frame == before)) { /* loops back: as the sampler does */
			*flags |= STACK_BAD_READ;
			frame = 0;
		}
		before = at;
		if (o->frame_owner != PYPERF_NO_OFFSET && py_frame_is_shim(o, buf[o->frame_owner])) {
			if (n > 0)
				out[n - 1].instr |= PY_FRAME_ENTRY; /* an entry shim (3.12+) */
			continue;
		}
		if (!code)
			continue;
		memcpy(&raw, buf + o->frame_instr, sizeof(raw));
		if (addrs)
			addrs[n] = at;
		out[n].code = code;
		out[n].instr = py_frame_instr(o, raw, code) |
			       py_frame_entry(o, buf[o->frame_is_entry & (PYPERF_FRAME_READ_MAX - 1)]);
		out[n].check = pywalk_code_check(py, code);
		n++;
	}
	return n;
}

uint32_t pywalk_frames_nested(const struct pyproc *py, const uint64_t *tstates,
			      const uint64_t *ids, uint32_t n, struct py_frame *out,
			      uint64_t *addrs, uint32_t cap, uint32_t *flags)
{
	uint32_t k = 0, f;

	*flags = 0;
	for (uint32_t i = 0; i < n && i < PYPERF_MAX_NEST && k < cap; i++) {
		uint32_t m = pywalk_frames(py, tstates[i], out + k, addrs ? addrs + k : NULL,
					   cap - k, &f);

		*flags |= f;
		k += m;
		if (m && ids[i] && k < cap) { /* as nest_next in python_walk.bpf.h */
			uint32_t entry = out[k - 1].instr & PY_FRAME_ENTRY;

			out[k - 1].instr &= ~PY_FRAME_ENTRY;
			out[k].code = PY_INTERP_MARK;
			out[k].instr = ((uint32_t)ids[i] & 0x7fffffffu) | entry;
			out[k].check = 0;
			if (addrs)
				addrs[k] = 0;
			k++;
		}
	}
	return k;
}

/* ---- native ---- */

static const struct native_mapping *find_mapping(const struct native_maps *nm, uint64_t pc)
{
	uint32_t lo = 0, hi = nm->n > PYPERF_MAX_MAPPINGS ? PYPERF_MAX_MAPPINGS : nm->n;

	while (lo < hi) {
		uint32_t mid = (lo + hi) / 2;

		if (nm->m[mid].start <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo && pc < nm->m[lo - 1].end ? &nm->m[lo - 1] : NULL;
}

/* the unwinder's step, shared with the BPF program; ctx: the pid */
#define UNWIND_READ(ctx, addr, dst) mem_read(*(const int *)(ctx), (addr), (dst), sizeof(__u64))
#include "unwind_step.h"

/* Leave a frame without CFI as the BPF program does (native_unwind.bpf.h):
 * its frame pointer while the chain is plausible, else the first word of
 * the stack above sp, PYPERF_SCAN_WORDS at most, that is a return address
 * (after a call) into a mapping with a table; that caller is marked. */
static bool leave_jit_frame(int pid, const struct native_maps *nm, struct unwind_regs *g,
			    bool *scanned)
{
	struct unwind_regs f = *g;
	uint64_t w;

	*scanned = false;
	if (unwind_fp_step(&pid, &f) == UNWIND_STEPPED && unwind_fp_plausible(g, &f) &&
	    find_mapping(nm, f.pc)) {
		*g = f;
		return true;
	}
	for (uint32_t i = 0; i < PYPERF_SCAN_WORDS; i++) {
		const struct native_mapping *m;
		__u8 code[16] = { 0 };

		if (mem_read(pid, g->sp + 8ull * i, &w, sizeof(w)))
			return false; /* past the top of the stack */
		m = find_mapping(nm, w);
		if (!m || m->table == TABLE_NONE || w < 8 || mem_read(pid, w - 8, code, 8) ||
		    !unwind_code_is_call(code))
			continue;
		g->sp += 8ull * i + 8;
		g->pc = w;
		g->bx = 0;
		unwind_scan_bp(&pid, g);
		*scanned = true;
		return true;
	}
	return false;
}

uint32_t pywalk_native(int pid, const struct native_maps *nm, pywalk_table_fn tables, void *ctx,
		       struct unwind_regs g, __u64 *pcs, uint32_t cap, uint32_t *flags)
{
	uint32_t n = 0;

	bool mark = false;

	*flags = STACK_NATIVE;
	while (g.pc) {
		const struct native_mapping *m;
		const struct unwind_row *r, *t = NULL;
		uint64_t look = g.pc - (n ? 1 : 0);
		int step;

		if (n >= cap) {
			*flags |= STACK_NATIVE_TRUNCATED;
			break;
		}
		pcs[n++] = g.pc | (mark ? NATIVE_PC_SCANNED : 0);
		mark = false;
		m = find_mapping(nm, g.pc);
		if (!m)
			goto incomplete;
		if (m->table != TABLE_NONE) {
			t = tables(ctx, m->table);
			if (!t || t[0].pc != m->table || t[0].nrows == UNWIND_NO_TABLE)
				goto incomplete;
		}
		if (!t || !t[0].nrows) { /* no CFI: frame pointers, else a scan */
			if (!leave_jit_frame(pid, nm, &g, &mark))
				goto incomplete;
			if (mark)
				*flags |= STACK_NATIVE_SCANNED;
			continue;
		}
		r = unwind_layout_find(t, (uint32_t)(look - m->bias));
		if (!r)
			goto incomplete;
		step = unwind_cfi_step(&pid, r, &g);
		if (step == UNWIND_END)
			break;
		if (step != UNWIND_STEPPED)
			goto incomplete;
	}
	return n;
incomplete:
	*flags |= STACK_NATIVE_INCOMPLETE;
	return n;
}
