"""--mode faults and --mode alloc against ground truth.

faults: faults.py takes a fresh 200 MB
bytearray in toucher() and writes a byte into each of its pages, so toucher
faults every page in; busy() before and after works with small objects that
pymalloc serves from arenas it has.  The faulted-in bytes of the profile must
sit under toucher (>= 90 %) and add up to what it touched; the outputs carry
the mode (pprof faults/bytes read back by Google's pprof, SVG, speedscope and
the report in bytes).

alloc: allocsplit.py's seventy() and thirty() allocate bytearrays (from
malloc) in a 70/30 split of bytes, counting what they asked for; the
sampled, re-weighted bytes of the profile must split the same way (within 5
points) and add up to what each asked for.

leaks: leaky.py keeps 1 KiB bytes objects in leaker(), allocates and frees
as much in churner() and grows a numpy array (a bytearray without numpy) in
grower(); `leaks -p` must show leaker's and grower's bytes still live within
20 % of what they hold, churner not, and pprof must carry Go's four heap
sample types.

Each split runs on every CPython present (the walk reads each version's
frames), leaks on 3.8, Debian's 3.11 (with numpy) and 3.15 (it adds only
probes on the C library to alloc mode); the outputs, --interval and top on
the newest one (they do not depend on the version)."""
import json
import os
import re
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

import pytest

from conftest import FRAME_RE, PYPERF, SUPPORTED, WORKLOADS, func_name, parse_folded, python_id, \
    record_workload, run_pyperf, supported_pythons
from pprofread import decode

MB = "200"


def newest():
    assert SUPPORTED, "no supported CPython"
    return SUPPORTED[-1][0]


def record(python, tmp_path, also=(), extra=()):
    stacks, outs, r = record_workload(python, tmp_path, "faults.py", MB, also=also,
                                      extra=["--mode", "faults", *extra])
    return stacks, json.loads(r.stdout.strip().splitlines()[-1]), outs, r


def toucher_bytes(stacks):
    return sum(c for f, c in stacks if "toucher" in map(func_name, f))


@supported_pythons()
def test_faults_go_to_the_function_that_touched_the_memory(python, tmp_path):
    stacks, truth, _, _ = record(python[0], tmp_path)
    total = sum(c for _, c in stacks)  # folded weights are bytes in faults mode
    touched = toucher_bytes(stacks)
    assert touched >= 0.9 * total, (touched, total, sorted(stacks, key=lambda s: -s[1])[:5])
    # one in 64 faults is walked (256 KiB): 800 of toucher's 51200, an estimate
    # within a few per cent
    assert abs(touched - truth["touched_bytes"]) <= 0.1 * truth["touched_bytes"], \
        (touched, truth)
    assert not any("busy" in map(func_name, f) and c > 0.05 * total for f, c in stacks)


def zombie(pid):
    return open(f"/proc/{pid}/stat").read().rpartition(")")[2].split()[0] == "Z"


