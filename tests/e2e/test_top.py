"""`pyperf-bpf top` in a real terminal (tmux): the hot function leads the
table, q quits with status 0, the command stops with it, and the terminal is
restored (alternate screen left, echo and line editing back)."""
import json
import os
import re
import shutil
import subprocess
import time

import pytest

from conftest import PYPERF, SUPPORTED, WORKLOADS, run_pyperf

TMUX = shutil.which("tmux")


def tmux(*args, check=True):
    return subprocess.run([TMUX, "-L", "pyperf-test"] + list(args), capture_output=True,
                          text=True, check=check, timeout=30)


def pane(target):
    return tmux("capture-pane", "-p", "-t", target).stdout


def wait_for(cond, timeout=20.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        v = cond()
        if v:
            return v
        time.sleep(0.2)
    return cond()


@pytest.fixture
def session(tmp_path):
    if not TMUX:
        pytest.fail("tmux is not installed (scripts/setup --test-deps installs it)")
    name = "top%d" % os.getpid()
    tmux("new-session", "-d", "-s", name, "-x", "160", "-y", "40", "/bin/sh")
    try:
        yield name
    finally:
        tmux("kill-session", "-t", name, check=False)
        tmux("kill-server", check=False)


def table_rows(text):
    return [line for line in text.splitlines() if re.match(r"\s+\d+\.\d%\s+\d+\.\d%", line)]


def test_top_shows_hot_function_and_quits_on_q(session, tmp_path):
    assert SUPPORTED, "no supported CPython"
    done, stty = tmp_path / "status", tmp_path / "stty"
    cmd = (f"{PYPERF} top -F 199 -- {SUPPORTED[-1][0]} {os.path.join(WORKLOADS, 'split.py')} 60 "
           f"{tmp_path / 't.json'}; echo $? > {done}; stty -a > {stty}")
    tmux("send-keys", "-t", session, cmd, "Enter")
    # the hot function leads by own share once a few refreshes have happened
    screen = wait_for(lambda: (lambda p: p if len(table_rows(p)) >= 3 and "leaf_a" in p
                               and re.search(r"pyperf-bpf top: [3-9] s", p) else None)(pane(session)))
    assert screen, pane(session)
    rows = table_rows(screen)
    assert "leaf_a" in rows[0], screen
    own = float(rows[0].split("%")[0])
    assert 40 <= own <= 85, screen  # leaf_a gets about 60 % of the CPU
    assert tmux("display", "-p", "-t", session, "#{alternate_on}").stdout.strip() == "1"

    tmux("send-keys", "-t", session, "q")
    assert wait_for(lambda: done.exists() and done.read_text().strip()), pane(session)
    assert done.read_text().strip() == "0"
    assert wait_for(lambda: stty.exists() and stty.read_text())
    flags = stty.read_text().split()
    assert "icanon" in flags and "echo" in flags, stty.read_text()
    assert tmux("display", "-p", "-t", session, "#{alternate_on}").stdout.strip() == "0"
    assert "leaf_a" not in pane(session)  # the table went with the alternate screen
    # the command went with the view
    assert subprocess.run(["pgrep", "-f", str(tmp_path / "t.json")]).returncode == 1


def test_top_ctrl_c_restores_terminal(session, tmp_path):
    assert SUPPORTED, "no supported CPython"
    done, stty = tmp_path / "status", tmp_path / "stty"
    proc = subprocess.Popen([SUPPORTED[-1][0], os.path.join(WORKLOADS, "split.py"), "60",
                             str(tmp_path / "t.json")], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "ready"
        tmux("send-keys", "-t", session,
             f"{PYPERF} top -p {proc.pid}; echo $? > {done}; stty -a > {stty}", "Enter")
        assert wait_for(lambda: "leaf_a" in pane(session)), pane(session)
        tmux("send-keys", "-t", session, "C-c")
        assert wait_for(lambda: stty.exists() and stty.read_text()), pane(session)
        assert done.read_text().strip() == "0"
        flags = stty.read_text().split()
        assert "icanon" in flags and "echo" in flags
        assert proc.poll() is None  # -p: the profiled process is not ours to stop
    finally:
        proc.kill()
        proc.wait()


def test_top_without_a_terminal_prints_refreshes(tmp_path):
    assert SUPPORTED, "no supported CPython"
    r = run_pyperf(["top", "--", SUPPORTED[-1][0],
                    os.path.join(WORKLOADS, "split.py"), "3", str(tmp_path / "t.json")])
    assert r.returncode == 0, r.stderr  # the command's status
    blocks = [b for b in r.stdout.split("pyperf-bpf top: ") if "Function" in b]
    assert len(blocks) >= 2, r.stdout
    assert "\033[" not in r.stdout
    assert "leaf_a" in table_rows(blocks[-1])[0], blocks[-1]


def test_top_names_the_busiest_threads(tmp_path):
    """A Threads line under the header: how many threads, the busiest by
    their Python names (one renamed while it ran, one with a long non-ASCII
    name, cut at a character) and their shares of the run so far."""
    assert SUPPORTED, "no supported CPython"
    r = run_pyperf(["top", "--", SUPPORTED[-1][0], os.path.join(WORKLOADS, "thread_names.py"), "3",
                    str(tmp_path / "ids.json")])
    assert r.returncode == 0, r.stderr
    want = {int(k): v for k, v in json.loads((tmp_path / "ids.json").read_text()).items()}
    last = re.findall(r"^Threads: (\d+) \(busiest: (.*)\)$", r.stdout, re.M)
    assert last, r.stdout
    n, busiest = last[-1]
    shown = re.findall(r'"(.*?)" \((\d+)\) ([\d.]+)%', busiest)
    assert int(n) == len(shown) == 3, last[-1]
    for name, tid, _ in shown:
        full = want[int(tid)]
        assert name == full or (name.endswith("...") and full.startswith(name[:-3]) and
                                len(name[:-3].encode()) <= 32), (name, full)
    assert {want[int(t)] for _, t, _ in shown[:2]} == {"Renamed while running",
                                                       "Ünïcode worker with a name longer than 15 bytes"}
    assert abs(sum(float(s) for _, _, s in shown) - 100) < 0.2, shown


@pytest.mark.parametrize("args,needle", [
    (["top", "-p", "x"], "not a process id"), (["top", "-F", "0"], "frequency"),
    (["top", "--bogus"], "unknown"), (["top", "-p", "1", "--", "true"], "not both"),
])
def test_top_bad_options(args, needle):
    r = run_pyperf(args)
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1 and needle in r.stderr, r.stderr


def test_top_native_lists_native_functions(tmp_path):
    """Python frames only by default (like py-spy top); --native adds the
    interpreter's and libraries' functions."""
    assert SUPPORTED, "no supported CPython"
    args = ["--", SUPPORTED[-1][0], os.path.join(WORKLOADS, "split.py"), "2", str(tmp_path / "t.json")]
    plain = run_pyperf(["top"] + args)
    native = run_pyperf(["top", "--native"] + args)
    assert plain.returncode == 0 and native.returncode == 0, plain.stderr + native.stderr
    def files(out):
        return {m.group(1) for line in table_rows(out) for m in [re.search(r"\((\S+?)\)$", line)] if m}
    assert files(plain.stdout), plain.stdout
    assert all(f.endswith(".py") or f.startswith("<") for f in files(plain.stdout)), files(plain.stdout)
    assert any(not (f.endswith(".py") or f.startswith("<")) for f in files(native.stdout)), native.stdout


def test_top_wall_mode_shows_the_sleeping_thread(tmp_path):
    """top --mode wall: time, not samples; the thread that only sleeps and
    the main thread's sleeper are there, which --mode cpu never shows."""
    assert SUPPORTED, "no supported CPython"
    r = run_pyperf(["top", "--mode", "wall", "--", SUPPORTED[-1][0],
                    os.path.join(WORKLOADS, "wallsplit.py"), "3", str(tmp_path / "t.json")])
    assert r.returncode == 0, r.stderr
    blocks = [b for b in r.stdout.split("pyperf-bpf top: ") if "Function" in b]
    assert len(blocks) >= 2, r.stdout
    assert "wall mode" in blocks[-1] and "s of thread time" in blocks[-1], blocks[-1][:200]
    names = " ".join(table_rows(blocks[-1]))
    assert "only_sleeps" in names and "sleeper" in names, blocks[-1]


def test_top_gil_leaves_out_the_thread_without_it(tmp_path):
    """top --gil: the spinning threads that hold the GIL lead; the zlib
    thread, compressing with the GIL released, is (nearly) gone."""
    assert SUPPORTED, "no supported CPython"
    r = run_pyperf(["top", "--gil", "--", SUPPORTED[-1][0], os.path.join(WORKLOADS, "gil.py"),
                    "3", str(tmp_path / "g.json")])
    assert r.returncode == 0, r.stderr
    blocks = [b for b in r.stdout.split("pyperf-bpf top: ") if "Function" in b]
    assert len(blocks) >= 2, r.stdout
    totals = {}
    for line in table_rows(blocks[-1]):
        m = re.match(r"\s+[\d.]+%\s+([\d.]+)%.*\s(\S+) \(", line)
        if m:
            totals[m.group(2)] = float(m.group(1))
    assert totals.get("spin_a", 0) + totals.get("spin_b", 0) > 80, blocks[-1]
    assert totals.get("zlib_worker", 0) < 10, blocks[-1]
