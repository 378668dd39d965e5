"""Subinterpreters (3.12+): a thread that runs an interpreter of its own has a
thread state in each interpreter it went through.  subinterpreters.py runs
crunch_sub() in two subinterpreters, each from a thread of the main one,
while the main thread runs crunch_main(), and measures each part's own CPU
time.  Every interpreter's threads are walked: a subinterpreter's samples
carry their thread's outer frames (in_subinterpreter, threading's), then
the native frames between (the interpreters module's call), then an
<interpreter N> mark, then the subinterpreter's frames, merged in call
order; with --python-only the same without the native frames; dump lists
both interpreters' frames.  Every interpreter 3.12+ present (the thread
states and interpreters lists are read with each version's layout)."""
import json
import os
import re
import subprocess

import pytest

from conftest import (NO_DEBUG_FILES, STRIPPED, SUPPORTED, WORKLOADS, names, parse_folded,
                      pyperf_env, python_id, run_pyperf)

SUBINTERPRETERS = [p for p in SUPPORTED if p[1] >= (3, 12)]
SECONDS = "3"


def subinterpreter_pythons():
    if not SUBINTERPRETERS:
        return pytest.mark.skip(reason="no CPython 3.12+ present: subinterpreters need one")
    return pytest.mark.parametrize("python", SUBINTERPRETERS,
                                   ids=[python_id(p) for p in SUBINTERPRETERS])


def merged_subinterpreter_pythons():
    """as subinterpreter_pythons, and each stripped one again without its
    debug files (merged_pythons' -nodbg)"""
    params = [pytest.param(p, id=python_id(p)) for p in SUBINTERPRETERS]
    params += [pytest.param((p[0], p[1], NO_DEBUG_FILES), id=python_id(p) + "-nodbg")
               for p in STRIPPED if p[1] >= (3, 12)]
    if not params:
        return pytest.mark.skip(reason="no CPython 3.12+ present: subinterpreters need one")
    return pytest.mark.parametrize("python", params)


def record(python, tmp_path, extra=(), env=None):
    folded, truth = tmp_path / "p.folded", tmp_path / "truth.json"
    r = run_pyperf(["-F", "199", "-o", str(folded), *extra, "--", python,
                    os.path.join(WORKLOADS, "subinterpreters.py"), SECONDS, str(truth)],
                   env=env)
    assert r.returncode == 0, r.stderr
    return parse_folded(folded.read_text()), json.loads(truth.read_text())


def check_sub_stack(frames, ids):
    """A subinterpreter's sample: the thread's outer frames, then the mark
    of one of the workload's interpreters, then the subinterpreter's own,
    in that order (root first); the name of what is wrong, or None."""
    fn = names(frames)
    marks = [f for f in fn if f.startswith("<interpreter ")]
    if "[unmerged native]" in frames:
        return "unmerged"
    if len(marks) != 1 or int(marks[0][13:-1]) not in ids:
        return "mark"
    at = fn.index(marks[0])
    if "in_subinterpreter" not in fn[:at] or "crunch_sub" not in fn[at:]:
        return "order"
    return None


def native_between(frames):
    """native frames between the outer interpreter's last Python frame and
    the mark (root first)"""
    mark = next(i for i, f in enumerate(frames) if f.startswith("<interpreter "))
    last_py = max(i for i, f in enumerate(frames[:mark]) if re.search(r"\.py:\d+\)$", f))
    return any(not re.search(r"\.py:\d+\)$", f) and not f.endswith("_[k]")
               for f in frames[last_py + 1:mark])


@merged_subinterpreter_pythons()
def test_subinterpreters_are_walked_and_merged_under_their_thread(python, tmp_path):
    stacks, truth = record(python[0], tmp_path, extra=["--threads"], env=pyperf_env(python))
    sub = [(f, c) for f, c in stacks if "crunch_sub" in names(f)]
    # the thread's Python name, from its outermost interpreter's state
    threads = {re.sub(r"^thread \d+ ", "", f[0]) for f, _ in sub}
    assert threads == {"sub0", "sub1"}, threads
    main = sum(c for f, c in stacks if "crunch_main" in names(f))
    total_sub = sum(c for _, c in sub)
    assert total_sub and main, stacks[:5]
    # each part's share as the workload's own clock says, within 3 points
    want = sum(truth["subs"]) / (sum(truth["subs"]) + truth["main"])
    got = total_sub / (total_sub + main)
    assert abs(got - want) < 0.03, (got, want, truth)
    wrong = {}
    for f, c in sub:
        why = check_sub_stack(f, truth["ids"])
        if why:
            wrong[why] = wrong.get(why, 0) + c
    assert sum(wrong.values()) <= 0.05 * total_sub, (wrong, total_sub,
                                                     [f for f, _ in sub if check_sub_stack(f, truth["ids"])][:2])
    # the native frames between the two interpreters' are there, merged:
    # the interpreters module's call (an extension module, or built into a
    # stripped interpreter and shown as its address), in the samples whose
    # native part is whole (not taken before its tables were built)
    whole = [(f, c) for f, c in sub if not check_sub_stack(f, truth["ids"]) and
             not any(m in f for m in ("[native pending]", "[native incomplete]"))]
    called = sum(c for f, c in whole if native_between(f))
    assert whole and called >= 0.9 * sum(c for _, c in whole), \
        [f for f, _ in whole if not native_between(f)][:2]


