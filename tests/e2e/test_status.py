"""record's status line: on a terminal (tmux), stderr shows the elapsed and
total time, samples, processes and threads seen, samples lost and unwind
tables not built yet, redrawn as the recording goes and erased at its end; piped, or with --quiet,
there is none."""
import os
import re

from conftest import PYPERF, SUPPORTED, WORKLOADS, run_pyperf
from test_top import pane, session, tmux, wait_for  # noqa: F401 (session is a fixture)

STATUS_RE = re.compile(r"pyperf-bpf: (\d+)/4 s, (\d+) samples, (\d+) processes, (\d+) threads, "
                       r"(\d+) lost, (\d+) tables pending")


def record_in_terminal(session, tmp_path, extra=""):
    done = tmp_path / "status"
    cmd = (f"{PYPERF} -F 199 -d 4 {extra} -o {tmp_path / 'p.folded'} -- {SUPPORTED[-1][0]} "
           f"{os.path.join(WORKLOADS, 'deep.py')} 3 30; echo $? > {done}")
    tmux("send-keys", "-t", session, "clear; " + cmd, "Enter")
    return done


def test_status_line_on_a_terminal(session, tmp_path):
    assert SUPPORTED, "no supported CPython"
    done = record_in_terminal(session, tmp_path)
    seen = wait_for(lambda: [m for m in STATUS_RE.finditer(pane(session))
                             if int(m.group(2)) > 0], timeout=20)
    assert seen, pane(session)
    elapsed, samples, procs, threads, lost, pending = map(int, seen[-1].groups())
    assert 1 <= elapsed <= 4 and procs == 1 and threads >= 1 and lost == 0, seen[-1].group(0)
    # redrawn in place: one status line on the screen at any time
    assert len(STATUS_RE.findall(pane(session))) == 1, pane(session)
    assert wait_for(lambda: done.exists(), timeout=30), pane(session)
    assert not STATUS_RE.search(pane(session)), pane(session)  # erased at the end


def test_no_status_line_with_quiet(session, tmp_path):
    done = record_in_terminal(session, tmp_path, "--quiet")
    assert wait_for(lambda: done.exists(), timeout=30), pane(session)
    assert "samples," not in pane(session), pane(session)


def test_no_status_line_when_piped(tmp_path):
    r = run_pyperf(["-F", "199", "-d", "2", "-o", str(tmp_path / "p.folded"), "--",
                    SUPPORTED[-1][0], os.path.join(WORKLOADS, "deep.py"), "3", "30"])
    assert "samples," not in r.stderr and "\r" not in r.stderr, r.stderr
