/* fuzz_sampler_stack.c - a stack record off the BPF ring buffer, unpacked
 * into a struct ev_stack.  The input is the record.  The kernel writes
 * these, but a record the loader trusts blindly would turn a BPF bug into
 * a loader overflow: its counts must agree with its length. */
#include "fuzz.h"
#include "sampler.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct ev_stack ev;

	if (sampler_unpack_stack(data, size, &ev) == 0) {
		FUZZ_CHECK(ev.nframes <= PYPERF_MAX_FRAMES && ev.nnative <= PYPERF_MAX_NATIVE &&
			   ev.nkernel <= PYPERF_KSTACK_DEPTH);
		FUZZ_CHECK(size == EV_WIRE_HEAD + ev.nframes * sizeof(struct py_frame) +
					   ev.nnative * 8ull + ev.nkernel * 8ull);
	}
	return 0;
}
