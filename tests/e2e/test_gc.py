"""<GC> frames: samples taken while the cyclic garbage collector runs carry a
"<GC>" frame just leaf side of the Python frame that set it off, read in BPF
from the interpreter's own `collecting` flag (the version table, or
_Py_DebugOffsets on 3.13+), so they need no debug symbols and show with
--python-only as in merged stacks.  Ground truth: the workload times its
collections with gc.callbacks."""
import json

from conftest import SUPPORTED, func_name, is_python, merged_pythons, pyperf_env, record_workload


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
    debug files): the flag is read from memory, not found by symbol"""
    for mode in (["--python-only"], []):
        truth_file = tmp_path / "gc.json"
        stacks, _, r = record_workload(python[0], tmp_path, "gc_cycles.py", "2",
                                       str(truth_file), hz=499, extra=mode,
                                       env=pyperf_env(python))
        truth = json.loads(truth_file.read_text())
        want = truth["gc_s"] / truth["churn_s"]
        share, total, example = gc_share(stacks)
        assert total >= 300, (mode, total, r.stderr)
        assert abs(share - want) <= 0.05, (mode, share, want, truth)
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
