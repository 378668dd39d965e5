"""--mode wall and offcpu against ground truth: wallsplit.py measures how its
main thread's wall time splits (CPU work, time.sleep, a blocking pipe read,
waiting for a threading.Lock) and how long a thread that only sleeps lived;
the profile must say the same, with the blocking system call's kernel
frames at the leaf.  --mode cpu on the same workload keeps today's
behaviour, --mode offcpu has no CPU leaf.  The outputs carry the mode:
pprof's sample type (read back by Google's pprof), SVG and speedscope
totals equal to the folded output's (which is in microseconds).

The wall split runs on every CPython present (the off-CPU walk reads each
version's frames); the cpu/offcpu contrasts and the formats on the newest
one (they do not depend on the version)."""
import json
import math
import os
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET

import pytest

from conftest import PYPERF, SUPPORTED, WORKLOADS, func_name, parse_folded, \
    record_workload, run_pyperf, supported_pythons
from pprofread import decode

SECONDS = "3"
PARTS = {"cpu": "cpu_work", "sleep": "sleeper", "pipe": "pipe_reader", "lock": "lock_waiter"}
# the system call each blocking part waits in, as the kernel names it
# (time.sleep is clock_nanosleep from 3.11, select before)
KERNEL = {"sleep": ("do_nanosleep", "do_select"), "pipe": ("pipe_read", "anon_pipe_read"),
          "lock": ("futex_wait",)}


def record(python, tmp_path, mode, also=(), extra=()):
    out = tmp_path / "truth.json"
    stacks, outs, r = record_workload(python, tmp_path, "wallsplit.py", SECONDS, str(out),
                                      hz=499, also=also, extra=["--mode", mode, *extra])
    return stacks, json.loads(out.read_text()), outs, r


def split(stacks):
    """Weights of the main thread's stacks (those through main_loop) per part,
    of the only-sleeping thread's, and the main thread's total."""
    parts = dict.fromkeys(PARTS, 0)
    main = only = 0
    for frames, count in stacks:
        names = [func_name(f) for f in frames]
        if "only_sleeps" in names:
            only += count
        if "main_loop" not in names:
            continue
        main += count
        for part, fn in PARTS.items():
            if fn in names:
                parts[part] += count
    return parts, main, only


@supported_pythons()
def test_wall_mode_splits_like_the_workloads_own_clock(python, tmp_path):
    stacks, truth, _, _ = record(python[0], tmp_path, "wall")
    parts, main, only = split(stacks)
    assert main > 0, stacks[:3]
    # folded lines are microseconds: the main thread's lifetime is all there
    assert abs(main / 1e6 - truth["main_s"]) < 0.05 * truth["main_s"], (main, truth)
    for part in PARTS:
        got = 100.0 * parts[part] / main
        want = 100.0 * truth["shares"][part]
        assert abs(got - want) <= 3, (part, got, want, parts, truth)
    # the thread that only sleeps: all of its own wall time
    assert abs(only / 1e6 - truth["sleeper_s"]) < 0.1 * truth["sleeper_s"], (only, truth)
    # each blocking part waits in its system call, kernel frames at the leaf
    for part, kfn in KERNEL.items():
        blocked = [f for f, c in stacks if PARTS[part] in map(func_name, f) and f[-1].endswith("_[k]")]
        assert blocked, part
        heavy = max(blocked, key=lambda f: dict((tuple(s), c) for s, c in stacks)[tuple(f)])
        kernel = [func_name(x)[:-4] for x in heavy if x.endswith("_[k]")]
        assert any(k.startswith(kfn) for k in kernel), (part, kernel)
        assert kernel[-1] in ("__schedule", "schedule"), kernel  # not the tracing frames


def newest():
    assert SUPPORTED, "no supported CPython"
    return SUPPORTED[-1][0]


def test_cpu_mode_is_unchanged_on_the_same_workload(tmp_path):
    stacks, truth, _, _ = record(newest(), tmp_path, "cpu")
    parts, main, only = split(stacks)
    assert main > 100, main  # samples, not microseconds
    assert parts["cpu"] > 0.85 * main, parts
    assert parts["sleep"] + parts["pipe"] + parts["lock"] < 0.1 * main, parts
    assert only < 0.02 * main, only  # the sleeper is absent


