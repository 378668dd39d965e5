"""Merged stacks: native frames (unwound from CFI, no frame pointers needed)
take their place between Python frames, eval-loop frames are replaced by the
Python frames they ran, and native frames outside the loop stay put."""
import collections
import glob
import json
import os
import re
import subprocess
import time

import pytest

import conftest
from conftest import (NO_DEBUG_FILES, PENDING, STATIC, STRIPPED, SUPPORTED, WORKLOADS, all_names,
                      count_pending, func_name, is_kernel, is_native, is_python, merged_pythons,
                      names, parse_folded, pending_beyond_first_tables, pyperf_env, python_id,
                      record_workload, run_pyperf, supported_pythons)


def record(python, tmp_path, script, *args, extra=(), pyflags=(), env=None):
    stacks, _, r = record_workload(python, tmp_path, script, *args, extra=extra, pyflags=pyflags,
                                   env=env)
    return stacks, r


def binary(frame):
    """The binary of a native frame "symbol (binary)" ("" for "[unknown]")."""
    return frame[frame.rindex("(") + 1:-1] if frame.endswith(")") else ""


@merged_pythons()
def test_ctypes_callback_from_qsort_is_merged_in_order(python, tmp_path):
    """Python sort_many -> libc qsort -> ctypes callback -> Python compare;
    also with a stripped interpreter's debug files out of reach."""
    stacks, r = record(python[0], tmp_path, "qsort_cb.py", "3", env=pyperf_env(python))
    in_compare = ordered = pending = 0
    bad = []
    for frames, count in stacks:
        fn = [func_name(f) if not is_kernel(f) else f for f in frames]
        if "compare" not in names(frames):
            continue
        if "[native pending]" in frames:
            # sampled before a table was built: marked, and not about
            # order (a busy CI machine took 0.3 s to build them once)
            pending += count
            continue
        in_compare += count
        try:
            outer = fn.index("sort_many")
            sort = next(i for i, f in enumerate(frames)
                        if is_native(f) and "qsort" in func_name(f) and i > outer)
            inner = len(fn) - 1 - fn[::-1].index("compare")
        except (ValueError, StopIteration):
            bad.append((frames, count))
            continue
        if outer < sort < inner:
            ordered += count
        else:
            bad.append((frames, count))
    assert in_compare > 300, f"too few comparator samples: {in_compare}\n{r.stderr}"
    assert pending < 0.3 * (in_compare + pending), (pending, in_compare)
    bad.sort(key=lambda b: -b[1])
    assert ordered >= 0.9 * in_compare, \
        f"only {ordered} of {in_compare} comparator samples ordered; e.g. {bad[:2]}"


@supported_pythons()
def test_zlib_thread_shows_deflate_below_its_python_caller(python, tmp_path):
    truth = tmp_path / "ids.json"
    stacks, r = record(python[0], tmp_path, "threads.py", "2", str(truth))
    caller = below = 0
    for frames, count in stacks:
        py = names(frames)
        if not py or py[-1] != "c_work":
            continue
        caller += count
        last_py = max(i for i, f in enumerate(frames) if is_python(f))
        if any(is_native(f) and binary(f).startswith("libz.so") for f in frames[last_py + 1:]):
            below += count
    assert caller > 300, f"too few samples in c_work: {caller}\n{r.stderr}"
    assert below >= 0.8 * caller, f"only {below} of {caller} c_work samples show libz frames"


def root_native(frames):
    """Names of the native frames above (rootward of) the first Python frame."""
    first_py = next(i for i, f in enumerate(frames) if is_python(f))
    return [func_name(f) for f in frames[:first_py] if is_native(f)]


@supported_pythons()
def test_native_frames_below_the_outermost_python_frame(python, tmp_path):
    """A thread's stack starts in its native thread start routine (the main
    thread's start-up frames are checked on split.py, whose main thread runs)."""
    truth = tmp_path / "ids.json"
    stacks, r = record(python[0], tmp_path, "threads.py", "1.5", str(truth))
    spin_total = spin_rooted = 0
    for frames, count in stacks:
        py = names(frames)
        if "py_spin" not in py or PENDING in frames:
            continue  # start-up samples taken before the tables were built
        spin_total += count
        # thread start: libc's start_thread, then CPython's thread bootstrap
        root = root_native(frames)
        spin_rooted += count * (len(root) >= 2 and "Py_BytesMain" not in root)
    assert spin_total > 300, r.stderr
    assert spin_rooted >= 0.9 * spin_total, f"{spin_rooted} of {spin_total}"


