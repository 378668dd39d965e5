"""Every thread is attributed to its own stack, also one that runs C code with
the GIL released; a sleeping thread does not appear in a CPU profile; with
--threads each stack starts with a frame naming the thread's tid and name."""
import json
import os
import re

from conftest import WORKLOADS, names, parse_folded, run_pyperf, supported_pythons

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