def test_wall_totals_hold_for_threads_switching_100k_times_a_second(tmp_path):
    """pingpong.py: two threads pass a byte through pipes for 3 s on one CPU,
    each switching out >50k times a second.  Only about 1000 of each
    thread's blocks a second are walked (at -F 499), each standing for the
    k blocks it was drawn from (its time times k), so each thread's wall
    time must still add up to the 3 s it ran: within 15 %, and the
    estimate's own sampling error.  That error is small on an idle machine
    (blocks of a few microseconds; about 0.06 s), not on a loaded one: a
    walked block that waited 10 ms for the CPU behind a burner stands for
    k times that.  It is bounded from the walked blocks themselves, each
    one a sample of the timeline written in the same run: an estimate
    summing weights w has a standard error of about sqrt(sum of w^2)."""
    out, folded, trace = tmp_path / "pp.json", tmp_path / "p.folded", tmp_path / "p.trace.json"
    r = run_pyperf(["-F", "499", "--mode", "wall", "-o", str(folded), "-o", str(trace), "--",
                    "taskset", "-c", "0", newest(), os.path.join(WORKLOADS, "pingpong.py"),
                    SECONDS, str(out)])
    assert r.returncode == 0, r.stderr
    assert json.loads(out.read_text())["round_trips_per_s"] > 25000
    stacks = parse_folded(folded.read_text())
    tl = json.loads(trace.read_text())
    assert tl["otherData"]["samples_lost_ring_full"] == "0", tl["otherData"]
    assert tl["otherData"]["samples_over_the_cap"] == "0", tl["otherData"]
    leaf_fns = {}

    def fns_of(sf):
        if sf not in leaf_fns:
            f = tl["stackFrames"][sf]
            up = fns_of(f["parent"]) if f.get("parent") is not None else frozenset()
            leaf_fns[sf] = up | {func_name(f["name"])}
        return leaf_fns[sf]
    for fn in ("pinger", "ponger"):
        total = sum(c for f, c in stacks if fn in map(func_name, f)) / 1e6
        weights = [s["weight"] / 1e9 for s in tl["samples"] if fn in fns_of(s["sf"])]
        assert abs(sum(weights) - total) < 0.01 * total, (fn, sum(weights), total)
        error = math.sqrt(sum(w * w for w in weights))
        assert abs(total - float(SECONDS)) < 0.15 * float(SECONDS) + 3 * error, \
            (fn, total, "standard error", error, "walked", len(weights))


def sleepers_total(tmp_path, slots=None):
    """idle_threads.py: 8 threads sleeping 100 ms at a time for 2 s, in
    --mode wall; their seconds in the profile and the report."""
    folded, txt = tmp_path / "p.folded", tmp_path / "p.txt"
    env = dict(os.environ, **({"PYPERF_OFFCPU_SLOTS": str(slots)} if slots else {}))
    r = run_pyperf(["-F", "99", "--mode", "wall", "-o", str(folded), "-o", str(txt), "--",
                    newest(), os.path.join(WORKLOADS, "idle_threads.py"), "2", "8"], env=env)
    assert r.returncode == 0, r.stderr
    stacks = parse_folded(folded.read_text())
    return sum(c for f, c in stacks if "worker" in map(func_name, f)) / 1e6, txt.read_text()


def test_sleeping_threads_in_the_thread_table(tmp_path):
    """Each profiled thread's off-CPU state lives in a table indexed by its
    tid.  With the default size the 8 sleepers' 16 s are all there; with
    room for 2 threads (PYPERF_OFFCPU_SLOTS) they take each other's slots,
    and the blocks whose time was lost are counted in the report, never
    given to another thread."""
    total, report = sleepers_total(tmp_path)
    assert abs(total - 16) < 0.1 * 16, total
    assert "blocks lost" not in report, report
    total, report = sleepers_total(tmp_path, slots=2)
    m = re.search(r"Off-CPU blocks lost: (\d+) walked blocks", report)
    assert m and int(m.group(1)) > 20, report
    assert total < 16 * 1.1, total