@merged_pythons()
def test_merged_split_keeps_the_python_chain_unbroken(python, tmp_path):
    """On pure Python code the merge leaves no marker and no eval-loop frame:
    every sample of the split workload merges completely, also with a
    stripped interpreter's debug files out of reach."""
    truth = tmp_path / "truth.json"
    # 3 s at 999 Hz: ~3000 samples on a quiet machine, so a loaded one still
    # gives the 1000 asked for below
    stats = tmp_path / "stats.json"
    stacks, r = record(python[0], tmp_path, "split.py", "3", str(truth), env=pyperf_env(python),
                       extra=["--stats-json", str(stats)])
    total = sum(c for _, c in stacks)
    marked = sum(c for f, c in stacks
                 if PENDING not in f and any(x.startswith("[") for x in all_names(f)))
    pending, early, why = pending_beyond_first_tables(stacks, stats)
    assert pending <= 1.2 * early + 0.02 * total, f"{pending} of {total} pending ({why})"
    # an eval-loop frame survives only in a stack marked as not merged
    evals = [f for f, c in stacks if any("_PyEval_EvalFrameDefault" in x for x in f)
             and "[unmerged native]" not in f]
    assert total > 1000, r.stderr
    assert marked <= 0.02 * total, f"{marked} of {total} samples carry a merge marker"
    assert not evals, f"eval-loop frames must be replaced by Python frames: {evals[:1]}"
    # the interpreter's own start-up frames sit at the root, before <module>
    main = [(f, c) for f, c in stacks if names(f)[:1] == ["<module>"] and PENDING not in f]
    main_total = sum(c for _, c in main)
    rooted = sum(c for f, c in main if {"Py_BytesMain", "Py_RunMain"} & set(root_native(f)))
    unpending = total - count_pending(stacks)
    assert main_total > 0.8 * unpending, f"{main_total} of {unpending} samples under <module>"
    assert rooted >= 0.9 * main_total, f"{rooted} of {main_total} rooted in Py_BytesMain"


# stripped interpreters whose eval loop GCC split: Debian's 3.14 and 3.15
SPLIT_LOOP = [p for p in STRIPPED if p[1] >= (3, 14)][-1:]


@pytest.mark.parametrize("python", SPLIT_LOOP or [None],
                         ids=[python_id(p) + "-nodbg" for p in SPLIT_LOOP] or ["none"])
def test_the_static_build_decodes_a_stripped_split_eval_loop(python, tmp_path, monkeypatch):
    """The static build links capstone's x86 module alone
    (user/native/capstone_x86.c), and that is what finds the split part of a
    stripped interpreter's eval loop (evalparts.c): without it no sample of
    Debian's 3.14 or 3.15 merges when their -dbg files are out of reach."""
    if python is None:
        pytest.fail("no stripped 3.14+ interpreter (Debian sid's): scripts/sid-pythons")
    if not os.access(STATIC, os.X_OK):
        pytest.fail(f"no static build at {STATIC}: make static")
    monkeypatch.setattr(conftest, "PYPERF", STATIC)
    stacks, r = record(python[0], tmp_path, "split.py", "2", str(tmp_path / "truth.json"),
                       env={**os.environ, **NO_DEBUG_FILES})
    total = sum(c for _, c in stacks)
    assert total > 300, r.stderr
    # undecoded, the split part is no eval loop: the Python frames are put
    # on top of the native stack, marked
    unmerged = sum(c for f, c in stacks if "[unmerged native]" in f)
    merged = sum(c for f, c in stacks if any(n.startswith("leaf_") for n in names(f))
                 and "Py_BytesMain" in root_native(f))
    assert unmerged <= 0.02 * total, f"{unmerged} of {total} samples unmerged"
    assert merged >= 0.5 * total, f"{merged} of {total} samples of the split merged"


PERF_TRAMPOLINE = [p for p in SUPPORTED if p[1] >= (3, 12)]