@subinterpreter_pythons()
def test_python_only_keeps_both_interpreters_frames_in_order(python, tmp_path):
    stacks, truth = record(python[0], tmp_path, extra=["--python-only"])
    sub = [(f, c) for f, c in stacks if "crunch_sub" in names(f)]
    total = sum(c for _, c in sub)
    assert total, stacks[:5]
    bad = sum(c for f, c in sub if check_sub_stack(f, truth["ids"]))
    assert bad <= 0.05 * total, (bad, total, sub[:2])


@subinterpreter_pythons()
def test_gil_keeps_whoever_holds_their_own_interpreters_gil(python, tmp_path):
    """--gil keeps a sample of a thread that holds the GIL of the
    interpreter it runs in.  Each subinterpreter here has a GIL of its own
    (every version's API makes them so by default), so the main thread and
    both subinterpreters' threads all run at once, each holding its GIL:
    --gil keeps each part's share of the workload's own clock, and both
    subinterpreters.  The check used to read the GIL of the newest
    interpreter for every thread, and kept that interpreter's samples alone
    (the main thread's none)."""
    stacks, truth = record(python[0], tmp_path, extra=["--gil"])
    main = sum(c for f, c in stacks if "crunch_main" in names(f))
    per_sub = {}
    for f, c in stacks:
        if "crunch_sub" in names(f):
            for m in (x for x in names(f) if x.startswith("<interpreter ")):
                per_sub[int(m[13:-1])] = per_sub.get(int(m[13:-1]), 0) + c
    assert set(per_sub) == set(truth["ids"]), (per_sub, truth["ids"])
    total_sub = sum(per_sub.values())
    want = sum(truth["subs"]) / (sum(truth["subs"]) + truth["main"])
    got = total_sub / (total_sub + main)
    # 3 standard errors of the sample count, and 4 points for the clock
    bound = 3 * (want * (1 - want) / (total_sub + main)) ** 0.5 + 0.04
    assert abs(got - want) < bound, (got, want, main, per_sub, truth)


@subinterpreter_pythons()
def test_dump_lists_both_interpreters_frames(python, tmp_path):
    """dump --json from the workload's start until both threads run their
    subinterpreters (a dump that found no thread to list, as while an
    interpreter is being made, crashed once: every dump must succeed)"""
    truth = tmp_path / "truth.json"
    p = subprocess.Popen([python[0], os.path.join(WORKLOADS, "subinterpreters.py"), "20",
                          str(truth)])
    try:
        # the threads are in their subinterpreters once crunch_sub runs
        for _ in range(100):
            r = run_pyperf(["dump", "--json", "-p", str(p.pid)], timeout=60)
            assert r.returncode == 0, r.stderr
            threads = json.loads(r.stdout)
            subs = [[f["name"] for f in th["frames"]] for th in threads
                    if any(f["name"] == "crunch_sub" for f in th["frames"])]
            if len(subs) == 2:
                break
        text = run_pyperf(["dump", "-p", str(p.pid)], timeout=60)
    finally:
        p.kill()
        p.wait()
    assert len(subs) == 2, r.stdout
    for fn in subs:
        marks = [f for f in fn if f.startswith("<interpreter ")]
        assert len(marks) == 1, fn
        at = fn.index(marks[0])  # leaf first: the subinterpreter's frames, then the outer ones
        assert "crunch_sub" in fn[:at] and "in_subinterpreter" in fn[at:], fn
        assert fn[-1] == "Thread._bootstrap", fn
    assert re.search(r"^    <interpreter \d+>$", text.stdout, re.M), text.stdout