def test_offcpu_mode_has_no_cpu_leaf(tmp_path):
    """cpu_work is off the CPU only while it waits for one (preempted),
    which the workload measures (wall less thread time): an idle machine
    makes that nearly nothing, a loaded one not"""
    stacks, truth, _, r = record(newest(), tmp_path, "offcpu", also=[".txt"])
    parts, main, only = split(stacks)
    assert main > 0
    waited = truth["cpu_waited_s"] * 1e6
    assert abs(parts["cpu"] - waited) < 0.05 * main + 0.25 * waited, (parts, waited)
    blocked = parts["sleep"] + parts["pipe"] + parts["lock"]
    # off-CPU time is what the main thread did not spend on the CPU
    off_truth = truth["main_s"] * (1 - truth["shares"]["cpu"])
    assert abs(blocked / 1e6 - off_truth) < 0.1 * off_truth, (blocked, truth)
    assert abs(only / 1e6 - truth["sleeper_s"]) < 0.1 * truth["sleeper_s"]
    report = (tmp_path / "p.txt").read_text()
    assert re.search(r"offcpu mode: [\d.]+ s of thread time", report), report[:300]


def test_wall_formats_carry_the_mode_and_the_same_totals(tmp_path):
    stacks, truth, (prof, svg, ss, txt), _ = record(
        newest(), tmp_path, "wall", also=[".pb.gz", ".svg", ".speedscope.json", ".txt"],
        extra=["--top", "1000"])
    total_us = sum(c for _, c in stacks)
    tolerance_us = len(stacks)  # each folded line is rounded to a microsecond
    head, samples, locs, _ = decode(str(prof))
    assert head["types"].split() == ["wall/nanoseconds[dflt]"], head
    assert head["PeriodType"] == "wall nanoseconds"
    pprof_ns = sum(s[0] for s in samples)
    assert abs(pprof_ns / 1000 - total_us) <= tolerance_us, (pprof_ns, total_us)
    root = [g for g in ET.parse(svg).getroot().iter("{http://www.w3.org/2000/svg}g")
            if g.get("class") == "f" and g.get("data-depth") == "0"]
    assert int(root[0].get("data-samples")) == pprof_ns
    subtitle = re.search(r'id="subtitle"[^>]*>([^<]*)<', svg.read_text()).group(1)
    assert subtitle.startswith("wall mode:") and "off-CPU" in subtitle, subtitle
    d = json.loads(ss.read_text())
    ss_ns = 0
    for p in d["profiles"]:
        assert p["unit"] == "nanoseconds"
        ss_ns += sum(p["weights"])
    assert ss_ns == pprof_ns
    # the report: on- and off-CPU side by side, per function
    report = txt.read_text()
    assert "OwnTime (on-CPU  off-CPU)" in report, report[:500]
    row = [ln for ln in report.splitlines() if "sleeper (" in ln]
    assert row, report
    # its total: (on-CPU  off-CPU), the second such pair on the row
    on, off = map(float, re.findall(r"\(\s*([\d.]+)s\s+([\d.]+)s\)", row[0])[1])
    assert off > 0.5 and off > 10 * on, row[0]


def test_bad_mode_is_refused_by_every_command(tmp_path):
    for cmd in ([], ["top"], ["daemon"]):
        r = run_pyperf(cmd + ["--mode", "idle", "-d", "1", "--", "true"] if cmd != ["daemon"]
                       else cmd + ["--mode", "idle"])
        assert r.returncode == 2, (cmd, r.returncode, r.stderr)
        assert "idle" in r.stderr and r.stderr.count("\n") == 1, r.stderr
    assert os.path.exists(os.path.join(WORKLOADS, "wallsplit.py"))


@supported_pythons()
def test_gil_wait_is_one_frame_above_the_python_frame_that_waited(python, tmp_path):
    out = tmp_path / "gil.json"
    stacks, _, _ = record_workload(python[0], tmp_path, "gil.py", "3", str(out), hz=499,
                                   extra=["--mode", "wall"])
    truth = json.loads(out.read_text())
    for name in ("spin_a", "spin_b"):
        mine = [(f, c) for f, c in stacks if name in map(func_name, f)]
        total = sum(c for _, c in mine)
        waited = [(f, c) for f, c in mine if "[GIL wait]" in f]
        share = sum(c for _, c in waited) / max(1, total)
        t = truth[name]
        assert t["slept"] - 0.10 <= share <= t["off_cpu"] + 0.10, (name, share, t)
        # the frame sits right above a Python frame of the thread
        for f, _ in waited:
            i = f.index("[GIL wait]")
            assert i > 0 and f[i - 1].endswith(")") and ".py:" in f[i - 1], f[i - 2:i + 3]
    # the zlib thread is there too, mostly compressing without the GIL
    assert any("zlib_worker" in map(func_name, f) for f, _ in stacks)