@pytest.mark.parametrize("python", PERF_TRAMPOLINE, ids=[p[0] for p in PERF_TRAMPOLINE])
def test_perf_trampolines_do_not_break_the_merge(python, tmp_path):
    """python -X perf runs every Python call through a small JIT trampoline
    without CFI: frame pointers carry the unwinder across it."""
    truth, stats = tmp_path / "truth.json", tmp_path / "stats.json"
    before = set(glob.glob("/tmp/perf-*.map"))
    try:
        # 3 s: room for the 1000 leaf samples asked for below on a loaded
        # machine (as the merged-split test above); each new trampoline
        # arena is code mapped after the loader looked, pending until it
        # looks again: bounded beyond the first tables below
        stacks, r = record(python[0], tmp_path, "split.py", "3", str(truth),
                           pyflags=["-X", "perf"], extra=["--stats-json", str(stats)])
    finally:  # CPython leaves its perf map behind
        for f in set(glob.glob("/tmp/perf-*.map")) - before:
            os.unlink(f)
    chain = ["<module>", "main", "run_schedule"]
    leafs = full = 0
    for frames, count in stacks:
        py = names(frames)
        if py and py[-1].startswith("leaf_"):
            leafs += count
            full += count * (py[:-1] == chain)
    assert leafs > 1000, r.stderr
    assert full >= 0.95 * leafs, f"{full} of {leafs}"
    total = sum(c for _, c in stacks)
    marked = sum(c for f, c in stacks
                 if PENDING not in f and any(x.startswith("[") for x in all_names(f)))
    pending, early, why = pending_beyond_first_tables(stacks, stats)
    assert pending <= 1.2 * early + 0.02 * total, f"{pending} of {total} pending ({why})"
    assert marked <= 0.02 * total, f"{marked} of {total} samples carry a merge marker"
    # the trampolines are named from the perf map CPython writes
    # (a pending sample's native part stops before the trampolines)
    named = sum(c for f, c in stacks if any(x.startswith("py::leaf_") for x in all_names(f)))
    unpending = sum(c for f, c in stacks if PENDING not in f
                    and (names(f) or [""])[-1].startswith("leaf_"))
    assert named >= 0.9 * unpending, \
        f"{named} of {unpending} leaf samples (not pending) show their trampoline"


PERF_JIT = [p for p in SUPPORTED if p[1] >= (3, 13)]


@pytest.mark.parametrize("python", PERF_JIT, ids=[p[0] for p in PERF_JIT])
def test_perf_jit_trampolines_are_named_from_the_jitdump(python, tmp_path):
    """python -X perf_jit (3.13+) lists its trampolines in a jitdump file it
    maps, not in a perf map: they are named from it ("py::hot:FILE ([jit])")
    and the merge is whole."""
    before = set(glob.glob("/tmp/jit-*.dump")) | set(glob.glob("/tmp/perf-*.map"))
    stats = tmp_path / "stats.json"
    try:
        stacks, r = record(python[0], tmp_path, "perf_jit.py", "2", pyflags=["-X", "perf_jit"],
                           extra=["--stats-json", str(stats)])
        made = set(glob.glob("/tmp/jit-*.dump")) | set(glob.glob("/tmp/perf-*.map"))
    finally:  # CPython leaves its jitdump file behind
        for f in set(glob.glob("/tmp/jit-*.dump")) - before:
            os.unlink(f)
    new = made - before
    assert new and all(f.endswith(".dump") for f in new), f"no jitdump file alone: {new}"
    hot = [(f, c) for f, c in stacks if names(f)[-1:] == ["hot"]]
    total = sum(c for _, c in hot)
    assert total > 500, r.stderr
    whole = sum(c for f, c in hot if names(f) == ["<module>", "main", "hot"])
    assert whole >= 0.95 * total, f"{whole} of {total}"
    # until the first tables are built (0.5 s of the run on a loaded CI
    # machine) a sample's native part stops before the trampolines: those
    # pending samples are bounded as in the perf map case, the rest named
    pending, early, why = pending_beyond_first_tables(stacks, stats)
    assert pending <= 1.2 * early + 0.02 * sum(c for _, c in stacks), \
        f"{pending} pending ({why})"
    unpending = sum(c for f, c in hot if PENDING not in f)
    named = sum(c for f, c in hot if any(x.startswith("py::hot:") and x.endswith(" ([jit])")
                                         for x in f))
    unnamed = collections.Counter()
    for f, c in hot:
        if PENDING not in f and not any(x.startswith("py::hot:") for x in f):
            unnamed[";".join(f[-6:])] += c
    assert named >= 0.9 * unpending, \
        f"{named} of {unpending} hot samples (not pending) show its trampoline; " \
        f"others: {unnamed.most_common(3)} ({why})"
    anon = [f for f, _ in stacks if any(x.startswith("[jit] (anon") for x in f)]
    assert len(anon) <= 0.1 * len(stacks), anon[:1]


