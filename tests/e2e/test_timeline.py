"""-f timeline: every sample in time, with GC pauses, imports and off-CPU
blocks as events, in Chrome's trace-event JSON.  Ground truth:
workloads/timeline.py times its own phases with time.monotonic() (the
profiler's clock) and its collections with gc.callbacks.  The file is opened
with a real reader, speedscope's (from npm, by scripts/setup --test-deps) in
Chromium, and its samples must add up to the same recording's folded
profile.  Which interpreters: the timeline is built in the loader from
records every version's sampler sends alike, so the marker checks run on the
first and the last interpreter with USDT markers (Debian's 3.11, sid's
newest) and the sums on one without (pyenv's newest)."""
import gzip
import json
import os
import re
import subprocess
from collections import Counter

import pytest

from conftest import WORKLOADS, parse_folded, python_id, run_pyperf
from test_events import MARKED, UNMARKED

HZ = 199
PERIOD = 1.0 / HZ
SPEEDSCOPE = os.path.join(os.environ.get("PYPERF_SPEEDSCOPE", "/var/cache/pyperf-bpf/speedscope"),
                          "dist", "release", "index.html")


def frames_of(trace, sf):
    """The labels of stack frame sf, root first."""
    out, frames = [], trace["stackFrames"]
    while sf is not None:
        f = frames[sf]
        out.append(f["name"])
        sf = f.get("parent")
    return out[::-1]


def check_structure(trace):
    """What every reader relies on: names for each process and thread, each
    sample's frame in the tree, samples in time order per thread, complete
    events with a duration."""
    names = {(e["pid"], e.get("tid"), e["name"]) for e in trace["traceEvents"] if e["ph"] == "M"}
    last = {}
    for s in trace["samples"]:
        assert (s["pid"], 0, "process_name") in names, s
        assert (s["pid"], s["tid"], "thread_name") in names, s
        assert s["sf"] in trace["stackFrames"], s
        frames_of(trace, s["sf"])
        assert s["ts"] >= last.get((s["pid"], s["tid"]), 0), s
        last[(s["pid"], s["tid"])] = s["ts"]
    # a tree: each (parent, name, category) once
    nodes = Counter((f.get("parent"), f["name"], f["category"]) for f in trace["stackFrames"].values())
    assert not [k for k, n in nodes.items() if n > 1], nodes.most_common(3)
    for e in trace["traceEvents"]:
        assert e["ph"] in ("M", "X"), e
        if e["ph"] == "X":
            assert e["dur"] >= 0 and e["ts"] > 0, e
    return trace


@pytest.fixture(scope="module", params=[p for p in (MARKED[:1] + MARKED[-1:])[:2]] or [None],
                ids=lambda p: python_id(p) if p else "none")
def wall_run(request, tmp_path_factory):
    """One --mode wall recording of timeline.py as a timeline (and a report)."""
    if request.param is None:
        pytest.fail("no interpreter with USDT markers (Debian's python3.11, scripts/sid-pythons)")
    tmp = tmp_path_factory.mktemp("timeline")
    truth, out = tmp / "truth.json", tmp / "run.trace.json"
    r = run_pyperf(["--mode", "wall", "-F", str(HZ), "-o", str(out), "-o", str(tmp / "run.txt"),
                    "--", request.param[0], os.path.join(WORKLOADS, "timeline.py"), str(truth)])
    assert r.returncode == 0, r.stderr
    return check_structure(json.loads(out.read_text())), json.loads(truth.read_text()), out


def sleep_frame():
    """<module>'s frame at the workload's time.sleep line"""
    with open(os.path.join(WORKLOADS, "timeline.py")) as f:
        line = next(i for i, t in enumerate(f, 1) if t.startswith("time.sleep("))
    return f"<module> ({os.path.join(WORKLOADS, 'timeline.py')}:{line})"


def events(trace, cat):
    return [e for e in trace["traceEvents"] if e.get("cat") == cat]


def near(us, seconds):
    return abs(us / 1e6 - seconds) <= PERIOD


