"""`daemon --push` into a real Pyroscope server (v1.9.0, built by
scripts/setup --test-deps from its Go module), queried back through its
querier API.  The server is stopped and started again (on the same data
directory) during the run: the profiles it holds for the workload must add
up exactly to what the daemon wrote of it (a --dir sink beside the push
holds the same pprofs), and show the split the workload measured itself.
One interpreter: the push does not depend on the version."""
import json
import os
import signal
import socket
import subprocess
import time
import urllib.request

import pytest

from conftest import both_builds, SUPPORTED, WORKLOADS, Daemon
from pprofread import pprof_raw

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
             "-ingester.final-sleep=0s"], stdout=self.log, stderr=subprocess.STDOUT,
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

    def stop(self):
        self.p.send_signal(signal.SIGTERM)
        self.p.wait(timeout=60)
        self.log.close()


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
        # exactly what the daemon wrote of the workload, no more, no less;
        # the server takes the last pushes in a moment after it acknowledged
        # them (a loaded machine's full run once queried 1288 of 1389), so
        # the query is asked again, for up to 30 s, until it has them all
        mine = [f for f in os.listdir(tmp_path / "d") if f.startswith(f"split-pyro-{w.pid}-")]
        written = sum(c for f in mine for c, _, _ in pprof_raw(str(tmp_path / "d" / f)))
        end = time.monotonic() + 30
        while True:
            fg = srv.call("SelectMergeStacktraces", dict(
                span, profile_typeID="process_cpu:samples:count:cpu:nanoseconds",
                label_selector='{service_name="split-pyro"}'))["flamegraph"]
            if int(fg["total"]) >= written or time.monotonic() > end:
                break
            time.sleep(1)
    finally:
        if d:
            d.kill()
        if w and w.poll() is None:
            w.kill()
        srv.stop()
    assert int(fg["total"]) == written > 300, (fg["total"], written, len(mine))
    leaf = leaf_totals(fg)
    truth = json.load(open(tmp_path / "t.json"))
    n = sum(leaf.values())
    for k in leaf:
        want = truth[k] / sum(truth[x] for x in leaf)
        assert abs(leaf[k] / n - want) < 0.06, (leaf, truth)
