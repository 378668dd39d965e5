"""Finding Python processes: whole-host mode picks up processes started during
the run; 3.13+ processes are read through their own _Py_DebugOffsets; code
objects freed soon after their samples are named right or marked, never
named from what their memory holds next."""
import os
import re
import subprocess
import time

import pytest

from conftest import (PYPERF, SUPPORTED, UNSUPPORTED, WORKLOADS, FRAME_RE, names,
                      parse_folded, record_workload, supported_pythons, py_leaf)


@supported_pythons()
def test_whole_host_mode_finds_process_started_during_run(python, tmp_path):
    out = tmp_path / "all.folded"
    rec = subprocess.Popen([PYPERF, "-d", "4", "-F", "199", "-v", "-o", str(out)],
                           stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(1.0)
        work = subprocess.run([python[0], os.path.join(WORKLOADS, "split.py"), "1.5",
                               str(tmp_path / "t.json")], capture_output=True, timeout=60)
        assert work.returncode == 0
        _, err = rec.communicate(timeout=60)
    finally:
        if rec.poll() is None:
            rec.kill()
    assert rec.returncode == 0, err
    mine = [(f, c) for f, c in parse_folded(out.read_text()) if "split.py" in f[0]]
    assert mine, "the process started during the run was not profiled"
    assert {"leaf_a", "leaf_b", "leaf_c"} <= {py_leaf(f) for f, _ in mine}


THIRTEEN_PLUS = [p for p in SUPPORTED if p[1] >= (3, 13)]


@pytest.mark.parametrize("python", THIRTEEN_PLUS, ids=[f"{v[0]}.{v[1]}" for _, v in THIRTEEN_PLUS])
def test_313_plus_uses_debug_offsets(python, tmp_path):
    out = tmp_path / "d.folded"
    r = subprocess.run([PYPERF, "-v", "-F", "199", "-o", str(out), "--", python[0], "-c",
                        "import time\nend=time.monotonic()+0.5\nwhile time.monotonic()<end: pass"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "offsets from _Py_DebugOffsets" in r.stderr, r.stderr
    assert any(names(f)[:1] == ["<module>"] for f, _ in parse_folded(out.read_text()))


def test_some_313_plus_interpreter_present():
    """The _Py_DebugOffsets path needs a 3.13+ interpreter to be tested end to
    end; scripts/setup --test-deps installs 3.14 and 3.15."""
    assert THIRTEEN_PLUS, "no CPython 3.13+ found: run scripts/setup --test-deps"


def test_whole_host_says_an_unsupported_interpreter_once(tmp_path):
    """whole-host mode: three processes of an unsupported CPython give one
    line for that interpreter, not one per process (a fleet host's old
    interpreters would flood the log); -p and commands still name each"""
    if not UNSUPPORTED:
        pytest.skip("no CPython older than 3.8 present")
    old = UNSUPPORTED[-1][0]
    p = subprocess.Popen([PYPERF, "-d", "4", "-o", str(tmp_path / "p.folded")],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(1.5)
    kids = [subprocess.Popen([old, "-c", "import time\nt = time.time()\n"
                              "while time.time() - t < 1: pass"]) for _ in range(3)]
    for k in kids:
        k.wait()
    _, err = p.communicate(timeout=60)
    assert p.returncode == 0, err
    mine = [line for line in err.splitlines() if "unsupported Python" in line and
            any(f"pid {k.pid}:" in line for k in kids)]
    assert len(mine) == 1, err


@supported_pythons()
def test_short_lived_code_is_named_right_or_marked(python, tmp_path):
    """gen_N runs in file <gen N> for ~1 ms, then its code object and strings
    are freed.  The loader reads names after the sample, so some of them are
    freed first: each must be shown as gen_N of <gen N> with the same N, or
    as an unknown code object, never with a name or file now belonging to
    something else."""
    stacks, _, r = record_workload(python[0], tmp_path, "shortlived_code.py", "1.5",
                                   extra=["-v"])
    assert "object types checked" in r.stderr, r.stderr
    right = wrong = marked = 0
    for frames, count in stacks:
        for f in frames:
            m = FRAME_RE.match(f)
            if f.startswith("<unknown code"):
                marked += count
            elif m and (re.fullmatch(r"gen_\d+", m.group("name")) or
                        m.group("file").startswith("<gen")):
                g = re.fullmatch(r"gen_(\d+)", m.group("name"))
                if (g and m.group("file") == f"<gen {g.group(1)}>") or \
                        (m.group("name") == "<module>" and re.fullmatch(r"<gen \d+>", m.group("file"))):
                    right += count
                else:
                    wrong += count
                    print("wrong:", f)
    assert wrong == 0, (wrong, right, marked)
    assert right > 2 * marked and right > 200, (right, marked)