def test_markers_are_where_the_workload_put_them(wall_run):
    """The sleep is an off-CPU event, the slow import an import event and each
    collection a GC event, each starting and ending within one sample period
    of the workload's own clock."""
    trace, truth, _ = wall_run
    m = truth["marks"]
    off = [e for e in events(trace, "offcpu")
           if near(e["ts"], m["sleep_start"]) and near(e["ts"] + e["dur"], m["sleep_end"])]
    assert len(off) == 1, (m, [e for e in events(trace, "offcpu")
                               if m["sleep_start"] - 1 < e["ts"] / 1e6 < m["sleep_end"] + 1])
    assert off[0]["args"]["python"] == sleep_frame(), off[0]
    imp = [e for e in events(trace, "import") if e["name"] == "import slow_module"]
    assert len(imp) == 1, events(trace, "import")
    assert near(imp[0]["ts"], m["import_start"]) and \
        near(imp[0]["ts"] + imp[0]["dur"], m["import_end"]), (imp, m)
    gcs = [e for e in events(trace, "gc")
           if m["gc_start"] * 1e6 <= e["ts"] and e["ts"] + e["dur"] <= m["gc_end"] * 1e6]
    assert len(gcs) == len(truth["gcs"]) > 0, (len(gcs), len(truth["gcs"]))
    for e, (start, stop, gen) in zip(gcs, truth["gcs"]):
        assert near(e["ts"], start) and near(e["ts"] + e["dur"], stop), (e, start, stop)
        assert e["args"]["generation"] == gen, (e, gen)


def test_samples_are_where_the_workload_put_them(wall_run):
    """Samples taken while the workload burned CPU are in burn(); the sleep
    is one off-CPU sample at its start, under <module>, weighing its
    length."""
    trace, truth, _ = wall_run
    m = truth["marks"]
    main = [s for s in trace["samples"] if s["pid"] == s["tid"]]
    burning = [s for s in main if m["sleep_end"] + 0.01 <= s["ts"] / 1e6 <= m["gc_start"] - 0.01]
    assert len(burning) >= 0.15 * HZ, (len(burning), m)
    inburn = sum(any(f.startswith("burn (") for f in frames_of(trace, s["sf"])) for s in burning)
    assert inburn >= 0.9 * len(burning), \
        (inburn, len(burning), Counter(frames_of(trace, s["sf"])[-1] for s in burning).most_common(5))
    sleeps = [s for s in main if s["name"] == "off-cpu" and near(s["ts"], m["sleep_start"]) and
              abs(s["weight"] / 1e9 - (m["sleep_end"] - m["sleep_start"])) <= PERIOD]
    assert len(sleeps) == 1, (m, [s for s in main if s["name"] == "off-cpu" and
                                  m["sleep_start"] - 0.05 < s["ts"] / 1e6 < m["sleep_end"]])
    assert sleep_frame() in frames_of(trace, sleeps[0]["sf"]), frames_of(trace, sleeps[0]["sf"])


