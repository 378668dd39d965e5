"""<GC> frames: samples taken while the cyclic garbage collector runs carry a
"<GC>" frame just leaf side of the Python frame that set it off, read in BPF
from the interpreter's own `collecting` flag (the version table, or
_Py_DebugOffsets on 3.13+), so they need no debug symbols and show with
--python-only as in merged stacks.  Ground truth: the workload times its
collections with gc.callbacks."""
import json
import os
import subprocess
import time

import pytest

from conftest import (SUPPORTED, WORKLOADS, func_name, is_python, merged_pythons, pyperf_env,
                      python_id, record_workload, run_pyperf)


def gc_share(stacks):
    """the share of churn()'s samples that carry <GC>, and one such stack"""
    total = in_gc = 0
    example = None
    for frames, count in stacks:
        if "churn" not in map(func_name, frames):
            continue
        total += count
        if "<GC>" in frames:
            in_gc += count
            example = example or frames
    return in_gc / max(1, total), total, example


@merged_pythons()
def test_gc_frames_match_the_collectors_own_clock(python, tmp_path):
    """within 5 points of gc.callbacks' measure, with --python-only and
    merged, on every interpreter (the stripped ones also without their
    debug files): the flag is read from memory, not found by symbol.  The
    workload runs 1.75 s of its own CPU time, however busy the machine, so
    ~1700 samples at 999 Hz: a 30 % share's standard error is then 1.1
    points, and the 5-point bound 4.5 of them (CI once saw 5.2 points off
    at ~1000 samples)."""
    for mode in (["--python-only"], []):
        truth_file = tmp_path / "gc.json"
        stacks, _, r = record_workload(python[0], tmp_path, "gc_cycles.py", "1.75",
                                       str(truth_file), hz=999, extra=mode,
                                       env=pyperf_env(python))
        truth = json.loads(truth_file.read_text())
        want = truth["gc_s"] / truth["churn_s"]
        share, total, example = gc_share(stacks)
        assert total >= 300, (mode, total, r.stderr)
        assert abs(share - want) <= 0.05, (mode, share, want, total, truth)
        # the frame sits right leaf side of a Python frame of the workload
        i = example.index("<GC>")
        assert is_python(example[i - 1]), (mode, example)
        if mode:
            assert i == len(example) - 1, example  # Python frames only: the leaf


def test_gc_frames_are_absent_when_the_collector_is_off(tmp_path):
    """gc.disable() and no cycles: the same churn, no collection, no <GC>"""
    stacks, _, r = record_workload(SUPPORTED[-1][0], tmp_path, "gc_cycles.py", "1",
                                   str(tmp_path / "gc.json"), "acyclic", hz=499)
    truth = json.loads((tmp_path / "gc.json").read_text())
    assert truth["collections"] == {}, truth
    share, total, _ = gc_share(stacks)
    assert total >= 100 and share == 0, (share, total, r.stderr)


# one interpreter per place the flag is found: the runtime (3.8), the
# version table (3.12), _Py_DebugOffsets (the newest)
DUMP_PYTHONS = [p for p in SUPPORTED if p[1] in ((3, 8), (3, 12), SUPPORTED[-1][1])]


@pytest.mark.parametrize("python", DUMP_PYTHONS, ids=[python_id(p) for p in DUMP_PYTHONS])
def test_dump_marks_a_collection_in_progress(python, tmp_path):
    """dump stops the process once: while the workload spends ~2/3 of its
    time collecting (more on some versions), at least 2 of 16 dumps find it
    collecting and show <GC> just leaf side of its Python frames; with the
    collector off, none does"""
    for args, lo, hi in (([], 2, 16), (["acyclic"], 0, 0)):
        p = subprocess.Popen([python[0], os.path.join(WORKLOADS, "gc_cycles.py"), "30",
                              str(tmp_path / "gc.json")] + args)
        try:
            time.sleep(1.5)  # its 400,000 live lists made, collecting
            marked = 0
            for _ in range(16):
                r = run_pyperf(["dump", "-p", str(p.pid)], timeout=60)
                assert r.returncode == 0, r.stderr
                lines = [x.strip() for x in r.stdout.splitlines()]
                if "<GC>" in lines:
                    i = lines.index("<GC>")
                    assert is_python(lines[i + 1]), r.stdout  # leaf first: its caller below
                    marked += 1
                time.sleep(0.05)
            assert lo <= marked <= hi, (args, marked)
        finally:
            p.kill()
            p.wait()