@pytest.mark.parametrize("flag,script", [("perf", "split.py"), ("perf_jit", "perf_jit.py")])
def test_jit_files_of_a_process_in_a_pid_namespace_are_found(flag, script, tmp_path):
    """A CPython in its own pid namespace (a container's) is pid 1 there and
    writes /tmp/perf-1.map or jit-1.dump: found by the pid it knows itself
    by, not the host's.  The newest interpreter: the file's name is the
    kernel's business, not the version's."""
    assert PERF_JIT, "no CPython 3.13+"
    pattern = "/tmp/perf-1.map" if flag == "perf" else "/tmp/jit-1.dump"
    if os.path.exists(pattern):
        os.unlink(pattern)
    out = tmp_path / "p.folded"
    try:
        r = run_pyperf(["-F", "999", "-o", str(out), "--", "unshare", "--pid", "--fork",
                        PERF_JIT[-1][0], "-X", flag, os.path.join(WORKLOADS, script), "2",
                        str(tmp_path / "t.json")])
        made = os.path.exists(pattern)
    finally:  # CPython leaves its file behind
        if os.path.exists(pattern):
            os.unlink(pattern)
    assert r.returncode == 0, r.stderr
    assert made, f"{pattern} was not written: not in a pid namespace?"
    stacks = parse_folded(out.read_text())
    leaf = "leaf_" if script == "split.py" else "hot"
    hot = [(f, c) for f, c in stacks if names(f)[-1:] and names(f)[-1].startswith(leaf)]
    total = sum(c for _, c in hot)
    assert total > 500, r.stderr
    # none without the namespace's pid; the share itself is the tests' above
    # (here 77 % once in 14 runs on a loaded machine, 90 % or more otherwise)
    named = sum(c for f, c in hot if any(x.startswith("py::" + leaf) for x in f))
    assert named >= 0.5 * total, f"{named} of {total} samples show their trampoline"


def test_python_only_has_no_native_frames(tmp_path):
    assert SUPPORTED, "no supported CPython"
    stacks, _ = record(SUPPORTED[-1][0], tmp_path, "qsort_cb.py", "1", extra=["--python-only"])
    assert sum(c for f, c in stacks if "compare" in names(f)) > 100
    assert not any(is_native(f) for frames, _ in stacks for f in frames)


DEBIAN_PY311 = "/usr/bin/python3.11"


def thread_of(frames):
    """The thread id of a --threads stack (its "thread TID NAME" root frame)."""
    return int(next(f for f in frames if f.startswith("thread ")).split()[1])


