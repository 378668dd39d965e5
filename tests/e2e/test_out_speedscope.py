"""speedscope output.  One recording of the threads workload is written both
as folded stacks (--threads) and as speedscope JSON (-o twice); the JSON must
be a valid file of speedscope's format (the fields its schema requires, of
the right types, frame indices in range) and hold what the folded output
holds: the same total, one profile per thread of the folded output, the same
leaf-function shares and Python lines, and the same stacks frame for frame.
Without lines, Python frames carry their function's first line; an empty
recording is still a valid file."""
import ast
import json
import os

import pytest

from conftest import (SUPPORTED, WORKLOADS, FRAME_RE, is_python, python_id, record_workload,
                      run_pyperf)

FREQ = 499
PERIOD = 1000000000 // FREQ                      # ns per sample, as the writer rounds it
SCHEMA = "https://www.speedscope.app/file-format-schema.json"
UNITS = {"none", "nanoseconds", "microseconds", "milliseconds", "seconds", "bytes"}
THREADS_PY = os.path.join(WORKLOADS, "threads.py")


def is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def is_num(v):
    return (is_int(v) or isinstance(v, float)) and not isinstance(v, bool)


def check_schema(d):
    """The schema's required fields (FileFormat.File, Frame, SampledProfile in
    speedscope's src/lib/file-format-spec.ts) and the types of the optional ones."""
    assert d["$schema"] == SCHEMA
    frames = d["shared"]["frames"]
    assert isinstance(frames, list)
    for f in frames:
        assert isinstance(f["name"], str), f
        assert isinstance(f.get("file", ""), str), f
        assert is_num(f.get("line", 0)) and is_num(f.get("col", 0)), f
    assert isinstance(d["profiles"], list)
    for p in d["profiles"]:
        assert p["type"] == "sampled", p["type"]
        assert isinstance(p["name"], str) and p["unit"] in UNITS
        assert is_num(p["startValue"]) and is_num(p["endValue"])
        assert isinstance(p["samples"], list) and isinstance(p["weights"], list)
        assert len(p["samples"]) == len(p["weights"]), p["name"]
        for s in p["samples"]:
            assert isinstance(s, list) and all(is_int(i) and 0 <= i < len(frames) for i in s), s
        assert all(is_num(w) and w >= 0 for w in p["weights"])
        # speedscope's width is endValue - startValue: all the weight fits
        assert p["endValue"] - p["startValue"] == sum(p["weights"]), p["name"]
    assert isinstance(d.get("name", ""), str) and isinstance(d.get("exporter", ""), str)
    active = d.get("activeProfileIndex", 0)
    assert is_int(active) and (not d["profiles"] or 0 <= active < len(d["profiles"]))


def clean(s):
    """A name as folded output spells it (';' and newlines replaced)."""
    return s.replace(";", ":").replace("\n", " ").replace("\r", " ")


def label(f):
    """The folded label of a speedscope frame."""
    if "file" not in f or f["file"] == "[kernel]":
        return clean(f["name"])
    if "line" in f:
        return f"{clean(f['name'])} ({clean(f['file'])}:{f['line']})"
    return f"{clean(f['name'])} ({clean(f['file'])})"


def thread_of(profile):
    """(tid, thread name) from "PID COMMAND / thread TID NAME"."""
    tid, _, name = profile["name"].rpartition(" / thread ")[2].partition(" ")
    return int(tid), name


def ss_stacks(d):
    """{(tid, name): {folded labels root first: count}} from speedscope."""
    frames, out = d["shared"]["frames"], {}
    for p in d["profiles"]:
        assert p["unit"] == "nanoseconds"
        t = out.setdefault(thread_of(p), {})
        for s, w in zip(p["samples"], p["weights"]):
            assert w % PERIOD == 0, (w, PERIOD)
            key = tuple(label(frames[i]) for i in s)
            t[key] = t.get(key, 0) + w // PERIOD
    return out


def folded_stacks(stacks):
    """The same from folded --threads output ("thread TID NAME" root frames)."""
    out = {}
    for frames, count in stacks:
        assert frames[0].startswith("thread "), frames[0]
        tid, _, name = frames[0][len("thread "):].partition(" ")
        t = out.setdefault((int(tid), name), {})
        t[tuple(frames[1:])] = t.get(tuple(frames[1:]), 0) + count
    return out


@pytest.fixture(scope="module", params=SUPPORTED, ids=[python_id(p) for p in SUPPORTED])
def recording(request, tmp_path_factory):
    """(folded stacks, speedscope dict, thread ids) of one recording."""
    tmp = tmp_path_factory.mktemp("speedscope")
    ids = tmp / "ids.json"
    stacks, (ss,), r = record_workload(request.param[0], tmp, "threads.py", "1.5", str(ids),
                                       hz=FREQ, also=[".speedscope.json"], extra=["--threads"])
    # strict UTF-8, and json's default strictness: no raw control characters
    d = json.loads(ss.read_bytes().decode("utf-8"))
    assert sum(c for _, c in stacks) > 300, r.stderr
    return stacks, d, json.loads(ids.read_text())


