/* test_walk_frames.c - the frame walk's shared definitions (bpf/pyperf.h:
 * frame length, instruction offset, entry marks, shims, code check span)
 * and the user-space walk that uses them (user/python/pywalk.c), fed
 * frames built by hand in this process's memory with each version's
 * offsets: 3.8 and 3.10 (PyFrameObject, f_lasti in bytes and in code
 * units), 3.11 (is_entry), 3.12 and 3.13 (entry shims owned by the C
 * stack), and a 3.14-style tagged code reference; and the walk to a
 * thread's bottom frame that finds its threading.Thread (user/python/pyobj.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "py_offsets_table.h"
#include "pyobj.h"
#include "pywalk.h"

#define OBJ 1024 /* bytes of every fake object */

static void put64(uint8_t *obj, uint16_t off, uint64_t v)
{
	memcpy(obj + off, &v, sizeof(v));
}

static uint8_t *code_obj(const struct py_offsets *o, int32_t first)
{
	uint8_t *c = calloc(1, OBJ);

	memcpy(c + o->code_firstlineno, &first, sizeof(first));
	put64(c, o->code_filename, 0x1000 + (uint64_t)first);
	put64(c, o->code_name, 0x2000 + (uint64_t)first);
	return c;
}

struct spec {
	uint8_t *code;       /* NULL: a shim (3.12+) */
	uint64_t instr;      /* the instruction field's raw value */
	uint8_t is_entry;
};

/* frames[0..n) chained leaf first; returns the fake PyThreadState */
static uint8_t *chain(const struct py_offsets *o, const struct spec *s, int n, uint8_t **objs)
{
	uint8_t *ts = calloc(1, OBJ), *cf = calloc(1, OBJ), *next = NULL;

	objs[0] = ts;
	objs[1] = cf;
	for (int i = n - 1; i >= 0; i--) {
		uint8_t *f = calloc(1, OBJ);

		objs[2 + i] = f;
		put64(f, o->frame_back, (uint64_t)(uintptr_t)next);
		put64(f, o->frame_code, (uint64_t)(uintptr_t)s[i].code);
		put64(f, o->frame_instr, s[i].instr);
		if (o->frame_owner != PYPERF_NO_OFFSET)
			f[o->frame_owner] = s[i].code ? 0 : o->owner_shim;
		if (o->frame_is_entry != PYPERF_NO_OFFSET)
			f[o->frame_is_entry] = s[i].is_entry;
		next = f;
	}
	if (o->cframe_current_frame != PYPERF_NO_OFFSET) {
		put64(ts, o->tstate_frame, (uint64_t)(uintptr_t)cf);
		put64(cf, o->cframe_current_frame, (uint64_t)(uintptr_t)next);
	} else {
		put64(ts, o->tstate_frame, (uint64_t)(uintptr_t)next);
	}
	return ts;
}

static uint32_t check_of(const struct py_offsets *o, int32_t first)
{
	return py_code_check((uint32_t)first, 0x1000 + (uint64_t)first, 0x2000 + (uint64_t)first);
}

static uint32_t walk(const struct py_offsets *o, uint8_t *ts, struct py_frame *out,
		     uint32_t *flags)
{
	struct pyproc py = { .pid = getpid(), .off = *o };

	return pywalk_frames(&py, (uint64_t)(uintptr_t)ts, out, NULL, 16, flags);
}

static void free_all(uint8_t **objs, int n)
{
	for (int i = 0; i < n; i++)
		free(objs[i]);
}

static void every_known_layout_reads_what_it_needs(void **state)
{
	(void)state;
	for (int minor = 8; minor <= 13; minor++) {
		const struct py_offsets *o = py_offsets_for_version(3, minor);
		uint32_t len;
		uint16_t lo, span;

		assert_non_null(o);
		len = py_frame_read_len(o);
		assert_true(len <= PYPERF_FRAME_READ_MAX);
		assert_true(len >= o->frame_back + 8u && len >= o->frame_code + 8u &&
			    len >= o->frame_instr + 8u);
		if (o->frame_owner != PYPERF_NO_OFFSET)
			assert_true(len > o->frame_owner);
		if (o->frame_is_entry != PYPERF_NO_OFFSET)
			assert_true(len > o->frame_is_entry);
		py_code_span(o, &lo, &span);
		assert_true(lo <= o->code_firstlineno && o->code_firstlineno + 4u <= lo + span);
		assert_true(lo <= o->code_filename && o->code_filename + 8u <= lo + span);
		assert_true(lo <= o->code_name && o->code_name + 8u <= lo + span);
	}
}