def test_blas_worker_thread_without_python_frames_is_sampled(tmp_path):
    """A thread that runs no Python code (OpenBLAS's worker pool) is sampled
    with its native and kernel stack under its own thread, whole through
    OpenBLAS's assembly kernels; --python-only leaves it out.  Debian's python3.11 with python3-numpy and the pthread
    OpenBLAS (scripts/setup --test-deps installs both)."""
    if not os.path.exists(DEBIAN_PY311):
        pytest.skip(f"{DEBIAN_PY311} is not installed: Debian's numpy runs under it")
    env = dict(os.environ, OPENBLAS_NUM_THREADS="2")
    ids = tmp_path / "ids.json"
    out = tmp_path / "b.folded"
    report = tmp_path / "b.txt"
    r = run_pyperf(["-F", "499", "--threads", "-o", str(out), "-o", str(report), "--",
                    DEBIAN_PY311, os.path.join(WORKLOADS, "blas_pool.py"), "3", str(ids)],
                   env=env)
    assert r.returncode == 0, r.stderr
    truth = json.loads(ids.read_text())
    by_tid, blas = {}, {}
    for frames, count in parse_folded(out.read_text()):
        tid = thread_of(frames)
        by_tid[tid] = by_tid.get(tid, 0) + count
        if any(is_native(f) and "openblas" in binary(f) for f in frames):
            blas[tid] = blas.get(tid, 0) + count
        if tid not in (truth["pid"], truth["caller"]):
            assert not any(is_python(f) for f in frames), frames
    workers = [t for t in by_tid if t not in (truth["pid"], truth["caller"])]
    assert workers, f"only the Python threads were sampled: {by_tid}"
    total = sum(by_tid.values())
    worker = max(workers, key=lambda t: by_tid[t])
    # the product is split between the caller and the worker
    assert by_tid[worker] >= 0.2 * total, (by_tid, truth)
    assert blas.get(worker, 0) >= 0.8 * by_tid[worker], (blas, by_tid)
    # OpenBLAS's GEMM kernels are assembly without CFI: their rules come from
    # their prologues (user/native/prologue.h), so stacks through them are whole,
    # and in the caller's thread they hang under the Python frame that
    # called numpy
    stacks = [(f, c) for f, c in parse_folded(out.read_text()) if PENDING not in f]
    kernel = [(f, c) for f, c in stacks if any("gemm_kernel" in x for x in f)]
    kernel_total = sum(c for _, c in kernel)
    cut = sum(c for f, c in kernel
              if any(m in x for x in f for m in ("[native incomplete]", "[native truncated]")))
    assert kernel_total >= 100, by_tid
    assert cut <= 0.05 * kernel_total, f"{cut} of {kernel_total} GEMM kernel stacks cut short"
    under = sum(c for f, c in kernel if thread_of(f) == truth["caller"] and
                any(func_name(x) == "products" for x in f))
    assert under >= 0.5 * sum(c for f, c in kernel if thread_of(f) == truth["caller"]), kernel[:3]
    # the report counts them, and they are in the profile
    m = re.search(r"samples in threads without Python frames (\d+) \((\d+) of them in the "
                  r"profile", report.read_text())
    assert m, report.read_text()[:2000]
    assert int(m.group(1)) >= int(m.group(2)) >= by_tid[worker] > 0

    out2 = tmp_path / "p.folded"
    r = run_pyperf(["-F", "499", "--threads", "--python-only", "-o", str(out2), "--",
                    DEBIAN_PY311, os.path.join(WORKLOADS, "blas_pool.py"), "2", str(ids)],
                   env=env)
    assert r.returncode == 0, r.stderr
    truth = json.loads(ids.read_text())
    tids = {thread_of(f) for f, _ in parse_folded(out2.read_text())}
    assert tids and tids <= {truth["pid"], truth["caller"]}, (tids, truth)


def test_tables_beyond_the_cap_are_reported_not_dropped(tmp_path):
    """With room for no real table (PYPERF_UNWIND_BYTES, finer than
    --unwind-mb), the tables that do not fit are counted and the native
    part of their stacks ends marked, while Python frames stay whole."""
    assert SUPPORTED, "no supported CPython"
    out, stats = tmp_path / "n.folded", tmp_path / "s.json"
    r = run_pyperf(["-F", "499", "-o", str(out), "--stats-json", str(stats), "--",
                    SUPPORTED[-1][0], os.path.join(WORKLOADS, "split.py"), "1",
                    str(tmp_path / "truth.json")],
                   env=dict(os.environ, PYPERF_UNWIND_BYTES="4096"))
    assert r.returncode == 0, r.stderr
    st = json.loads(stats.read_text())
    assert st["unwind_no_room"] >= 1 and st["unwind_peak_bytes"] <= 4096, st
    stacks = parse_folded(out.read_text())
    total = sum(c for _, c in stacks)
    marked = sum(c for f, c in stacks if "[native incomplete]" in f)
    assert total > 200 and marked >= 0.5 * total, (marked, total)
    assert any("leaf_" in x for f, _ in stacks for x in names(f))