def thread_shares(stacks):
    tot = {"spin_a": 0, "spin_b": 0, "zlib_worker": 0}
    for f, c in stacks:
        names = set(map(func_name, f))
        for t in tot:
            if t in names:
                tot[t] += c
    return tot, sum(c for _, c in stacks)


@supported_pythons()
def test_gil_keeps_only_the_threads_holding_it(python, tmp_path):
    """--gil reads each version's GIL (locked, last holder): the spinning
    threads stay, the zlib thread, compressing with the GIL released, goes."""
    stacks, _, r = record_workload(python[0], tmp_path, "gil.py", "2",
                                   str(tmp_path / "gil.json"), hz=499, extra=["--gil"])
    tot, total = thread_shares(stacks)
    assert total > 300, (total, r.stderr)
    assert tot["spin_a"] + tot["spin_b"] >= 0.9 * total, tot
    assert tot["zlib_worker"] <= 0.05 * total, tot
    assert "GIL" not in r.stderr, r.stderr  # no "unknown" warning: the layout is known


def test_without_gil_the_zlib_thread_is_there(tmp_path):
    """without --gil each thread has its share of the CPU time, the zlib
    thread's measured by itself (schedstat)"""
    stacks, _, _ = record_workload(newest(), tmp_path, "gil.py", "2",
                                   str(tmp_path / "gil.json"), hz=499)
    truth = json.loads((tmp_path / "gil.json").read_text())
    tot, total = thread_shares(stacks)
    cpu = {t: truth[t]["cpu_s"] for t in tot}
    want = cpu["zlib_worker"] / sum(cpu.values())
    # the workload gives it 6-17 % (it waits for the GIL behind two
    # spinners between calls); the profile matched within 1 point in six
    # runs.  A third of its share, at least 1.5 points, fails a profile
    # that loses the thread even at the low end.
    assert want > 0.03, cpu  # the workload gave it a real share
    assert abs(tot["zlib_worker"] / sum(tot.values()) - want) <= max(0.015, want / 3), (tot, cpu)


# asleep_before.py: each waiting thread's function, and the kernel functions
# its wait can be in (wchan: the version's time.sleep is select before 3.11)
ASLEEP = {"nap": ("hrtimer_nanosleep", "do_nanosleep", "do_select", "core_sys_select",
                  "poll_schedule_timeout"),
          "wait_lock": ("futex",), "wait_pipe": ("pipe_read", "anon_pipe_read"),
          "main_wait": ("hrtimer_nanosleep", "do_nanosleep", "do_select", "core_sys_select",
                  "poll_schedule_timeout")}