static void instruction_offsets_per_kind(void **state)
{
	const struct py_offsets *o38 = py_offsets_for_version(3, 8);
	const struct py_offsets *o310 = py_offsets_for_version(3, 10);
	const struct py_offsets *o311 = py_offsets_for_version(3, 11);
	uint64_t code = 0x7f0000001000;

	(void)state;
	assert_int_equal(py_frame_instr(o38, 14, code), 14);                /* bytes */
	assert_int_equal(py_frame_instr(o310, 7, code), 14);                /* code units */
	assert_int_equal(py_frame_instr(o310, (uint64_t)-1, code), 0x7fffffff); /* not started */
	assert_int_equal(py_frame_instr(o311, code + o311->code_adaptive + 30, code), 30);
	/* a pointer before the code's first instruction is "not started" too */
	assert_true(py_frame_instr(o311, code + o311->code_adaptive - 2, code) >= 0x7fff0000u);
	/* entries: every frame up to 3.10; 3.11 by its byte; 3.12+ by shims */
	assert_int_equal(py_frame_entry(o310, 0), PY_FRAME_ENTRY);
	assert_int_equal(py_frame_entry(o311, 1), PY_FRAME_ENTRY);
	assert_int_equal(py_frame_entry(o311, 0), 0);
	assert_int_equal(py_frame_entry(py_offsets_for_version(3, 12), 1), 0);
	assert_true(py_frame_is_shim(py_offsets_for_version(3, 12),
				     py_offsets_for_version(3, 12)->owner_shim));
	assert_false(py_frame_is_shim(py_offsets_for_version(3, 12), 0));
	assert_false(py_frame_is_shim(o311, 0xff));
}

static void walk_310_marks_every_frame_an_entry(void **state)
{
	const struct py_offsets *o = py_offsets_for_version(3, 10);
	uint8_t *objs[8], *a = code_obj(o, 10), *b = code_obj(o, 20);
	struct spec s[] = { { a, 3, 0 }, { b, 5, 0 } };
	struct py_frame out[16];
	uint32_t flags, n;

	(void)state;
	n = walk(o, chain(o, s, 2, objs), out, &flags);
	assert_int_equal(n, 2);
	assert_int_equal(flags, 0);
	assert_int_equal(out[0].code, (uint64_t)(uintptr_t)a);
	assert_int_equal(out[0].instr, PY_FRAME_ENTRY | 6);
	assert_int_equal(out[0].check, check_of(o, 10));
	assert_int_equal(out[1].instr, PY_FRAME_ENTRY | 10);
	assert_int_equal(out[1].check, check_of(o, 20));
	free_all(objs, 4);
	free(a);
	free(b);
}

static void walk_311_uses_is_entry(void **state)
{
	const struct py_offsets *o = py_offsets_for_version(3, 11);
	uint8_t *objs[8], *a = code_obj(o, 1), *b = code_obj(o, 2), *c = code_obj(o, 3);
	uint64_t base = o->code_adaptive;
	struct spec s[] = { { a, 0, 0 }, { b, 0, 1 }, { c, 0, 1 } };
	struct py_frame out[16];
	uint32_t flags, n;

	(void)state;
	s[0].instr = (uint64_t)(uintptr_t)a + base + 8;
	s[1].instr = (uint64_t)(uintptr_t)b + base + 2;
	s[2].instr = (uint64_t)(uintptr_t)c + base;
	n = walk(o, chain(o, s, 3, objs), out, &flags);
	assert_int_equal(n, 3);
	assert_int_equal(out[0].instr, 8);
	assert_int_equal(out[1].instr, PY_FRAME_ENTRY | 2);
	assert_int_equal(out[2].instr, PY_FRAME_ENTRY | 0);
	assert_int_equal(out[2].check, check_of(o, 3));
	free_all(objs, 5);
	free(a);
	free(b);
	free(c);
}

