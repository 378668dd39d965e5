"""pyperf-bpf diff BASE NEW: two runs of a workload whose slow() takes twice
as long (relative to fast()) in the second.  The report's first row is slow,
its change of total share within 3 points of the workload's own clock; the
differential flame graph colours slow red (checked in Chromium too) and the
frames that shrank blue; the pprof holds NEW less BASE scaled; two separate runs
of one workload differ by what their own clocks say, and a run diffed with
itself changes nothing; folded, pprof and speedscope inputs, mixed,
give the same table; different modes, an empty profile and an unreadable
file are refused in one line.  One interpreter (the newest): what is read
back is our own output, whatever the version."""
import json
import math
import os
import re
import xml.etree.ElementTree as ET

import pytest

from conftest import SUPPORTED, record_workload, run_pyperf
from pprofread import pprof_raw
from test_out_svg import SVG_NS, browser  # noqa: F401 (a fixture)

ROW_RE = re.compile(r"^\s*([+-]\d+\.\d+)\s+([+-]\d+\.\d+)\s+(\d+\.\d+)%\s+(\d+\.\d+)%\s+(.*)$")


# Python frames only: what diff compares is any profile's frames, and how
# the interpreter's time splits among its C functions differs from one run
# of a script to the next (3.15's _Py_Dealloc 15 % of one run, 9 % of the
# next), as does the first second's share of stacks whose native part waits
# for an unwind table on a loaded machine (20 % once, under 1 % mostly)
PYTHON_ONLY = ["--python-only"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """(base dir, new dir, base truth, new truth): slowfast.py at factor 1 and 2"""
    assert SUPPORTED, "no supported CPython"
    out = []
    for factor in ("1", "2"):
        d = tmp_path_factory.mktemp("run" + factor)
        record_workload(SUPPORTED[-1][0], d, "slowfast.py", "2.5", factor, str(d / "t.json"),
                        hz=499, also=[".pb.gz", ".speedscope.json"], extra=PYTHON_ONLY)
        out.append((d, json.loads((d / "t.json").read_text())))
    return out


@pytest.fixture(scope="module")
def rerun(tmp_path_factory):
    """(dir, truth): slowfast.py at factor 1 again, a run of its own"""
    d = tmp_path_factory.mktemp("rerun")
    record_workload(SUPPORTED[-1][0], d, "slowfast.py", "2.5", "1", str(d / "t.json"), hz=499,
                    extra=PYTHON_ONLY)
    return d, json.loads((d / "t.json").read_text())


def table(text):
    """[(Δtotal, Δown, before, after, function)] of the report"""
    return [(float(m.group(1)), float(m.group(2)), float(m.group(3)), float(m.group(4)),
             m.group(5)) for m in map(ROW_RE.match, text.splitlines()) if m]


def diff(*args):
    r = run_pyperf(["diff"] + [str(a) for a in args], timeout=120)
    assert r.returncode == 0, r.stderr
    return r


def test_slow_leads_the_table_with_the_true_change(runs, tmp_path):
    (b, tb), (n, tn) = runs
    rows = table(diff(b / "p.folded", n / "p.folded").stdout)
    assert rows and rows[0][4].startswith("slow ("), rows[:5]
    truth = 100 * (tn["slow"] / tn["process"] - tb["slow"] / tb["process"])
    assert abs(rows[0][0] - truth) <= 3, (rows[0], truth, tb, tn)
    assert rows[0][0] > 10, rows[0]               # about +17 points: 1/3 -> 1/2 of the work
    fast = [r for r in rows if r[4].startswith("fast (")]
    assert fast and fast[0][0] < -5, rows[:5]     # about -8: 1/3 -> 1/4


def test_mixed_formats_give_the_same_table(runs):
    (b, _), (n, _) = runs
    ref = table(diff(b / "p.folded", n / "p.folded").stdout)
    for base, new in ((b / "p.pb.gz", n / "p.speedscope.json"),
                      (b / "p.speedscope.json", n / "p.folded")):
        got = table(diff(base, new).stdout)
        assert len(got) == len(ref), (got, ref)
        for g, r in zip(got, ref):
            assert g[4] == r[4] and all(abs(x - y) < 0.02 for x, y in zip(g[:4], r[:4])), (g, r)


def test_a_run_against_itself_changes_nothing(runs):
    (b, _), _ = runs
    for other in (b / "p.folded", b / "p.pb.gz"):
        rows = table(diff(b / "p.folded", other).stdout)
        assert rows and all(abs(r[0]) < 0.01 and abs(r[1]) < 0.01 for r in rows), rows[:5]


def test_two_runs_of_one_workload_differ_by_their_own_clocks(runs, rerun):
    """Two separate runs of the same workload (factor 1): slow, fast and
    steady each change their share by what the two runs' own clocks say,
    within 3 points; every function changes by no more than 4.5 standard
    errors of the difference of two shares from those sample counts (at
    least 1 point).  Then the changed workload
    against the rerun finds slow's true change, as against the first run."""
    (b, tb), (n, tn) = runs
    r, tr = rerun
    out = diff(b / "p.folded", r / "p.folded", "--top", "1000").stdout
    n1, n2 = map(int, re.findall(r"\((\d+) samples\)", out)[:2])
    rows = table(out)
    for fn in ("slow", "fast", "steady"):
        row = [x for x in rows if x[4].startswith(fn + " (")]
        truth = 100 * (tr[fn] / tr["process"] - tb[fn] / tb["process"])
        assert row and abs(row[0][0] - truth) <= 3, (fn, row, truth, tb, tr)
    for change, _, before, after, fn in rows:
        p = (before + after) / 200
        bound = max(1.0, 450 * math.sqrt(p * (1 - p) * (1 / n1 + 1 / n2)))
        assert abs(change) <= bound, (fn, change, bound, n1, n2)
    rows = table(diff(r / "p.folded", n / "p.folded").stdout)
    truth = 100 * (tn["slow"] / tn["process"] - tr["slow"] / tr["process"])
    assert rows[0][4].startswith("slow (") and abs(rows[0][0] - truth) <= 3, (rows[:3], truth)


def test_differential_flame_graph_and_pprof(runs, tmp_path, browser):
    (b, tb), (n, tn) = runs
    svg, pb = tmp_path / "d.svg", tmp_path / "d.pb.gz"
    diff(b / "p.folded", n / "p.folded", "-o", svg, "-o", pb, "--no-lines")
    frames = [g for g in ET.parse(svg).getroot().iter(SVG_NS + "g") if g.get("class") == "f"]
    slow = [g for g in frames if g.get("data-name", "").startswith("slow (")]
    fast = [g for g in frames if g.get("data-name", "").startswith("fast (")]
    assert slow and fast, [g.get("data-name") for g in frames][:20]
    red = re.compile(r"rgb\(255,(\d+),\1\)")
    blue = re.compile(r"rgb\((\d+),\1,255\)")
    # the main path of each (a sliver of either may sit elsewhere, e.g.
    # under a start-up marker, in one run only)
    slow = max(slow, key=lambda g: int(g.get("data-samples")))
    fast = max(fast, key=lambda g: int(g.get("data-samples")))
    fill = slow.find(SVG_NS + "rect").get("fill")
    assert red.fullmatch(fill) and int(red.fullmatch(fill).group(1)) < 200, fill
    assert float(slow.get("data-delta")) > 10
    title = slow.find(SVG_NS + "title").text
    assert "base " in title and "points" in title, title
    assert blue.fullmatch(fast.find(SVG_NS + "rect").get("fill")), fast.find(SVG_NS + "rect").get("fill")
    assert float(fast.get("data-delta")) < -5
    # as a browser draws it
    browser.s("POST", "/url", {"url": f"file://{svg}"})
    fill = browser.js("var v = Array.from(document.querySelectorAll('g.f'))"
                      ".filter(g => g.getAttribute('data-name').startsWith('slow ('));"
                      "v.sort((a, b) => b.getAttribute('data-samples') - a.getAttribute('data-samples'));"
                      "return getComputedStyle(v[0].querySelector('rect')).fill")
    assert re.fullmatch(r"rgb\(255, (\d+), \1\)", fill), fill
    # the pprof: NEW less BASE scaled to NEW's total, slow's samples positive
    samples = pprof_raw(str(pb))
    assert samples, "empty pprof"
    slow_v = sum(v for v, stack, _ in samples if "slow" in stack)
    fast_v = sum(v for v, stack, _ in samples if "fast" in stack)
    assert slow_v > 0 > fast_v, samples[:10]
    # NEW less BASE scaled to NEW's total: the differences sum to nothing
    assert abs(sum(v for v, _, _ in samples)) <= len(samples), samples[:10]


@pytest.mark.parametrize("what", ["empty", "unreadable", "garbage"])
def test_bad_inputs_are_one_line_and_exit_2(runs, tmp_path, what):
    (b, _), _ = runs
    bad = tmp_path / "bad.folded"
    if what == "empty":
        bad.write_text("")
    elif what == "garbage":
        bad.write_bytes(b"\x1f\x8b\x08garbage")
    r = run_pyperf(["diff", str(b / "p.folded"), str(bad)], timeout=60)
    assert r.returncode == 2 and r.stdout == "", (r.returncode, r.stdout, r.stderr)
    assert r.stderr.count("\n") == 1 and str(bad) in r.stderr, r.stderr


def test_profiles_of_different_modes_are_refused(runs, tmp_path):
    (b, _), _ = runs
    faults = tmp_path / "f.pb.gz"
    stacks, _, r = record_workload(SUPPORTED[-1][0], tmp_path, "faults.py", hz=499,
                                   also=[".pb.gz"], extra=["--mode", "faults"])
    os.rename(tmp_path / "p.pb.gz", faults)
    r = run_pyperf(["diff", str(b / "p.pb.gz"), str(faults)], timeout=60)
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert "different modes" in r.stderr, r.stderr
