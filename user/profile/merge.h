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
extern const struct func merge_mark_gil_wait;   /* "[GIL wait]" */
extern const struct func merge_mark_awaiting;   /* "[awaiting]": where an asyncio task waits */
extern const struct func merge_mark_scanned;    /* "[stack scan]": the frame below it
						 * (its caller) was found by scanning the
						 * stack from code without CFI */

/* py[0..np) leaf first with entry[i] != 0 for entry frames; nat[0..nn) leaf
 * first; flags: the sample's STACK_NATIVE_* flags.  Writes the merged stack,
 * leaf first, to out (room for np + nn + 1 frames) and returns its length. */
uint32_t merge_frames(const struct pframe *py, const uint8_t *entry, uint32_t np,
		      const struct func *const *nat, uint32_t nn, uint32_t flags,
		      struct pframe *out);

/* A merged stack s[0..n) (leaf first, room for n + 1) that runs CPython's
 * GIL hand-over (take_gil, drop_gil) gets a "[GIL wait]" frame just leaf
 * side of the Python frame that waited (or of the hand-over's caller in a
 * thread without Python frames), so GIL contention is one frame in a flame
 * graph.  Returns the new length. */
uint32_t merge_mark_gil(struct pframe *s, uint32_t n);

extern const struct func merge_mark_in_gc;        /* "<GC>": the cyclic garbage collector */

/* A stack s[0..n) (leaf first, room for n + 1) taken while the thread ran the
 * cyclic garbage collector (STACK_GC) gets a "<GC>" frame just leaf side of
 * its leaf Python frame, the one whose allocation or eval-breaker check set
 * the collection off: the collector's native frames, when there are any,
 * are its callees.  Without a Python frame it is the leaf.  Returns the new
 * length. */
uint32_t merge_mark_gc(struct pframe *s, uint32_t n);

#endif
