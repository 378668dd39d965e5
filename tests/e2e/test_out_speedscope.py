"""speedscope output: a valid file of speedscope's format (the fields its
schema requires, indices in range), one sampled profile per thread, and, for
one recording written both ways, the same stacks with the same weights as the
folded output (--threads), frame for frame."""
import json
import os

from conftest import SUPPORTED, WORKLOADS, parse_folded, run_pyperf, supported_pythons

UNITS = {"none", "nanoseconds", "microseconds", "milliseconds", "seconds", "bytes"}


def check_schema(d):
    """The fields speedscope's file-format schema requires, and their types."""
    assert d["$schema"] == "https://www.speedscope.app/file-format-schema.json"
    frames = d["shared"]["frames"]
    assert isinstance(frames, list)
    for f in frames:
        assert isinstance(f["name"], str)
        assert set(f) <= {"name", "file", "line", "col"}, f
        assert isinstance(f.get("file", ""), str) and isinstance(f.get("line", 0), int)
    assert isinstance(d["profiles"], list)
    for p in d["profiles"]:
        assert p["type"] == "sampled" and isinstance(p["name"], str) and p["unit"] in UNITS
        assert isinstance(p["startValue"], (int, float)) and isinstance(p["endValue"], (int, float))
        assert len(p["samples"]) == len(p["weights"])
        assert all(0 <= i < len(frames) for s in p["samples"] for i in s)
        assert p["endValue"] - p["startValue"] == sum(p["weights"])
    assert 0 <= d.get("activeProfileIndex", 0) < max(1, len(d["profiles"]))


def label(f):
    """The folded label of a speedscope frame."""
    if f.get("file") == "[kernel]" or "file" not in f:
        return f["name"]
    if "line" in f:
        return f"{f['name']} ({f['file']}:{f['line']})"
    return f"{f['name']} ({f['file']})"


def record(python, tmp_path):
    folded, ss = tmp_path / "p.folded", tmp_path / "p.speedscope.json"
    r = run_pyperf(["-F", "499", "--threads", "-o", str(folded), "-o", str(ss), "--", python,
                    os.path.join(WORKLOADS, "threads.py"), "2", str(tmp_path / "t.json")])
    assert r.returncode == 0, r.stderr
    return parse_folded(folded.read_text()), json.loads(ss.read_text())


@supported_pythons()
def test_speedscope_matches_folded_per_thread(python, tmp_path):
    folded, d = record(python[0], tmp_path)
    check_schema(d)
    frames = d["shared"]["frames"]
    period = 1000000000 // 499
    want = {}
    for stack, count in folded:
        tid = stack[0].split()[1]                  # "thread TID NAME"
        want.setdefault(tid, {})
        want[tid][tuple(stack[1:])] = want[tid].get(tuple(stack[1:]), 0) + count
    got = {}
    for p in d["profiles"]:
        tid = p["name"].split(" / thread ")[1].split()[0]
        assert tid not in got, p["name"]           # one profile per thread
        got[tid] = {}
        for s, w in zip(p["samples"], p["weights"]):
            assert w % period == 0
            key = tuple(label(frames[i]) for i in s)
            got[tid][key] = got[tid].get(key, 0) + w // period
    assert got == want
    assert sum(c for _, c in folded) > 500
    names = {f["name"] for f in frames}
    assert {"py_spin", "c_work", "deflate"} <= names, names


def test_speedscope_of_an_empty_profile_is_valid(tmp_path):
    out = tmp_path / "e.speedscope.json"
    r = run_pyperf(["-d", "1", "-o", str(out), "--", "sleep", "3"])
    assert r.returncode in (0, 143, 137), r.stderr
    d = json.loads(out.read_text())
    check_schema(d)
    assert d["profiles"] == []