def speedscope_sandwich(path, tmp_path):
    """speedscope's own importer and sandwich view, in headless Chromium: the
    profile's name and its table rows [(total ms, self ms, symbol)]."""
    if not os.path.exists(SPEEDSCOPE):
        pytest.fail(f"speedscope is not installed ({SPEEDSCOPE}): scripts/setup --test-deps "
                    "installs it from npm")
    import base64
    loader = tmp_path / "load.js"
    loader.write_text("speedscope.loadFileFromBase64(%s, %s)" % (
        json.dumps(os.path.basename(path)), json.dumps(base64.b64encode(path.read_bytes()).decode())))
    r = subprocess.run(["chromium", "--headless", "--no-sandbox", "--disable-gpu",
                        "--allow-file-access-from-files", "--virtual-time-budget=10000",
                        "--dump-dom", f"file://{SPEEDSCOPE}#localProfilePath={loader}&view=sandwich"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    text = re.sub(r"<(style|script)\b.*?</\1>", "", r.stdout, flags=re.S)
    cells = [c.strip() for c in re.split(r"<[^>]+>", text) if c.strip()]
    rows = []
    for i in range(len(cells) - 2):
        a, b = re.fullmatch(r"([\d.]+)(ms|s|µs) \(.*\)", cells[i]), \
            re.fullmatch(r"([\d.]+)(ms|s|µs) \(.*\)", cells[i + 1])
        if a and b and not re.fullmatch(r"[\d.]+(ms|s|µs) \(.*\)", cells[i + 2]):
            scale = {"s": 1000, "ms": 1, "µs": 0.001}
            rows.append((float(a[1]) * scale[a[2]], float(b[1]) * scale[b[2]], cells[i + 2]))
    return cells, rows


def test_speedscope_reads_it(wall_run, tmp_path):
    """Opened by speedscope: the main thread's profile, named from our
    metadata, whose sandwich table gives burn() the CPU and the native leaf
    the workload waits in the time it slept: the 0.3 s sleep and the 0.15 s
    import, and at most 10 % more (the same C library call also reads files;
    its name depends on the C library).  speedscope weighs a sample by the
    time to the next one, so this holds because an off-CPU block's sample
    sits at its start; the next sample after a block comes up to a period
    after it ends (the next tick on the CPU), so each of the two blocks may
    gain up to a period, as the lower bound allows 3 lost (seen on a loaded
    machine: 504 ms against 1.1 x 453)."""
    trace, truth, path = wall_run
    cells, rows = speedscope_sandwich(path, tmp_path)
    assert any("MainThread" in c and "timeline.py" in c for c in cells), cells[:40]
    assert rows, cells[:80]
    m = truth["marks"]
    asleep = 1000 * (m["sleep_end"] - m["sleep_start"] + m["import_end"] - m["import_start"])
    assert any(asleep - 1000 * 3 * PERIOD <= r[1] <= 1.1 * asleep + 1000 * 3 * PERIOD
               and "(libc" in r[2]
               for r in rows), (asleep, rows[:10])
    assert any(r[2].startswith("burn (") and r[0] >= 500 for r in rows), rows[:20]


@pytest.mark.parametrize("python", UNMARKED[-1:] or [None],
                         ids=lambda p: python_id(p) if p else "none")
def test_samples_add_up_to_the_profile(python, tmp_path):
    """--mode cpu, one recording written twice: the timeline's samples,
    grouped by stack, are the folded profile's counts, stack for stack (none
    lost, none left unnamed); an interpreter without markers gets no marker
    events and the window holds everything."""
    if python is None:
        pytest.fail("no pyenv CPython 3.12+ to record")
    folded, out = tmp_path / "p.folded", tmp_path / "p.trace.json"
    r = run_pyperf(["-F", "499", "--no-kernel", "-o", str(folded), "-o", str(out), "--",
                    python[0], os.path.join(WORKLOADS, "timeline.py"), str(tmp_path / "t.json")])
    assert r.returncode == 0, r.stderr
    trace = check_structure(json.loads(out.read_text()))
    od = trace["otherData"]
    assert od["samples_lost_ring_full"] == "0" and od["samples_of_unnamed_stacks"] == "0", od
    assert od["samples_older_than_the_window"] == "0", od
    assert not events(trace, "gc") and not events(trace, "import"), "no markers in this build"
    got = Counter()
    for s in trace["samples"]:
        got[";".join(frames_of(trace, s["sf"]))] += s["weight"]
    want = Counter()
    for frames, count in parse_folded(folded.read_text()):
        want[";".join(frames)] += count
    assert sum(want.values()) > 200 and got == want, \
        (sum(got.values()), sum(want.values()), (got - want).most_common(3),
         (want - got).most_common(3))


def test_window_keeps_the_newest_minutes_gzipped(tmp_path):
    """--timeline-minutes 0.005 (0.3 s) of a 1.5 s run, to .json.gz: only the
    newest 0.3 s are written, and otherData says how many were older; a bad
    value is a one-line error."""
    out = tmp_path / "run.json.gz"
    r = run_pyperf(["-F", "499", "--timeline-minutes", "0.005", "-o", str(out), "--",
                    "/usr/bin/python3", "-c",
                    "import time\nend = time.monotonic() + 1.5\nwhile time.monotonic() < end: pass"])
    assert r.returncode == 0, r.stderr
    trace = check_structure(json.loads(gzip.decompress(out.read_bytes())))
    ts = [s["ts"] for s in trace["samples"]]
    assert ts and (max(ts) - min(ts)) / 1e6 <= 0.3 + 2 / 499, (min(ts), max(ts))
    assert int(trace["otherData"]["samples_older_than_the_window"]) > 200, trace["otherData"]
    for bad in ("0", "x", "-1"):
        r = run_pyperf(["--timeline-minutes", bad, "-o", str(tmp_path / "b.trace.json"), "--",
                        "/usr/bin/python3", "-c", "pass"])
        assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and \
            "--timeline-minutes" in r.stderr, r.stderr
        assert not (tmp_path / "b.trace.json").exists()
