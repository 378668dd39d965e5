/* pywalk.c - the sampler's Python and native walks from user space (see
 * pywalk.h).  Each step follows the BPF code it mirrors (find_tstate,
 * frame_step, code_check, native_step in pyperf.bpf.c); where they differ it
 * is only because user space can read any amount at once.  The native
 * unwinder's step is the BPF program's own (bpf/unwind_step.h). */
#include "pywalk.h"
#include "pyread.h"
#include "unwind_table.h"

#include <string.h>

static uint64_t read_u64(int pid, uint64_t addr)
{
	uint64_t v = 0;

	return addr && mem_read(pid, addr, &v, sizeof(v)) == 0 ? v : 0;
}

int pywalk_threads(const struct pyproc *py, uint64_t *tstates, size_t cap)
{
	const struct py_offsets *o = &py->off;
	uint64_t interp = read_u64(py->pid, py->runtime_addr + o->runtime_interp_head), t;
	size_t n = 0;

	if (!interp)
		return -1;
	t = read_u64(py->pid, interp + o->interp_threads_head);
	for (unsigned i = 0; t && n < cap && i < PYPERF_MAX_THREADS; i++) {
		tstates[n++] = t;
		t = read_u64(py->pid, t + o->tstate_next);
	}
	return (int)n;
}

uint64_t pywalk_thread_id(const struct pyproc *py, uint64_t tstate)
{
	return read_u64(py->pid, tstate + py->off.tstate_thread_id);
}

/* py_code_check() of the code object at code, 0 if unreadable */
static uint32_t code_check(const struct pyproc *py, uint64_t code)
{
	const struct py_offsets *o = &py->off;
	uint32_t first;

	if (mem_read(py->pid, code + o->code_firstlineno, &first, sizeof(first)))
		return 0;
	return py_code_check(first, read_u64(py->pid, code + o->code_filename),
			     read_u64(py->pid, code + o->code_name));
}

static uint32_t frame_instr(const struct py_offsets *o, const uint8_t *buf, uint64_t code)
{
	uint64_t raw;
	uint32_t instr;

	memcpy(&raw, buf + o->frame_instr, sizeof(raw));
	if (o->instr_kind == INSTR_POINTER)
		instr = (uint32_t)(raw - (code + o->code_adaptive));
	else if (o->instr_kind == INSTR_LASTI_UNITS)
		instr = (int32_t)raw < 0 ? (uint32_t)-1 : (uint32_t)raw * 2;
	else
		instr = (uint32_t)raw;
	return PY_FRAME_INSTR(instr);
}

/* bytes of a frame holding every field the walk reads (frame_read_len) */
static size_t frame_len(const struct py_offsets *o)
{
	uint16_t f[] = { o->frame_back, o->frame_code, o->frame_instr };
	size_t m = 0;

	for (size_t i = 0; i < 3; i++)
		if (f[i] + 8u > m)
			m = f[i] + 8u;
	if (o->frame_owner != PYPERF_NO_OFFSET && o->frame_owner + 1u > m)
		m = o->frame_owner + 1u;
	if (o->frame_is_entry != PYPERF_NO_OFFSET && o->frame_is_entry + 1u > m)
		m = o->frame_is_entry + 1u;
	return m > PYPERF_FRAME_READ_MAX ? PYPERF_FRAME_READ_MAX : m;
}

uint32_t pywalk_frames(const struct pyproc *py, uint64_t tstate, struct py_frame *out,
		       uint32_t cap, uint32_t *flags)
{
	const struct py_offsets *o = &py->off;
	uint8_t buf[PYPERF_FRAME_READ_MAX];
	uint64_t frame = read_u64(py->pid, tstate + o->tstate_frame), code;
	uint32_t n = 0;
	size_t len = frame_len(o);

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
		memcpy(&frame, buf + o->frame_back, sizeof(frame));
		if (o->frame_owner != PYPERF_NO_OFFSET && py_frame_is_shim(o, buf[o->frame_owner])) {
			if (n > 0)
				out[n - 1].instr |= PY_FRAME_ENTRY; /* an entry shim (3.12+) */
			continue;
		}
		if (!code)
			continue;
		out[n].code = code;
		out[n].instr = frame_instr(o, buf, code);
		if (o->frame_is_entry != PYPERF_NO_OFFSET) {
			if (buf[o->frame_is_entry])
				out[n].instr |= PY_FRAME_ENTRY;
		} else if (o->frame_owner == PYPERF_NO_OFFSET) {
			out[n].instr |= PY_FRAME_ENTRY;
		}
		out[n].check = code_check(py, code);
		n++;
	}
	return n;
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

uint32_t pywalk_native(int pid, const struct native_maps *nm, pywalk_table_fn tables, void *ctx,
		       struct unwind_regs g, __u64 *pcs, uint32_t cap, uint32_t *flags)
{
	uint32_t n = 0;

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
		pcs[n++] = g.pc;
		m = find_mapping(nm, g.pc);
		if (!m)
			goto incomplete;
		if (m->table != TABLE_NONE) {
			t = tables(ctx, m->table);
			if (!t || t[0].pc != m->table || t[0].nrows == UNWIND_NO_TABLE)
				goto incomplete;
		}
		if (!t || !t[0].nrows) { /* no CFI: frame pointers */
			if (unwind_fp_step(&pid, &g) != UNWIND_STEPPED)
				goto incomplete;
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
