"""`pyperf-bpf dump -p PID`: every thread's stack once, including threads that
sleep (which the CPU sampler never sees); --native merges native frames; the
process keeps running afterwards."""
import json
import os
import re
import subprocess
import time

import pytest

from conftest import SUPPORTED, WORKLOADS, mp_tree, run_pyperf, supported_pythons


def start_sleeper(python):
    p = subprocess.Popen([python, os.path.join(WORKLOADS, "sleeper.py")], stdout=subprocess.PIPE,
                         text=True)
    assert p.stdout.readline().strip() == "ready"
    time.sleep(0.5)  # "ready" comes just before the main thread calls main_wait
    return p


def threads_of(text):
    """{tid: (header, [frame lines, leaf first])}"""
    out, cur = {}, None
    for line in text.splitlines():
        m = re.match(r'Thread (\d+) "(.*)" \((.*)\)$', line)
        if m:
            cur = int(m.group(1))
            out[cur] = (line, [])
        elif cur is not None and line.startswith("    "):
            out[cur][1].append(line.strip())
    return out


def func(line):
    return line.split(" (")[0]


def thread_state(pid, tid):
    with open(f"/proc/{pid}/task/{tid}/stat") as f:
        return f.read().rpartition(")")[2].split()[0]


@supported_pythons()
def test_dump_shows_sleeping_and_running_threads(python):
    p = start_sleeper(python[0])
    try:
        r = run_pyperf(["dump", "-p", str(p.pid)], timeout=60)
        assert r.returncode == 0, r.stderr
        th = threads_of(r.stdout)
        assert r.stdout.startswith(f"Process {p.pid}: "), r.stdout
        main = th[p.pid][1]
        assert [func(x) for x in main] == ["main_wait", "<module>"], r.stdout
        assert re.fullmatch(r"main_wait \(.*sleeper\.py:\d+\)", main[0]), main[0]
        assert "(sleeping)" in th[p.pid][0]
        leaves = sorted(func(fr[0]) for tid, (_, fr) in th.items() if tid != p.pid and fr)
        assert leaves == ["nap_in_thread", "spin"], r.stdout
        # nothing but Python frames without --native
        assert all(re.search(r"\.py:\d+\)$", x) for _, fr in th.values() for x in fr), r.stdout
        # the process runs on: no thread is left stopped
        time.sleep(0.2)
        assert p.poll() is None
        states = {thread_state(p.pid, int(t)) for t in os.listdir(f"/proc/{p.pid}/task")}
        assert not states & {"t", "T"}, states
    finally:
        p.kill()
        p.wait()


@supported_pythons()
def test_dump_native_merges_the_sleep_call(python):
    """--native: the libc sleep under time.sleep's C function, under main_wait,
    under the interpreter's start-up frames; Python frames keep their order."""
    p = start_sleeper(python[0])
    try:
        r = run_pyperf(["dump", "-p", str(p.pid), "--native"], timeout=60)
        assert r.returncode == 0, r.stderr
        # Debian's LTO build names static functions like time_sleep.lto_priv.0
        main = [func(x).split(".lto_priv")[0] for x in threads_of(r.stdout)[p.pid][1]]
        # glibc 2.41 (Debian sid's, under 3.14/3.15) enters system calls
        # through its cancellation wrappers, leaf side of clock_nanosleep
        lead = 0
        while main[lead] in ("__syscall_cancel_arch", "__internal_syscall_cancel",
                             "__syscall_cancel"):
            lead += 1
        assert main[lead] in ("clock_nanosleep", "__clock_nanosleep", "select", "__select"), main
        assert "time_sleep" in main, main
        py = [f for f in main if f in ("main_wait", "<module>")]
        assert py == ["main_wait", "<module>"], main
        assert main.index("time_sleep") < main.index("main_wait")
        assert "Py_BytesMain" in main[main.index("<module>"):], main
        assert not any(f.startswith("[native") or f.startswith("[unmerged") for f in main), main
    finally:
        p.kill()
        p.wait()


def test_dump_without_lines():
    assert SUPPORTED, "no supported CPython"
    p = start_sleeper(SUPPORTED[-1][0])
    try:
        r = run_pyperf(["dump", "-p", str(p.pid), "--no-lines"], timeout=60)
        assert r.returncode == 0, r.stderr
        assert re.fullmatch(r"main_wait \(.*sleeper\.py\)", threads_of(r.stdout)[p.pid][1][0])
    finally:
        p.kill()
        p.wait()


@pytest.mark.parametrize("args,needle", [
    (["dump"], "give -p PID"), (["dump", "-p", "x"], "not a process id"),
    (["dump", "-p", "1", "extra"], "unexpected argument"), (["dump", "--bogus"], "unknown"),
])
def test_dump_bad_options(args, needle):
    r = run_pyperf(args)
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1 and needle in r.stderr, r.stderr


def test_dump_of_a_process_that_is_not_python():
    p = subprocess.Popen(["sleep", "60"])
    try:
        r = run_pyperf(["dump", "-p", str(p.pid)])
        assert r.returncode == 1 and len(r.stderr.splitlines()) == 1, r.stderr
        assert "not a CPython process" in r.stderr
        assert r.stdout == ""
    finally:
        p.kill()
        p.wait()


def test_dump_of_a_gone_process():
    p = subprocess.Popen(["true"])
    p.wait()
    r = run_pyperf(["dump", "-p", str(p.pid)])
    assert r.returncode == 1 and "no such process" in r.stderr, r.stderr


def test_dump_subprocesses_dumps_the_tree(tmp_path):
    """--subprocesses (py-spy's flag): the process, then each CPython
    process under it, multiprocessing's workers from fork and spawn among
    them (and spawn's resource tracker); without it, the process alone.
    record and top accept the flag: they always follow children."""
    assert SUPPORTED, "no supported CPython"
    with mp_tree(tmp_path / "pids", "fork,spawn") as (p, workers):
        assert len(workers) == 4, workers
        r = run_pyperf(["dump", "-p", str(p.pid), "--subprocesses"], timeout=60)
        assert r.returncode == 0, r.stderr
        seen = {int(m) for m in re.findall(r"^Process (\d+): ", r.stdout, re.M)}
        assert r.stdout.startswith(f"Process {p.pid}: ")
        assert workers <= seen, (workers, seen, r.stderr)
        th = threads_of(r.stdout)
        assert all(func(th[w][1][0]) == "spin" for w in workers), r.stdout
        r = run_pyperf(["dump", "-p", str(p.pid)], timeout=60)
        assert set(map(int, re.findall(r"^Process (\d+): ", r.stdout, re.M))) == {p.pid}
        # --json: one array of the threads of them all
        r = run_pyperf(["dump", "-p", str(p.pid), "--subprocesses", "--json"], timeout=60)
        assert r.returncode == 0, r.stderr
        threads = json.loads(r.stdout)
        assert workers <= {t["pid"] for t in threads}, r.stdout[:300]
        assert all(t["frames"][0]["name"] == "spin" for t in threads if t["pid"] in workers)
        r = run_pyperf(["-d", "0.5", "--subprocesses", "-f", "folded", "-o", "/dev/null", "-p",
                        str(p.pid)])
        assert r.returncode == 0, r.stderr

