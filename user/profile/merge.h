/* merge.h - one stack out of a sample's Python frames and native frames.
 *
 * Each native frame of the interpreter's eval loop (kind FN_EVAL) stands for
 * the Python frames that C call was running: from the leaf, the frames up to
 * and including the next one marked as an entry (the first frame of an eval
 * call: every frame up to 3.10; is_entry in 3.11; the frame above a C-stack
 * shim from 3.12).  Those Python frames replace it, in order; other native
 * frames stay where they are.
 *
 * When the counts cannot be matched, nothing is reordered on a guess:
 *   - the native walk stopped early (truncated or incomplete) and saw fewer
 *     eval frames than there are Python segments: the leaf-side segments are
 *     merged, a marker says native frames are missing, and the remaining
 *     Python frames follow on the root side;
 *   - any other mismatch: Python frames on the root side, the marker
 *     "[unmerged native]", then every native frame as it was. */
#ifndef PYPERF_MERGE_H
#define PYPERF_MERGE_H

#include <stdint.h>
#include "profile.h"

extern const struct func merge_mark_truncated;  /* "[native truncated]" */
extern const struct func merge_mark_incomplete; /* "[native incomplete]" */
extern const struct func merge_mark_pending;    /* "[native pending]": the table of
						   * the binary it stopped in was
						   * still being built */
extern const struct func merge_mark_unmerged;   /* "[unmerged native]" */

/* py[0..np) leaf first with entry[i] != 0 for entry frames; nat[0..nn) leaf
 * first; flags: the sample's STACK_NATIVE_* flags.  Writes the merged stack,
 * leaf first, to out (room for np + nn + 1 frames) and returns its length. */
uint32_t merge_frames(const struct pframe *py, const uint8_t *entry, uint32_t np,
		      const struct func *const *nat, uint32_t nn, uint32_t flags,
		      struct pframe *out);

#endif
