/* pyasync.h - asyncio tasks of a CPython 3.12+ process, read from outside
 * (--async, dump --async).
 *
 * Where the layout comes from:
 *   - 3.14 and later publish it: the _asyncio module (a shared library in
 *     3.14, built into the interpreter in 3.15) carries a section
 *     `.AsyncioDebug` with the offsets of TaskObj's fields and of the
 *     running task in the thread state, which remote debuggers read.
 *   - 3.12 and 3.13 publish nothing: the TaskObj and module-state layouts
 *     come from the _asyncio module's DWARF (pyenv and other source builds
 *     keep it; Debian's stripped module does not: async stacks are then
 *     unavailable, said once per process).  The running tasks are in the
 *     module state's current_tasks dict, found through sys.modules.
 *
 * Who awaits a task: 3.14+ record it in the awaited task (awaited_by, one
 * task or a set of them).  3.12/3.13 do not; a task that awaits another
 * left its wakeup method among the awaited one's done callbacks, and
 * asyncio.gather's children call back a closure that holds the gathering
 * future, whose callbacks hold the wakeup of the task awaiting the gather.
 * Those two cover `await task` and gather (and what builds on them); a
 * TaskGroup's children on 3.12/3.13 show no awaiting task. */
#ifndef PYPERF_PYASYNC_H
#define PYPERF_PYASYNC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pyperf.h"
#include "pyproc.h"

#define PYASYNC_MAX_CHAIN 32        /* awaiting tasks followed from one task */
#define PYASYNC_NAME_MAX 128        /* bytes of a task name kept */

struct pyasync {
	struct py_async bpf;         /* what the sampler reads (task_coro 0: none) */
	struct py_offsets off;       /* the process's offsets */
	uint64_t runtime_addr;       /* its &_PyRuntime */
	int minor;
	bool published;              /* layout from .AsyncioDebug (3.14+) */
	/* TaskObj and FutureObj fields, -1: absent */
	long task_coro, task_name, fut_state, callback0, callbacks;
	long awaited_by, awaited_by_is_set, is_task;   /* 3.14+ */
	long task_node;                                /* 3.14+: all tasks' list link */
	long tstate_tasks_head;                        /* 3.14+: per thread */
	long interp_tasks_head;                        /* 3.14+: of exited threads */
	/* 3.12/3.13 */
	uint64_t state;              /* the _asyncio module's state */
	long st_scheduled, st_eager; /* its scheduled_tasks (WeakSet), eager_tasks (set) */
	long func_closure;           /* PyFunctionObject.func_closure */
	uint64_t wakeup_def;         /* &TaskWakeupDef: a task's wakeup callback */
};

/* Find asyncio in process py: 0 with *a filled; 1 when the process has not
 * imported asyncio (yet); -1 with a one-line message when its tasks cannot
 * be read (no layout for this build). */
int pyasync_setup(const struct pyproc *py, struct pyasync *a, char *err, size_t errlen);

/* A task's name as asyncio shows it ("Task-3" for an unnamed one) into
 * out; false when the task cannot be read. */
bool pyasync_task_name(int pid, const struct pyasync *a, uint64_t task, char *out, size_t len);

/* The task awaiting `task`, or 0 (none, or it cannot be told). */
uint64_t pyasync_awaiter(int pid, const struct pyasync *a, uint64_t task);

/* Every task of the process not yet finished, up to max, into tasks;
 * returns how many (-1: cannot be listed). */
int pyasync_all_tasks(int pid, const struct pyasync *a, uint64_t *tasks, int max);

/* A task's state: "pending", "cancelled", "finished" or "?". */
const char *pyasync_task_state(int pid, const struct pyasync *a, uint64_t task);

/* Where a pending task that is not running waits: the frames of its
 * coroutine and of the coroutines it awaits in turn (each suspended on the
 * one on top of its value stack), innermost first as the sampler gives
 * frames, at most max, into out.  Returns how many; 0 when the task runs
 * now (its coroutine's frame is on a thread's frame chain), is done, or
 * cannot be read. */
int pyasync_task_waits(int pid, const struct pyasync *a, uint64_t task, struct py_frame *out,
		       int max);

/* The coroutine object a task runs, 0 if none. */
uint64_t pyasync_task_coro(int pid, const struct pyasync *a, uint64_t task);

#endif