@pytest.fixture(scope="module")
def late_attach_lib(tmp_path_factory):
    """late_attach.c built into a shared library (the C compiler the build uses)."""
    lib = tmp_path_factory.mktemp("late") / "late_attach.so"
    r = subprocess.run(["cc", "-O1", "-shared", "-fPIC", "-pthread", "-o", str(lib),
                        os.path.join(WORKLOADS, "late_attach.c")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return lib


# one interpreter per version: the thread list's layout is the version's
ONE_PER_VERSION = list({p[1]: p for p in reversed(SUPPORTED)}.values())[::-1]


@pytest.mark.parametrize("python", ONE_PER_VERSION, ids=[python_id(p) for p in ONE_PER_VERSION])
def test_native_thread_that_calls_into_python_later_is_found(python, tmp_path, late_attach_lib):
    """A thread that ran native code only for 0.4 s, then calls into Python
    (a ctypes callback, which gives it a thread state): its Python frames are
    there from then on.  The sampler looks for a native thread's state again
    when a thread state is new, not only every second (a 1 s recheck alone
    found ~38 % of this phase's samples).  One interpreter per version."""
    out, spent = tmp_path / "l.folded", tmp_path / "l.json"
    r = run_pyperf(["-F", "999", "--threads", "-o", str(out), "--", python[0],
                    os.path.join(WORKLOADS, "late_attach.py"), str(late_attach_lib), "0.4", "1.0",
                    str(spent)])
    assert r.returncode == 0, r.stderr
    truth = json.loads(spent.read_text())
    stacks = parse_folded(out.read_text())
    spin = sum(c for f, c in stacks if any(func_name(x) == "late_attach_spin" for x in f))
    work = [(f, c) for f, c in stacks if "late_python_work" in names(f)]
    found = sum(c for _, c in work)
    # the native phase is sampled too, as a thread without Python frames
    assert spin >= 0.5 * 0.4 * 999, (spin, truth)
    assert found >= 0.8 * truth["python_cpu_s"] * 999, (found, truth)
    # in the thread that ran the native phase, above the native frames of its start
    tids = {thread_of(f) for f, _ in work}
    assert len(tids) == 1, tids
    assert any(func_name(x) == "worker" for f, _ in work for x in f), work[:2]


@pytest.fixture(scope="module")
def handjit_lib(tmp_path_factory):
    """handjit.c built into a shared library, its callers with frame pointers."""
    lib = tmp_path_factory.mktemp("handjit") / "handjit.so"
    r = subprocess.run(["cc", "-O1", "-fno-omit-frame-pointer", "-shared", "-fPIC", "-o",
                        str(lib), os.path.join(WORKLOADS, "handjit.c")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return lib


def test_jit_code_is_left_by_frame_pointer_or_stack_scan(tmp_path, handjit_lib):
    """Code copied into anonymous executable memory has no CFI.  A kernel
    that keeps a frame pointer is left by it; one that uses rbp for data
    (as oneDNN's are) is left by a scan of the stack for its return address,
    and the caller found so is marked [stack scan].  Either way the stack
    goes on to its Python callers, complete, and the JIT frame is named
    "[jit] (anon 0x...)".  One interpreter: what is checked is native."""
    stacks, r = record(SUPPORTED[-1][0], tmp_path, "handjit.py", str(handjit_lib), "1.5")
    seen = {"with_fp": 0, "without_fp": 0}
    bad = []
    for frames, count in stacks:
        fn = all_names(frames)
        if not fn or not fn[-1] == "[jit]" or PENDING in frames:
            continue
        py = names(frames)
        want = ["spin", "[jit]"] if "with_fp" in py else ["spin", "[stack scan]", "[jit]"]
        if fn[-len(want):] == want and py[-1] in seen and not any(
                m in frames for m in ("[native incomplete]", "[unmerged native]")):
            seen[py[-1]] += count
        else:
            bad.append((frames, count))
    assert seen["with_fp"] >= 0.5 * 1.5 * 999 and seen["without_fp"] >= 0.5 * 1.5 * 999, \
        (seen, bad[:2], r.stderr)
    assert sum(c for _, c in bad) <= 0.02 * sum(seen.values()), bad[:2]
    assert all(f.startswith("[jit] (anon 0x") for fs, _ in stacks for f in fs
               if f.startswith("[jit]"))


def test_dump_leaves_jit_code_by_the_same_scan(handjit_lib):
    """dump --native walks in user space with the sampler's rules: the
    kernel that uses rbp for data is left by a scan of the stack, its
    caller marked [stack scan], and the stack goes on to without_fp()."""
    p = subprocess.Popen([SUPPORTED[-1][0], os.path.join(WORKLOADS, "handjit.py"),
                          str(handjit_lib), "60", "without_fp"])
    try:
        time.sleep(1)
        seen = []
        for _ in range(20):
            r = run_pyperf(["dump", "-p", str(p.pid), "--native"], timeout=60)
            assert r.returncode == 0, r.stderr
            block = r.stdout.split(f'Thread {p.pid} "', 1)[-1].split("\n\n")[0]
            main = [x.strip() for x in block.splitlines() if x.startswith("    ")]
            seen.append(main)
            if main and main[0].startswith("[jit] (anon 0x"):
                break
        jit = [m for m in seen if m and m[0].startswith("[jit] (anon 0x")]
        assert jit, seen[-1]
        fn = [x.split(" (")[0] for x in jit[0]]
        assert fn[:2] == ["[jit]", "[stack scan]"], jit[0]
        assert fn.index("without_fp") > 1 and "<module>" in fn, jit[0]
        assert not any(x.startswith(("[native", "[unmerged")) for x in fn), jit[0]
    finally:
        p.kill()
        p.wait()


def test_numba_kernels_are_named_under_their_caller(tmp_path):
    """numba compiles with LLVM's MCJIT, which registers each object it
    loads with the GDB JIT interface: the kernel's frames are named from
    that list ("__main__::kernel[abi:v1]...(Array<double, 1, C, ...>)
    ([jit])"), under drive(), the stack complete.  Debian's numba, built for
    its python3.11 (scripts/setup --test-deps installs it)."""
    py = "/usr/bin/python3.11"
    r = subprocess.run([py, "-c", "import numba"], capture_output=True, text=True)
    if r.returncode:
        pytest.fail("python3-numba is missing: scripts/setup --test-deps installs it\n" + r.stderr)
    stacks, r = record(py, tmp_path, "numba_job.py", "2")
    drive = named = 0
    bad = []
    for frames, count in stacks:
        if "drive" not in names(frames) or PENDING in frames:
            continue
        drive += count
        fn = all_names(frames)
        k = [i for i, f in enumerate(frames) if f.endswith(" ([jit])") and "kernel" in f]
        if k and fn.index("drive") < k[0] and "[native incomplete]" not in frames:
            named += count
        else:
            bad.append((frames, count))
    assert drive > 1000, r.stderr
    bad.sort(key=lambda b: -b[1])
    assert named >= 0.8 * drive, (named, drive, bad[:2])


def test_stack_scan_is_counted_and_can_be_turned_off(tmp_path, handjit_lib):
    """The samples whose walk needed the scan are counted
    (stat_native_scanned); PYPERF_STACK_SCAN=0 turns it off (the kernel
    without a frame pointer then ends its stacks, marked) and a value other
    than 0 or 1 is refused with one line."""
    script = os.path.join(WORKLOADS, "handjit.py")
    runs = {}
    for scan in ("1", "0"):
        out, stats = tmp_path / f"h{scan}.folded", tmp_path / f"h{scan}.json"
        r = run_pyperf(["-F", "999", "-o", str(out), "--stats-json", str(stats), "--",
                        SUPPORTED[-1][0], script, str(handjit_lib), "1"],
                       env=dict(os.environ, PYPERF_STACK_SCAN=scan))
        assert r.returncode == 0, r.stderr
        stacks = parse_folded(out.read_text())
        nofp = [(f, c) for f, c in stacks if "without_fp" in names(f) and PENDING not in f]
        runs[scan] = (json.loads(stats.read_text()), nofp)
    st, nofp = runs["1"]
    total = sum(c for _, c in nofp)
    assert total > 500 and 0.8 * total <= st["stat_native_scanned"] <= st["stat_samples"], \
        (total, st["stat_native_scanned"])
    # the scans' own time is counted too: some, and less than 100 us a scan
    assert 0 < st["stat_scan_ns"] < 100000 * st["stat_native_scanned"], st["stat_scan_ns"]
    st, nofp = runs["0"]
    assert st["stat_native_scanned"] == 0 and st["stat_scan_ns"] == 0
    cut = sum(c for f, c in nofp if "[native incomplete]" in f and "[stack scan]" not in f)
    assert cut >= 0.9 * sum(c for _, c in nofp) > 500, nofp[:1]
    r = run_pyperf(["-d", "1"], env=dict(os.environ, PYPERF_STACK_SCAN="yes"))
    assert r.returncode == 2 and "PYPERF_STACK_SCAN" in r.stderr, r.stderr
