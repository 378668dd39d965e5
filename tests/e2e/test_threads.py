"""Every thread is attributed to its own stack, also one that runs C code with
the GIL released; a sleeping thread does not appear in a CPU profile; with
--threads each stack starts with a frame naming the thread's tid and name,
Python's name for it where it has one."""
import json
import os
import re

import pytest

from conftest import SUPPORTED, WORKLOADS, names, parse_folded, run_pyperf, supported_pythons
from pprofread import decode

THREAD_RE = re.compile(r"^thread (\d+) (.*)$")


@supported_pythons()
def test_threads_attributed_and_sleeper_absent(python, tmp_path):
    path, _ = python
    out, ids_file = tmp_path / "t.folded", tmp_path / "ids.json"
    r = run_pyperf(["-F", "499", "--threads", "-o", str(out), "--", path,
                    os.path.join(WORKLOADS, "threads.py"), "3", str(ids_file)])
    assert r.returncode == 0, r.stderr
    ids = json.loads(ids_file.read_text())
    by_func, thread_of = {}, {}
    total = 0
    for frames, count in parse_folded(out.read_text()):
        m = THREAD_RE.match(frames[0])
        assert m, f"no thread root frame: {frames[0]}"
        tid, tname = int(m.group(1)), m.group(2)
        fn = names(frames[1:])
        total += count
        for role in ("py_spin", "c_work", "sleeper"):
            if role in fn:
                by_func[role] = by_func.get(role, 0) + count
                thread_of.setdefault(role, set()).add((tid, tname))
    assert total > 500, r.stderr
    # both busy threads get a fair share of two CPUs
    assert by_func.get("py_spin", 0) > 0.2 * total, by_func
    assert by_func.get("c_work", 0) > 0.2 * total, by_func
    # the sleeper never runs
    assert by_func.get("sleeper", 0) <= 0.005 * total, by_func
    # each function's samples come from its own thread, named as the thread named itself
    assert thread_of["py_spin"] == {(ids["py_spin"], "py-spin")}
    assert thread_of["c_work"] == {(ids["c_work"], "c-work")}


@pytest.mark.parametrize("python", [p for p in SUPPORTED if p[1] in ((3, 9), SUPPORTED[-1][1])],
                         ids=lambda p: f"{p[1][0]}.{p[1][1]}")
def test_threads_carry_their_python_names(python, tmp_path):
    """Threads are shown by the name Python gave them (the OS only has the
    first 15 bytes of it, or none): "MainThread", a long non-ASCII name, and
    the new name of a thread renamed while it ran, in --threads frames,
    pprof's thread_name labels and the report's lines under its process.  How the name is read from memory depends on
    the version and is checked on every interpreter by the dump tests
    (test_peers); how record finds each thread's state does not: two
    interpreters."""
    folded, pprof, truth = tmp_path / "t.folded", tmp_path / "t.pb.gz", tmp_path / "ids.json"
    report = tmp_path / "t.txt"
    r = run_pyperf(["-F", "199", "--threads", "--python-only", "-o", str(folded), "-o", str(pprof),
                    "-o", str(report),
                    "--", python[0], os.path.join(WORKLOADS, "thread_names.py"), "3", str(truth)])
    assert r.returncode == 0, r.stderr
    want = {int(k): v for k, v in json.loads(truth.read_text()).items()}
    assert sorted(want.values()) == sorted(["MainThread", "Renamed while running",
                                            "Ünïcode worker with a name longer than 15 bytes"])
    got = {}
    for frames, _ in parse_folded(folded.read_text()):
        m = THREAD_RE.match(frames[0])
        assert m, frames[0]
        got.setdefault(int(m.group(1)), set()).add(m.group(2))
    assert {tid: {name} for tid, name in want.items()} == got, (want, got)
    labels = {(int(lb["thread_id"]), lb["thread_name"]) for _, _, _, lb in decode(pprof)[1]}
    assert set(want.items()) == labels, labels
    # the report: one line per thread under the process, busiest first,
    # adding up to the process's samples
    text = report.read_text()
    proc = re.search(r"^  (\d+) .*: (\d+) samples\n((?:    thread .*\n)+)", text, re.M)
    assert proc, text
    lines = re.findall(r'^    thread (\d+) "(.*)": (\d+) samples \(([\d.]+)%\)$', proc.group(3), re.M)
    assert {(int(t), n) for t, n, _, _ in lines} == set(want.items()), lines
    counts = [int(c) for _, _, c, _ in lines]
    assert counts == sorted(counts, reverse=True) and sum(counts) == int(proc.group(2)), lines
    for _, _, c, share in lines:
        assert abs(float(share) - 100 * int(c) / int(proc.group(2))) < 0.06, lines
