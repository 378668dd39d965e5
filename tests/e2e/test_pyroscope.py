"""`daemon --push` into a real Pyroscope server (v1.9.0, built by
scripts/setup --test-deps from its Go module), queried back through its
querier API.  The server is stopped and started again (on the same data
directory) during the run: the profiles it holds for the workload must add
up exactly to what the daemon wrote of it (a --dir sink beside the push
holds the same pprofs), and show the split the workload measured itself.
One interpreter: the push does not depend on the version."""
import datetime
import json
import os
import re
import signal
import socket
import subprocess
import time
import urllib.request

import pytest

from conftest import both_builds, SUPPORTED, WORKLOADS, Daemon
from pprofread import decode

PYROSCOPE = os.path.join(os.environ.get("PYPERF_PYROSCOPE", "/var/cache/pyperf-bpf/pyroscope"),
                         "pyroscope")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Pyroscope:
    def __init__(self, tmp_path, ports, n):
        if not os.access(PYROSCOPE, os.X_OK):
            pytest.fail(f"no Pyroscope at {PYROSCOPE}: scripts/setup --test-deps builds it")
        http, grpc, gossip = ports
        self.url = f"http://127.0.0.1:{http}"
        self.log = open(tmp_path / f"pyroscope-{n}.log", "w")
        data = tmp_path / "pyroscope-data"
        self.p = subprocess.Popen(
            [PYROSCOPE, f"-server.http-listen-port={http}", f"-server.grpc-listen-port={grpc}",
             f"-memberlist.bind-port={gossip}", f"-pyroscopedb.data-path={data}",
             "-storage.backend=filesystem", f"-storage.filesystem.dir={data}/shared",
             "-self-profiling.disable-push", "-usage-stats.enabled=false",
             "-ingester.min-ready-duration=0s", "-ingester.join-after=0s",
             "-ingester.final-sleep=0s", "-log.level=debug"], stdout=self.log, stderr=subprocess.STDOUT,
            cwd=tmp_path)  # it writes state of its own (data-compactor/) where it runs
        end = time.monotonic() + 90
        while time.monotonic() < end:
            assert self.p.poll() is None, open(self.log.name).read()[-3000:]
            try:
                if urllib.request.urlopen(self.url + "/ready", timeout=2).status == 200:
                    return
            except OSError:
                pass
            time.sleep(0.5)
        pytest.fail("Pyroscope did not get ready: " + open(self.log.name).read()[-3000:])

    def call(self, method, body):
        req = urllib.request.Request(f"{self.url}/querier.v1.QuerierService/{method}",
                                     data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
        return json.load(urllib.request.urlopen(req, timeout=30))

    def total(self, start_ms, end_ms, service):
        """the samples of `service` the server holds in [start_ms, end_ms]"""
        fg = self.call("SelectMergeStacktraces", {
            "start": start_ms, "end": end_ms, "profile_typeID": CPU,
            "label_selector": f'{{service_name="{service}"}}'})["flamegraph"]
        return int(fg.get("total", 0))

    def stop(self):
        self.p.send_signal(signal.SIGTERM)
        self.p.wait(timeout=60)
        self.log.close()


CPU = "process_cpu:samples:count:cpu:nanoseconds"


def profile_of(path):
    """(its start in unix ms, its sample count) of a pprof file"""
    head, samples, _, _ = decode(path)
    # "Time: 2026-11-27 02:25:45.043177887 +0000 UTC"
    day, clock = head["Time"].split()[:2]
    secs, _, frac = clock.partition(".")
    t = datetime.datetime.fromisoformat(f"{day}T{secs}+00:00").timestamp()
    return int(t) * 1000 + int((frac + "000")[:3]), sum(c for c, _, _, _ in samples)


def acked_while_stopping(log):
    """the `from` seconds of the /ingest requests a Pyroscope server answered
    with a 2xx after its SIGTERM (its log at debug level)"""
    out, stopping = set(), False
    for line in open(log):
        if "received SIGINT/SIGTERM" in line:
            stopping = True
        m = re.search(r'uri="/ingest\?[^"]*&from=(\d+)&[^"]*" status=2\d\d ', line)
        if stopping and m:
            out.add(int(m.group(1)))
    return out


def leaf_totals(flamegraph, names=("leaf_a", "leaf_b", "leaf_c")):
    """Total of the nodes with these names (they never nest) in a flame graph
    as the querier returns it: per level, [offset, total, self, name] quads."""
    out = dict.fromkeys(names, 0)
    for level in flamegraph["levels"]:
        v = [int(x) for x in level.get("values", [])]
        for i in range(0, len(v), 4):
            name = flamegraph["names"][v[i + 3]]
            if name in out:
                out[name] += v[i + 1]
    return out


@both_builds
def test_daemon_push_into_pyroscope_across_restarts(build, tmp_path):
    assert SUPPORTED, "no supported CPython"
    ports = (free_port(), free_port(), free_port())
    srv = Pyroscope(tmp_path, ports, 1)
    w, d = None, None
    t0 = int(time.time() * 1000)
    try:
        d = Daemon(["-F", "99", "-i", "1", "--push", srv.url, "--spool", str(tmp_path / "spool"),
                    "--dir", str(tmp_path / "d"), "--python-only"], tmp_path)
        text = d.text
        w = subprocess.Popen([SUPPORTED[-1][0], os.path.join(WORKLOADS, "split.py"), "14",
                              str(tmp_path / "t.json")], stdout=subprocess.PIPE, text=True,
                             env=dict(os.environ, PYPERF_SERVICE="split-pyro"))
        assert w.stdout.readline().strip() == "ready"
        assert d.wait_log("stats:", count=3), text()
        srv.stop()                                   # the server goes away ...
        n = text().count("stats:")
        assert d.wait_log("stats:", count=n + 3), text()
        assert "failed" in text(), text()            # ... the daemon spools ...
        srv = Pyroscope(tmp_path, ports, 2)          # ... and it comes back
        assert d.wait_log("works again", timeout=90), text()
        w.wait(timeout=60)
        assert d.wait_log("stats:", count=text().count("stats:") + 2), text()
        rc, err = d.stop()
        assert rc == 0, err
        assert "dropped:" not in text(), text()      # the server refused nothing
        assert os.listdir(tmp_path / "spool") == []
        span = {"start": t0 - 60000, "end": int(time.time() * 1000) + 60000}
        services = srv.call("LabelValues", dict(span, name="service_name")).get("names", [])
        assert "split-pyro" in services, services
        # exactly what the daemon wrote of the workload, no more, no less,
        # profile by profile (each is asked for around its own time); the
        # server takes the last pushes in a moment after it acknowledged
        # them (a loaded machine's full run once queried 1288 of 1389), so
        # the query is asked again, for up to 30 s, until it has them all
        mine = [f for f in os.listdir(tmp_path / "d") if f.startswith(f"split-pyro-{w.pid}-")]
        written = dict(profile_of(str(tmp_path / "d" / f)) for f in mine)
        end = time.monotonic() + 30
        while True:
            got = {t: srv.total(t - 100, t + 100, "split-pyro") for t in written}
            if got == written or time.monotonic() > end:
                break
            time.sleep(1)
        fg = srv.call("SelectMergeStacktraces", dict(
            span, profile_typeID=CPU, label_selector='{service_name="split-pyro"}'))["flamegraph"]
    finally:
        if d:
            d.kill()
        if w and w.poll() is None:
            w.kill()
        srv.stop()
    assert sum(written.values()) > 300 and len(written) >= 10, written
    # A profile the first server acknowledged after it was told to stop, and
    # then does not hold, is the server's loss, not the daemon's: stopping,
    # Pyroscope 1.9 writes its ingester's head to disk while its HTTP server
    # still answers /ingest (its log shows the order).  Twice in loaded CI
    # runs one profile of ~14 was missing, with no log kept to say which;
    # now only such a one is let pass, named, and any other missing, doubled
    # or partial profile fails.
    stopping = acked_while_stopping(tmp_path / "pyroscope-1.log")
    lost = {t: n for t, n in written.items() if got[t] == 0 and t // 1000 in stopping}
    for t in lost:
        print(f"profile at {t} ms: acknowledged by the stopping server, not kept")
    assert {t: n for t, n in got.items() if t not in lost} == \
        {t: n for t, n in written.items() if t not in lost}, (got, written, sorted(stopping))
    assert int(fg["total"]) == sum(written.values()) - sum(lost.values()), (fg["total"], written)
    leaf = leaf_totals(fg)
    truth = json.load(open(tmp_path / "t.json"))
    n = sum(leaf.values())
    for k in leaf:
        want = truth[k] / sum(truth[x] for x in leaf)
        assert abs(leaf[k] / n - want) < 0.06, (leaf, truth)