@supported_pythons()
def test_threads_asleep_before_an_attach_are_counted_from_it(python, tmp_path):
    """Attached in wall mode to a process whose threads all wait already
    (asleep_before.py), none of which leaves its wait in the recording but
    "waker", every second: each thread has the recording's whole length (the
    blocks in flight at the attach are walked from user space, blocked.h),
    the waker's too (its first block, walked so, ends when it wakes and the
    sampler walks its next ones: neither counted twice nor lost).  The stack
    of each is its function's, over the C library's call into the kernel
    ("[native incomplete]": no registers to unwind further from) and the
    kernel function it waits in.  Every version (the thread's id is found in
    the thread state from 3.11, in the C library's thread descriptor
    before)."""
    p = subprocess.Popen([python[0], os.path.join(WORKLOADS, "asleep_before.py")],
                         stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "ready"
        txt, folded, stats = tmp_path / "r.txt", tmp_path / "r.folded", tmp_path / "s.json"
        r = run_pyperf(["-v", "--mode", "wall", "-d", "2", "-o", str(txt), "-o", str(folded),
                        "--stats-json", str(stats), "-p", str(p.pid)], timeout=60)
        assert r.returncode == 0, r.stderr
    finally:
        p.kill()
        p.wait()
    report = txt.read_text()
    secs = float(re.search(r"thread time in ([\d.]+) s", report).group(1))
    threads = {m.group(2): float(m.group(3)) for m in re.finditer(
        r'^    thread (\d+) "([^"]*)": ([\d.]+) s', report, re.M)}
    for name in ("MainThread", "napper", "locked", "piped", "waker"):
        if abs(threads.get(name, 0) - secs) >= 0.1 * secs:
            # The waker had 0.93 s, 1.48 s and 1.44 s of 2.01 on loaded
            # machines, about once in a hundred runs: the loader held up
            # between its look at the waker and its claim of the waker's
            # block, which woke meanwhile (the next test holds it so).  The
            # whole evidence, untruncated (pytest cuts an assert's
            # message), should it come back.
            st = json.loads(stats.read_text())
            pytest.fail(f"{name}: {threads.get(name)} s of {secs}\n--- report\n{report}\n"
                        f"--- log\n{r.stderr}\n--- the waker's stacks\n" +
                        "".join(ln + "\n" for ln in folded.read_text().splitlines()
                                if "doze" in ln or "[native incomplete]" not in ln) +
                        "--- stats\n" + json.dumps({k: v for k, v in st.items()
                                                     if k.startswith(("stat_", "unattr"))}))
    stacks = parse_folded(folded.read_text())
    for fn, kernel in ASLEEP.items():
        mine = [(f, c) for f, c in stacks if fn in map(func_name, f)]
        assert abs(sum(c for _, c in mine) / 1e6 - secs) < 0.1 * secs, (fn, secs, mine)
        heavy = max(mine, key=lambda x: x[1])[0]
        assert heavy[-1].endswith("_[k]") and heavy[-1][:-4].startswith(kernel), (fn, heavy)
        assert "[native incomplete]" in heavy, heavy


def test_a_loader_held_up_before_its_walk_loses_no_sleeper_that_wakes(tmp_path):
    """The blocks of threads asleep at an attach are claimed the moment the
    sampler can see the threads run, and walked after (blocked.h): however
    late the walk, a thread that wakes before it has its time from the
    attach.  gdb holds the loader 1.5 s where its walk begins; the waker
    of asleep_before.py, which wakes every second, wakes meanwhile.  Every
    thread has the whole recording, the waker's first block from the
    attach under the stack walked from user space.  Before the claim came
    first, the waker lost the time from the attach to its wake whenever
    the loader was held between its look at the waker and the claim (on a
    loaded CI machine, 0.57 s of 2.01 once), and every thread the time the
    loader was held here.  One version: the claim is the same for all."""
    if not shutil.which("gdb"):
        pytest.fail("gdb is missing: scripts/setup --test-deps installs it")
    python = SUPPORTED[-1][0]
    p = subprocess.Popen([python, os.path.join(WORKLOADS, "asleep_before.py")],
                         stdout=subprocess.PIPE, text=True)
    txt, folded = tmp_path / "r.txt", tmp_path / "r.folded"
    try:
        assert p.stdout.readline().strip() == "ready"
        r = subprocess.run(["gdb", "-q", "-batch", "-ex", "break blocked_walk", "-ex", "run",
                            "-ex", "shell sleep 1.5", "-ex", "delete", "-ex", "continue",
                            "--args", PYPERF, "-v", "--mode", "wall", "-d", "3", "-o", str(txt),
                            "-o", str(folded), "-p", str(p.pid)],
                           capture_output=True, text=True, timeout=120)
    finally:
        p.kill()
        p.wait()
    assert "hit Breakpoint 1" in r.stdout, r.stdout + r.stderr
    assert "exited normally" in r.stdout, r.stdout + r.stderr
    report = txt.read_text()
    secs = float(re.search(r"thread time in ([\d.]+) s", report).group(1))
    threads = {m.group(1): float(m.group(2)) for m in re.finditer(
        r'^    thread \d+ "([^"]*)": ([\d.]+) s', report, re.M)}
    assert set(threads) == {"MainThread", "napper", "locked", "piped", "waker"}, report
    for name, t in threads.items():
        assert abs(t - secs) < 0.1 * secs, (name, t, secs, report)
    # the waker's first block, from the attach to its wake within the
    # 1.5 s held: under its stack walked from user space, marked incomplete
    # above the C library's leaf
    first = sum(c for f, c in parse_folded(folded.read_text())
                if "doze" in map(func_name, f) and "[native incomplete]" in f)
    assert 0 < first / 1e6 <= 1.6, (first, folded.read_text())