@pytest.mark.parametrize("loader", ["live", "gone", "cold"])
@supported_pythons()
def test_faults_under_load_name_every_frame_where_it_ran(python, loader, tmp_path):
    """Issue 41's 3.15 misread, seen twice in CI on a loaded machine: every
    fault under frames at their def lines, toucher's frame missing.  The
    loader names a new stack's code from the live process; behind on a
    loaded machine, it found the process gone.  Two CPU burners run beside
    the recording, and the workload ends as soon as it has printed; "gone":
    the loader is also stopped once the workload's warm() has faulted under
    main (named then) until the workload has ended, so toucher's stacks are
    named once it is gone; "cold": the loader attaches (-p) after warm() and
    is stopped from then on until the workload has ended, so nothing of
    faults.py, not even its file name, is read while the process lives:
    every name comes from what the walk copied.  Every frame in faults.py
    must be one of its functions at a line that function has, or at line 0
    where none can be known (code first named after its process ended;
    <freed code> only so), in call order: toucher under main's generator
    under <module>, with its share of the faulted bytes."""
    out, log = tmp_path / "p.folded", tmp_path / "v.log"
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    work = [python[0], os.path.join(WORKLOADS, "faults.py"), MB, "1", "0", "wait"]
    attach = loader == "cold"
    pipes = dict(stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    if attach:  # the workload first; the loader attaches once it is warm
        w = subprocess.Popen(work, **pipes)
        prof = None
    else:
        w = prof = subprocess.Popen([PYPERF, "--mode", "faults", "-o", str(out), "--"] + work,
                                    stderr=subprocess.PIPE, **pipes)
    stopped = False
    try:
        assert w.stdout.readline().strip() == "warm", "the workload did not get warm"
        if attach:
            with open(log, "w") as f:
                prof = subprocess.Popen([PYPERF, "--mode", "faults", "-v", "-o", str(out),
                                         "-p", str(w.pid)], stdout=f, stderr=f)
            child = [w.pid]
            deadline = time.monotonic() + 60
            # adopted, then sampling (what -v says in that order for -p)
            while "sampling at" not in log.read_text():
                assert prof.poll() is None and time.monotonic() < deadline, log.read_text()
                time.sleep(0.02)
        else:
            time.sleep(0.5)  # main and <module> named, the file's str with them
            child = [int(p) for p in
                     open(f"/proc/{prof.pid}/task/{prof.pid}/children").read().split()]
        if loader != "live":
            os.kill(prof.pid, signal.SIGSTOP)
            stopped = True
        w.stdin.write("go\n")
        w.stdin.flush()
        if stopped:
            deadline = time.monotonic() + 60
            while not zombie(child[0]):
                assert time.monotonic() < deadline, "the workload did not end"
                time.sleep(0.05)
    finally:
        if stopped:
            os.kill(prof.pid, signal.SIGCONT)
        for b in burners:
            b.kill()
            b.wait()
    if attach:
        rest, _ = w.communicate(timeout=120)
        prof.wait(timeout=120)
        err = log.read_text()
    else:
        rest, err = prof.communicate(timeout=120)
    assert prof.returncode == 0, err
    stacks = parse_folded(out.read_text())
    ranges = json.loads(rest.strip().splitlines()[-1])["lines"]
    total = sum(c for _, c in stacks)
    wrong, order = [], []
    for frames, c in stacks:
        seq = []
        for fr in frames:
            m = FRAME_RE.match(fr)
            if not m or not (m.group("file") or "").endswith("faults.py"):
                continue
            name, line = m.group("name").rsplit(".", 1)[-1], int(m.group("line") or -1)
            lo, hi = ranges.get(name, (1, 0))
            if not (line == 0 and name in (*ranges, "<freed code>") or lo <= line <= hi):
                wrong.append((fr, c))
            seq.append(name)
        if "toucher" in seq and seq not in (["<module>", "main", g, "toucher"]
                                            for g in ("<genexpr>", "<freed code>")):
            order.append((seq, c))
    assert not wrong, (wrong, ranges)
    assert not order, order
    # code that cannot be named is marked, as in what the import of a module
    # runs and frees at once; but none of this file's under its own frames
    unnamed = [(f, c) for f, c in stacks
               if any(fr.startswith("<unknown code") and f[i - 1].endswith(")") and
                      "faults.py" in f[i - 1] for i, fr in enumerate(f) if i)]
    assert not unnamed, unnamed
    assert toucher_bytes(stacks) >= 0.9 * total, stacks
    if loader == "cold":  # all of each name and of the file's path came with the walk
        assert not any(fr.startswith("<freed code>") and "faults.py" in fr
                       for f, _ in stacks for fr in f), stacks


def test_faults_formats_carry_the_mode_and_the_same_totals(tmp_path):
    stacks, truth, (prof, svg, ss, txt), _ = record(
        newest(), tmp_path, also=[".pb.gz", ".svg", ".speedscope.json", ".txt"])
    total = sum(c for _, c in stacks)
    head, samples, _, _ = decode(str(prof))
    assert head["types"].split() == ["faults/bytes[dflt]"], head
    assert sum(s[0] for s in samples) == total
    root = [g for g in ET.parse(svg).getroot().iter("{http://www.w3.org/2000/svg}g")
            if g.get("class") == "f" and g.get("data-depth") == "0"]
    assert int(root[0].get("data-samples")) == total
    subtitle = re.search(r'id="subtitle"[^>]*>([^<]*)<', svg.read_text()).group(1)
    assert subtitle.startswith("faults mode:") and "MiB" in subtitle, subtitle
    d = json.loads(ss.read_text())
    assert all(p["unit"] == "bytes" for p in d["profiles"])
    assert sum(sum(p["weights"]) for p in d["profiles"]) == total
    report = txt.read_text()
    m = re.search(r"faults mode: ([\d.]+) MiB of anonymous memory faulted in, in [\d.]+ s "
                  r"\((\d+) page faults, (\d+) walked: anonymous memory\)", report)
    assert m, report[:400]
    assert abs(float(m.group(1)) * 2**20 - total) < 0.01 * 2**20 + 0.001 * total
    assert int(m.group(2)) >= int(truth["touched_bytes"]) // 4096
    assert "OwnMiB TotalMiB" in report
    assert re.search(r"^ *[\d.]+% +[\d.]+% +[\d.]+M +[\d.]+M  toucher ", report, re.M), report


def test_faults_interval_4k_walks_every_fault(tmp_path):
    stacks, truth, (txt,), _ = record(newest(), tmp_path, also=[".txt"],
                                      extra=["--interval", "4K"])
    m = re.search(r"\((\d+) page faults, (\d+) walked: anonymous memory\)", txt.read_text())
    # every fault picked: all but the few on file mappings (code pages) walked
    assert m and 0.9 * int(m.group(1)) <= int(m.group(2)) <= int(m.group(1)), txt.read_text()[:300]
    assert abs(toucher_bytes(stacks) - truth["touched_bytes"]) <= 0.02 * truth["touched_bytes"]


def test_faults_bad_interval_is_refused(tmp_path):
    for bad in ("0", "1k", "-4096", "4096x", "5G"):
        r = run_pyperf(["--mode", "faults", "--interval", bad, "--", newest(), "-c", "pass"])
        assert r.returncode == 2 and r.stderr.count("\n") == 1, (bad, r.stderr)
        assert "--interval" in r.stderr


def test_top_faults_mode_shows_mebibytes(tmp_path):
    r = run_pyperf(["top", "--mode", "faults", "--", newest(),
                    os.path.join(WORKLOADS, "faults.py"), MB, "10"])  # a few seconds
    assert r.returncode == 0, r.stderr
    assert re.search(r"faults mode, [\d.]+ MiB faulted in", r.stdout), r.stdout[:300]
    assert "OwnMiB" in r.stdout and re.search(r"[\d.]+M +[\d.]+M  toucher", r.stdout), r.stdout


def record_alloc(python, tmp_path, also=(), extra=()):
    stacks, outs, r = record_workload(python, tmp_path, "allocsplit.py", "2", hz=99, also=also,
                                      extra=["--mode", "alloc", *extra])
    return stacks, json.loads(r.stdout.strip().splitlines()[-1]), outs, r


@supported_pythons()
def test_alloc_splits_the_bytes_like_the_workload(python, tmp_path):
    stacks, asked, _, _ = record_alloc(python[0], tmp_path)
    # the bytearrays' buffers, from malloc; not the arenas pymalloc maps for
    # the small objects around them (3.8 unmaps and maps them again and again)
    got = {fn: sum(c for f, c in stacks
                   if fn in map(func_name, f) and not any(x.startswith("mmap (") for x in f))
           for fn in asked}
    share = got["seventy"] / max(1, got["seventy"] + got["thirty"])
    truth = asked["seventy"] / (asked["seventy"] + asked["thirty"])
    assert abs(share - truth) <= 0.05, (got, asked)
    for fn in asked:  # the re-weighted sample adds up to what was asked for
        assert abs(got[fn] - asked[fn]) <= 0.15 * asked[fn], (fn, got, asked)


def test_alloc_formats_carry_alloc_space(tmp_path):
    stacks, _, (prof, txt), _ = record_alloc(newest(), tmp_path, also=[".pb.gz", ".txt"])
    head, samples, _, _ = decode(str(prof))
    assert head["types"].split() == ["alloc_space/bytes[dflt]"], head
    assert sum(s[0] for s in samples) == sum(c for _, c in stacks)
    report = txt.read_text()
    m = re.search(r"alloc mode: [\d.]+ MiB allocated \(estimated from sampled bytes\), in "
                  r"[\d.]+ s \((\d+) allocator calls, (\d+) sampled\)", report)
    assert m and int(m.group(1)) > int(m.group(2)) > 100, report[:400]


def run_leaks(python, tmp_path, *extra):
    """leaky.py under `leaks -p`: (folded stacks, the workload's truth, the
    pprof path, the report)"""
    w = subprocess.Popen([python, os.path.join(WORKLOADS, "leaky.py"), "2"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True)
    outs = [tmp_path / "l.folded", tmp_path / "l.pb.gz", tmp_path / "l.txt"]
    try:
        assert w.stdout.readline().strip() == "ready"
        lk = subprocess.Popen([PYPERF, "leaks", "-v", "-p", str(w.pid), "-d", "4", "--interval",
                               "64K", *extra] + [a for o in outs for a in ("-o", str(o))],
                              stderr=subprocess.PIPE, text=True)
        for line in lk.stderr:  # its probes are in once it samples
            if "pyperf-bpf: sampling at" in line:
                break
        w.stdin.write("go\n")
        w.stdin.flush()
        truth = json.loads(w.stdout.readline())
        lk.stderr.read()
        assert lk.wait(timeout=60) == 0
    finally:
        w.kill()
        w.wait()
    return parse_folded(outs[0].read_text()), truth, outs[1], outs[2].read_text()


# leaks differs from alloc mode, which runs on every interpreter, only in
# probes on the C library (the return and free), not in anything a CPython
# version changes: the oldest and the newest interpreter and Debian's 3.11,
# the one with numpy, stand for the rest
LEAKS_PYTHONS = [p for p in SUPPORTED if p[1] in ((3, 8), (3, 15)) or p[0] == "/usr/bin/python3.11"]


@pytest.mark.parametrize("python", LEAKS_PYTHONS or [pytest.param(
    None, marks=pytest.mark.skip(reason="none of 3.8, 3.15, /usr/bin/python3.11 present"))],
    ids=[python_id(p) for p in LEAKS_PYTHONS] or None)
def test_leaks_shows_what_is_kept_and_not_what_is_freed(python, tmp_path):
    stacks, truth, _, report = run_leaks(python[0], tmp_path)
    live = {fn: sum(c for f, c in stacks if fn in map(func_name, f))
            for fn in ("leaker", "grower", "churner")}
    total = sum(c for _, c in stacks)
    for fn in ("leaker", "grower"):
        assert abs(live[fn] - truth[fn]) <= 0.2 * truth[fn], (fn, live, truth)
    assert live["churner"] <= 0.02 * total, (live, truth)
    assert re.search(r"leaks: [\d.]+ MiB in about \d+ allocations still live", report), report[:300]
    assert "Top stacks by bytes still live" in report


def test_leaks_pprof_has_the_four_heap_types_and_min_age_filters(tmp_path):
    py = "/usr/bin/python3.11" if os.path.exists("/usr/bin/python3.11") else newest()
    stacks, truth, prof, _ = run_leaks(py, tmp_path)
    head, samples, _, _ = decode(str(prof))
    assert head["types"].split() == ["alloc_objects/count", "alloc_space/bytes",
                                     "inuse_objects/count", "inuse_space/bytes[dflt]"], head
    assert sum(s[1] for s in samples) == sum(c for _, c in stacks)  # inuse_space
    # everything was allocated in the workload's first 2 s: none is 60 s old
    old, _, _, report = run_leaks(py, tmp_path, "--min-age", "60")
    assert not old, old[:3]


def test_leaks_needs_a_process():
    r = run_pyperf(["leaks", "-d", "1"])
    assert r.returncode == 2 and "give -p PID" in r.stderr, r.stderr
    r = run_pyperf(["record", "--min-age", "5", "--", "true"])
    assert r.returncode == 2 and "--min-age goes with" in r.stderr, r.stderr


@supported_pythons()
def test_alloc_shows_small_objects_as_the_arenas_they_needed(python, tmp_path):
    """pymalloc maps arenas for small objects itself: --mode alloc counts
    those anonymous mmaps (not malloc's own, which malloc counted)"""
    stacks, _, r = record_workload(python[0], tmp_path, "arenas.py", hz=99,
                                   extra=["--mode", "alloc"])
    held = json.loads(r.stdout.strip().splitlines()[-1])["small"]
    arenas = sum(c for f, c in stacks
                 if "small" in map(func_name, f) and any(x.startswith("mmap (") for x in f))
    assert 0.8 * held <= arenas <= 1.5 * held, (arenas, held)