def test_file_is_valid_per_schema(recording):
    _, d, _ = recording
    check_schema(d)
    assert d["profiles"] and d["exporter"].startswith("pyperf-bpf ")
    assert "threads.py" in d["name"]


def test_total_weight_is_folded_total(recording):
    stacks, d, _ = recording
    total = sum(w for p in d["profiles"] for w in p["weights"])
    assert total % PERIOD == 0
    assert total // PERIOD == sum(c for _, c in stacks)


def test_one_profile_per_folded_thread(recording):
    stacks, d, ids = recording
    threads = [thread_of(p) for p in d["profiles"]]
    assert len(set(threads)) == len(threads)
    assert set(threads) == set(folded_stacks(stacks))
    assert (ids["py_spin"], "py-spin") in threads and (ids["c_work"], "c-work") in threads
    # ordered by pid, then tid; the busiest thread is the one shown first
    pids = [int(p["name"].split()[0]) for p in d["profiles"]]
    assert [(pid, t[0]) for pid, t in zip(pids, threads)] == sorted(zip(pids, (t[0] for t in threads)))
    weights = [p["endValue"] for p in d["profiles"]]
    assert d["activeProfileIndex"] == weights.index(max(weights))


def test_leaf_function_shares_match_folded(recording):
    stacks, d, _ = recording
    frames = d["shared"]["frames"]

    def shares(pairs):
        by_leaf = {}
        for leaf, count in pairs:
            by_leaf[leaf] = by_leaf.get(leaf, 0) + count
        total = sum(by_leaf.values())
        return {k: v / total for k, v in by_leaf.items()}

    want = shares((FRAME_RE.sub(r"\g<name>", f[-1]), c) for f, c in stacks)
    got = shares((clean(frames[s[-1]]["name"]), w) for p in d["profiles"]
                 for s, w in zip(p["samples"], p["weights"]) if s)
    assert want.keys() == got.keys()
    for leaf, share in want.items():
        assert abs(got[leaf] - share) < 1e-9, (leaf, got[leaf], share)
    names = {f["name"] for f in frames}
    assert {"py_spin", "c_work"} <= names, names


def test_python_lines_match_folded(recording):
    """Every Python frame, with its line, as often as in folded output."""
    stacks, d, _ = recording
    frames = d["shared"]["frames"]
    want, got = {}, {}
    for fs, c in stacks:
        for f in fs[1:]:
            if is_python(f):
                m = FRAME_RE.match(f)
                key = (m.group("name"), m.group("file"), int(m.group("line")))
                want[key] = want.get(key, 0) + c
    for p in d["profiles"]:
        for s, w in zip(p["samples"], p["weights"]):
            for i in s:
                f = frames[i]
                if "line" in f:
                    key = (clean(f["name"]), clean(f["file"]), f["line"])
                    got[key] = got.get(key, 0) + w // PERIOD
    assert got == want
    assert any(k[0] == "py_spin" and k[1] == THREADS_PY for k in got)


def test_stacks_match_folded_frame_for_frame(recording):
    stacks, d, _ = recording
    assert ss_stacks(d) == folded_stacks(stacks)


def def_lines(path):
    tree = ast.parse(open(path).read())
    return {n.name: n.lineno for n in tree.body if isinstance(n, ast.FunctionDef)}


@pytest.mark.skipif(not SUPPORTED, reason="no supported CPython")
def test_no_lines_gives_each_function_its_first_line(tmp_path):
    ss = tmp_path / "n.speedscope.json"
    r = run_pyperf(["-F", str(FREQ), "--no-lines", "-o", str(ss), "--", SUPPORTED[-1][0],
                    THREADS_PY, "1", str(tmp_path / "ids.json")])
    assert r.returncode == 0, r.stderr
    d = json.loads(ss.read_text())
    check_schema(d)
    defs = def_lines(THREADS_PY)
    ours = [f for f in d["shared"]["frames"] if f.get("file") == THREADS_PY]
    assert {"py_spin", "c_work"} <= {f["name"] for f in ours}
    for f in ours:
        if f["name"] in defs:
            assert f["line"] == defs[f["name"]], f
    # one frame per function
    assert len({f["name"] for f in ours}) == len(ours), ours


def test_empty_profile_is_a_valid_file(tmp_path):
    out = tmp_path / "e.speedscope.json"
    r = run_pyperf(["-o", str(out), "--allow-empty", "--", "sleep", "0.5"])
    assert r.returncode == 0, r.stderr
    d = json.loads(out.read_text())
    check_schema(d)
    assert d["profiles"] == [] and d["shared"]["frames"] == []
    assert d["name"] == "sleep 0.5"