/* 3.12/3.13: a shim below each eval-loop call marks the frame above it */
static void walk_312_313_marks_frames_above_shims(void **state)
{
	(void)state;
	for (int minor = 12; minor <= 13; minor++) {
		const struct py_offsets *o = py_offsets_for_version(3, minor);
		uint8_t *objs[8], *a = code_obj(o, 1), *b = code_obj(o, 2), *c = code_obj(o, 3);
		uint64_t base = o->code_adaptive;
		struct spec s[] = { { a, 0, 0 }, { b, 0, 0 }, { NULL, 0, 0 }, { c, 0, 0 },
				    { NULL, 0, 0 } };
		struct py_frame out[16];
		uint32_t flags, n;

		s[0].instr = (uint64_t)(uintptr_t)a + base + 4;
		s[1].instr = (uint64_t)(uintptr_t)b + base + 6;
		s[3].instr = (uint64_t)(uintptr_t)c + base + 10;
		n = walk(o, chain(o, s, 5, objs), out, &flags);
		assert_int_equal(n, 3);
		assert_int_equal(out[0].instr, 4);
		assert_int_equal(out[1].instr, PY_FRAME_ENTRY | 6);
		assert_int_equal(out[2].instr, PY_FRAME_ENTRY | 10);
		assert_int_equal(out[2].code, (uint64_t)(uintptr_t)c);
		free_all(objs, 7);
		free(a);
		free(b);
		free(c);
	}
}

/* 3.14+: the frame holds a tagged reference; the low bits are not address */
static void tagged_code_references_are_untagged(void **state)
{
	struct py_offsets o = *py_offsets_for_version(3, 13);
	uint8_t *objs[8], *a = code_obj(&o, 7);
	struct spec s[] = { { NULL, 0, 0 } };
	struct py_frame out[16];
	uint32_t flags, n;

	(void)state;
	o.code_tag_bits = 3;
	o.owner_shim = 0xff; /* no shims in this chain */
	s[0].code = (uint8_t *)((uintptr_t)a | 1); /* Py_TAG_REFCNT */
	s[0].instr = (uint64_t)(uintptr_t)a + o.code_adaptive + 12;
	assert_int_equal(py_frame_code(&o, (uint64_t)(uintptr_t)s[0].code), (uint64_t)(uintptr_t)a);
	n = walk(&o, chain(&o, s, 1, objs), out, &flags);
	assert_int_equal(n, 1);
	assert_int_equal(out[0].code, (uint64_t)(uintptr_t)a);
	assert_int_equal(out[0].instr, 12);
	assert_int_equal(out[0].check, check_of(&o, 7));
	free_all(objs, 3);
	free(a);
}

/* an unreadable frame ends the walk, flagged; so does a frame that links
 * back to itself */
static void bad_reads_and_loops_are_flagged(void **state)
{
	const struct py_offsets *o = py_offsets_for_version(3, 10);
	uint8_t *objs[8], *a = code_obj(o, 1), *ts;
	struct spec s[] = { { a, 0, 0 } };
	struct py_frame out[16];
	uint32_t flags, n;

	(void)state;
	ts = chain(o, s, 1, objs);
	n = walk(o, ts, out, &flags); /* one frame, no caller: whole */
	assert_int_equal(n, 1);
	assert_int_equal(flags, 0);
	put64(objs[2], o->frame_back, 8); /* page 0: unreadable */
	n = walk(o, ts, out, &flags);
	assert_int_equal(n, 1);
	assert_int_equal(flags, STACK_BAD_READ);
	put64(objs[2], o->frame_back, (uint64_t)(uintptr_t)objs[2]); /* its own caller */
	n = walk(o, ts, out, &flags);
	assert_int_equal(n, 1); /* cut at once, like the sampler: not 16 copies */
	assert_int_equal(flags, STACK_BAD_READ);
	free_all(objs, 3);
	free(a);
}

