"""Unsupported interpreters get one clear line naming their version, and in
whole-host mode the other processes are still profiled."""
import os
import subprocess

import pytest

from conftest import SUPPORTED, UNSUPPORTED, WORKLOADS, parse_folded, run_pyperf, py_leaf

SPIN = "import time\ndef old_spin():\n    while True: pass\nold_spin()\n"


def _need_old():
    if not UNSUPPORTED:
        pytest.skip("no CPython older than 3.8 on this machine to check the message with")


@pytest.mark.parametrize("old", UNSUPPORTED, ids=[f"{v[0]}.{v[1]}" for _, v in UNSUPPORTED])
def test_pid_of_unsupported_version_is_named(old, tmp_path):
    path, (major, minor) = old
    p = subprocess.Popen([path, "-c", SPIN])
    try:
        r = run_pyperf(["-p", str(p.pid), "-d", "1", "-o", str(tmp_path / "x.folded")])
        assert r.returncode != 0
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and f"unsupported Python {major}.{minor}" in lines[0], r.stderr
        assert os.listdir(tmp_path) == []
    finally:
        p.kill()
        p.wait()


def test_whole_host_mode_warns_and_keeps_profiling(tmp_path):
    _need_old()
    if not SUPPORTED:
        pytest.fail("no supported CPython found")
    old_path, (major, minor) = UNSUPPORTED[-1]
    new_path = SUPPORTED[-1][0]
    old = subprocess.Popen([old_path, "-c", SPIN])
    new = subprocess.Popen([new_path, os.path.join(WORKLOADS, "split.py"), "30",
                            str(tmp_path / "t.json")], stdout=subprocess.PIPE, text=True)
    try:
        assert new.stdout.readline().strip() == "ready"
        out = tmp_path / "all.folded"
        r = run_pyperf(["-d", "3", "-F", "199", "-o", str(out)])
        assert r.returncode == 0, r.stderr
        assert f"pid {old.pid}: unsupported Python {major}.{minor}" in r.stderr, r.stderr
        stacks = parse_folded(out.read_text())
        mine = [(f, c) for f, c in stacks if f[0].startswith(f"process {new.pid} ")]
        assert mine, f"no stacks of pid {new.pid}: {[f[0] for f, _ in stacks][:10]}"
        assert {"leaf_a", "leaf_b"} <= {py_leaf(f) for f, _ in mine}
    finally:
        for p in (old, new):
            p.kill()
            p.wait()
