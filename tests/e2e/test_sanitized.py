"""A smoke run of the profiler built with AddressSanitizer and UBSan
(build/san/pyperf-bpf, which `make test` builds): record with every output,
wall mode with --async, dump and a short daemon (which lets binaries, names
and stacks go every second).  Any overread, leak or
undefined behaviour ends the run with a sanitizer report and a failure.
One interpreter: the loader's code paths, not the target's version, are
under test (the unit tests cover the parsers, the fuzz corpora their inputs)."""
import os
import re
import signal
import subprocess
import time

import pytest

from conftest import ROOT, SUPPORTED, WORKLOADS

SAN = os.path.join(ROOT, "build", "san", "pyperf-bpf")
ENV = dict(os.environ, ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:exitcode=99",
           UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1")


@pytest.fixture(scope="module")
def san():
    assert os.access(SAN, os.X_OK), f"{SAN} is missing: `make test` builds it"
    return SAN


def run(args, **kw):
    r = subprocess.run(args, capture_output=True, text=True, timeout=120, env=ENV, **kw)
    assert "Sanitizer" not in r.stderr and "runtime error" not in r.stderr, r.stderr[-4000:]
    return r


def test_record_every_output(san, tmp_path):
    outs = [tmp_path / f"p{s}" for s in (".folded", ".svg", ".pb.gz", ".speedscope.json", ".otlp", ".txt")]
    r = run([san, "record", "-F", "499"] + [a for o in outs for a in ("-o", str(o))] +
            ["--", SUPPORTED[-1][0], os.path.join(WORKLOADS, "split.py"), "2",
             str(tmp_path / "t.json")])
    assert r.returncode == 0, r.stderr[-2000:]
    assert all(o.stat().st_size > 0 for o in outs)


def test_wall_async(san, tmp_path):
    py = [p for p in SUPPORTED if p[1] >= (3, 12)] or SUPPORTED
    r = run([san, "record", "--mode", "wall", "--async", "-F", "199", "-o",
             str(tmp_path / "w.folded"), "--", py[-1][0],
             os.path.join(WORKLOADS, "async_tree.py"), "2"])
    assert r.returncode == 0, r.stderr[-2000:]


def test_dump_and_daemon(san, tmp_path):
    w = subprocess.Popen([SUPPORTED[-1][0], os.path.join(WORKLOADS, "split.py"), "30",
                          str(tmp_path / "t.json")], stdout=subprocess.PIPE, text=True)
    try:
        assert w.stdout.readline().strip() == "ready"
        r = run([san, "dump", "--native", "-p", str(w.pid)])
        assert r.returncode == 0 and "Thread" in r.stdout, r.stderr[-2000:]
        # --otlp to a port nothing listens on: the OTLP requests are
        # written, gzipped and spooled.  Binaries, names and stacks are let
        # go after 1 s (PYPERF_IDLE_CLOSE_S), so the prune, the sweep of
        # native names and the trim of idle stacks run every second, over
        # a short process of another interpreter that comes and goes
        d = subprocess.Popen([san, "daemon", "-F", "99", "-i", "1", "--dir", str(tmp_path / "d"),
                              "--otlp", "http://127.0.0.1:9", "--spool", str(tmp_path / "spool"),
                              "--stats"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, env=dict(ENV, PYPERF_IDLE_CLOSE_S="1"))
        time.sleep(1.5)
        short = subprocess.run([SUPPORTED[0][0], os.path.join(WORKLOADS, "split.py"), "1",
                                str(tmp_path / "t0.json")], capture_output=True, timeout=60)
        assert short.returncode == 0, short.stderr
        time.sleep(5)
        d.send_signal(signal.SIGTERM)
        out, err = d.communicate(timeout=60)
        assert d.returncode == 0, err[-4000:]
        assert "Sanitizer" not in err and "runtime error" not in err, err[-4000:]
        # the other interpreter's binaries were let go and their names freed
        freed = re.findall(r"\((\d+) open, (\d+) freed so far\)", err)
        assert freed and int(freed[-1][1]) >= 1, err[-4000:]
        assert os.listdir(tmp_path / "d")
        assert [f for f in os.listdir(tmp_path / "spool" / "otlp") if f.endswith(".prof")]
    finally:
        w.kill()
        w.wait()
