/* debug_offsets_check.c - parse a _Py_DebugOffsets block from a file with
 * user/python/py_debug_offsets.c and compare the result with the generated table
 * entry of the version it names (user/python/py_offsets_table.c).
 *
 * The file is what tests/unit/debug_offsets_image.py writes: the block of a
 * live interpreter's _PyRuntime or the one compiled from its headers.  Prints
 * "ok 3.X" and exits 0 when the two agree field for field; prints the parser's
 * message or the first differing field and exits 1 otherwise; 2 on bad use.
 *
 * Build: see the Makefile (build/tests/debug_offsets_check). */
#include <stdio.h>
#include <string.h>

#include "pyperf.h"
#include "py_debug_offsets.h"
#include "py_offsets_table.h"

int main(int argc, char **argv)
{
	unsigned char buf[PY_DEBUG_OFFSETS_READ];
	struct py_offsets got;
	const struct py_offsets *want;
	uint64_t hex = 0;
	char err[256];
	size_t len;
	FILE *f;
	int minor;

	if (argc != 2) {
		fprintf(stderr, "usage: debug_offsets_check FILE\n");
		return 2;
	}
	f = fopen(argv[1], "rb");
	if (!f) {
		perror(argv[1]);
		return 2;
	}
	len = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	if (py_debug_offsets_parse(buf, len, &got, &hex, err, sizeof(err))) {
		printf("refused: %s\n", err);
		return 1;
	}
	minor = (int)((hex >> 16) & 0xff);
	want = py_offsets_for_version(3, minor);
	if (!want) {
		printf("no table entry for 3.%d\n", minor);
		return 1;
	}
#define F(x)                                                                             \
	if (got.x != want->x) {                                                          \
		printf("3.%d: %s = %u, the table says %u\n", minor, #x, (unsigned)got.x,   \
		       (unsigned)want->x);                                               \
		return 1;                                                                \
	}
	F(runtime_interp_head) F(interp_threads_head) F(tstate_next) F(tstate_thread_id)
	F(tstate_frame) F(cframe_current_frame) F(frame_back) F(frame_code) F(frame_instr)
	F(frame_owner) F(frame_is_entry) F(instr_kind) F(owner_shim) F(code_firstlineno)
	F(code_adaptive) F(code_filename) F(code_name) F(code_qualname) F(code_linetable)
	F(linetable_kind) F(code_tag_bits) F(unicode_state) F(unicode_length)
	F(unicode_ascii_size) F(unicode_compact_size) F(bytes_size) F(bytes_sval)
	F(interp_modules) F(gen_iframe) F(frame_localsplus) F(frame_stack) F(stack_kind)
	F(gc_in) F(gc_collecting)
	F(interp_next) F(interp_id) F(tstate_status)
#undef F
	if (memcmp(&got, want, sizeof(got))) {
		printf("3.%d: the structs differ beyond the named fields\n", minor);
		return 1;
	}
	printf("ok 3.%d\n", minor);
	return 0;
}