/* a compact ASCII str object holding text, in obj */
static uint64_t put_str(uint8_t *obj, const struct py_offsets *o, const char *text)
{
	uint64_t len = strlen(text);
	uint32_t state = 1 << 2 | 1 << 5 | 1 << 6; /* 1-byte kind, compact, ascii */

	memcpy(obj + o->unicode_length, &len, sizeof(len));
	memcpy(obj + o->unicode_state, &state, sizeof(state));
	memcpy(obj + o->unicode_ascii_size, text, len + 1);
	return (uint64_t)(uintptr_t)obj;
}

/* The Thread object is the first local of threading's _bootstrap, the
 * thread's bottom frame.  A chain that comes back on itself (frames freed
 * and reused while they are read) has no bottom: it is given up at once,
 * wherever the loop starts, not after 100000 frames read as a bottom. */
static void a_thread_object_is_found_at_the_bottom_not_in_a_loop(void **state)
{
	const struct py_offsets *o = py_offsets_for_version(3, 12);
	uint8_t *objs[8], *strs[4], *code[3], *ts;
	const char *text[4] = { "work", "_bootstrap_inner", "_bootstrap", "/usr/lib/threading.py" };
	struct spec s[3];
	uint64_t self = 0x7f0000abc000ull;
	bool never = true;

	(void)state;
	for (int i = 0; i < 4; i++)
		strs[i] = calloc(1, OBJ);
	for (int i = 0; i < 3; i++) {
		code[i] = calloc(1, OBJ);
		put64(code[i], o->code_name, put_str(strs[i], o, text[i]));
		put64(code[i], o->code_filename, put_str(strs[3], o, text[3]));
		s[i] = (struct spec){ code[i], 0, 0 };
	}
	ts = chain(o, s, 3, objs); /* objs[2] leaf .. objs[4] _bootstrap */
	put64(objs[4], o->frame_localsplus, self);
	assert_int_equal(pyobj_thread_object(getpid(), o, (uint64_t)(uintptr_t)ts, &never), self);
	assert_false(never);
	/* the bottom links to the leaf, to the middle frame, to itself: no
	 * bottom, and nothing said of later walks */
	for (int to = 2; to <= 4; to++) {
		put64(objs[4], o->frame_back, (uint64_t)(uintptr_t)objs[to]);
		assert_int_equal(pyobj_thread_object(getpid(), o, (uint64_t)(uintptr_t)ts, &never), 0);
		assert_false(never);
	}
	put64(objs[4], o->frame_back, 0);
	assert_int_equal(pyobj_thread_object(getpid(), o, (uint64_t)(uintptr_t)ts, NULL), self);
	/* a bottom frame read whole that is not threading's (the main thread's
	 * <module>): none, and there never will be, so the loader stops
	 * walking to it once a second */
	put64(code[2], o->code_name, put_str(strs[2], o, "<module>"));
	assert_int_equal(pyobj_thread_object(getpid(), o, (uint64_t)(uintptr_t)ts, &never), 0);
	assert_true(never);
	/* _bootstrap of another file: the same */
	put64(code[2], o->code_name, put_str(strs[2], o, "_bootstrap"));
	put64(code[2], o->code_filename, put_str(strs[0], o, "/srv/app/boot.py"));
	assert_int_equal(pyobj_thread_object(getpid(), o, (uint64_t)(uintptr_t)ts, &never), 0);
	assert_true(never);
	/* a name that cannot be read (a code object freed while read): none
	 * now, but looked for again */
	put64(code[2], o->code_name, 0);
	assert_int_equal(pyobj_thread_object(getpid(), o, (uint64_t)(uintptr_t)ts, &never), 0);
	assert_false(never);
	free_all(objs, 5);
	free_all(strs, 4);
	free_all(code, 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_known_layout_reads_what_it_needs),
		cmocka_unit_test(instruction_offsets_per_kind),
		cmocka_unit_test(walk_310_marks_every_frame_an_entry),
		cmocka_unit_test(walk_311_uses_is_entry),
		cmocka_unit_test(walk_312_313_marks_frames_above_shims),
		cmocka_unit_test(tagged_code_references_are_untagged),
		cmocka_unit_test(bad_reads_and_loops_are_flagged),
		cmocka_unit_test(a_thread_object_is_found_at_the_bottom_not_in_a_loop),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
