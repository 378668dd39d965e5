"""OTLP profiles (opentelemetry-proto v1.10.0, v1development), read back with
the official bindings (PyPI's opentelemetry-proto, tests/otlpread.py).

`record -o p.otlp`: one recording written as folded stacks and as OTLP must
hold the same stacks with the same counts, frame for frame, with the
resource, frame types, mappings and build-ids OTLP readers use.  The writer
does not depend on the interpreter's version (the stacks it is handed do, and
the folded and pprof tests cover every version): it runs on the newest and
the oldest supported CPython.

`daemon --otlp`: into a real OpenTelemetry Collector (built by scripts/setup
--test-deps from its Go modules) with the OTLP receiver (over HTTP and over
gRPC, one test each) and the file exporter.  The Collector is stopped and started again during the run; every
interval's samples must still arrive exactly once, and the workload's
profile must show the split it measured itself."""
import json
import os
import re
import signal
import socket
import subprocess
import time

import pytest

from conftest import (both_builds, OTELCOL, SUPPORTED, WORKLOADS, Daemon, otlp_decode, python_id,
                      record_workload)

def folded_label(fr):
    """The folded output's label of an OTLP frame."""
    if fr["type"] == "kernel":
        return f"{fr['name']}_[k]"
    if fr["type"] == "cpython":
        return f"{fr['name']} ({fr['file']}:{fr['line']})"
    if fr["type"] == "native":
        return f"{fr['name']} ({os.path.basename(fr['file'])})"
    return fr["name"]                    # markers: [truncated], [native incomplete], ...


def stacks(resources):
    out = {}
    for res in resources:
        for prof in res["profiles"]:
            for s in prof["samples"]:
                key = tuple(folded_label(f) for f in reversed(s["stack"]))
                out[key] = out.get(key, 0) + s["value"]
    return out


# the newest and the oldest supported CPython
ENDS = [SUPPORTED[-1], SUPPORTED[0]] if len(SUPPORTED) > 1 else SUPPORTED


@pytest.mark.parametrize("python", ENDS, ids=[python_id(p) for p in ENDS])
def test_otlp_file_holds_the_same_stacks_as_folded(python, tmp_path):
    folded, (otlp,), r = record_workload(python[0], tmp_path, "split.py", "2",
                                         str(tmp_path / "t.json"), hz=499, also=[".otlp"])
    folded = {tuple(f): c for f, c in folded}
    got = otlp_decode(otlp)
    assert got["checks"] == [], got["checks"]
    assert got["requests"] == 1
    st = stacks(got["resources"])
    assert sum(st.values()) == sum(folded.values()) > 200
    differ = {k: (st.get(k), folded.get(k)) for k in set(st) | set(folded)
              if st.get(k) != folded.get(k)}
    assert not differ, differ


def test_otlp_resource_profile_and_frames(tmp_path):
    assert SUPPORTED, "no supported CPython"
    _, (otlp,), _ = record_workload(SUPPORTED[-1][0], tmp_path, "split.py", "2",
                                    str(tmp_path / "t.json"), hz=499, also=[".otlp"])
    got = otlp_decode(otlp)
    assert got["checks"] == [], got["checks"]
    (res,) = [r for r in got["resources"] if "split.py" in r["attrs"].get("process.command_line", "")]
    a = res["attrs"]
    assert a["host.name"] == socket.gethostname()
    assert isinstance(a["process.pid"], int) and a["process.pid"] > 0
    assert a["process.executable.name"] and a["service.name"] == "unknown_service:" + a["process.executable.name"]
    assert res["scope"][0] == "pyperf-bpf" and res["scope"][1]
    (prof,) = res["profiles"]
    assert prof["sample_type"] == ["samples", "count"]
    assert prof["period_type"] == ["cpu", "nanoseconds"] and prof["period"] == 1000000000 // 499
    assert 1.5e9 < prof["duration"] < 10e9 and abs(prof["time"] / 1e9 - time.time()) < 120
    assert len(prof["profile_id"]) == 32 and int(prof["profile_id"], 16)
    for s in prof["samples"]:
        assert s["attrs"]["thread.id"] > 0 and s["attrs"]["thread.name"] == "MainThread", s["attrs"]
    frames = [f for s in prof["samples"] for f in s["stack"]]
    py = [f for f in frames if f["type"] == "cpython"]
    assert any(f["name"] == "leaf_a" and f["line"] > 0 and f["file"].endswith("split.py") for f in py)
    assert all(f["mapping"] is None for f in py)
    # native frames sit in their binary's mapping, with its GNU build-id
    libc = [f for f in frames if f["type"] == "native" and f["mapping"]
            and os.path.basename(f["mapping"]) == "libc.so.6"]
    assert libc, frames[:20]
    notes = subprocess.run(["readelf", "-n", libc[0]["mapping"]], capture_output=True, text=True).stdout
    assert re.search(r"Build ID: " + libc[0]["build_id"] + r"\b", notes), (libc[0], notes)
    assert all(f["type"] in ("cpython", "native", "kernel", None) for f in frames)


# ---- the daemon into a real OpenTelemetry Collector ----

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Collector:
    """otelcol-pyperf with the OTLP/HTTP receiver on port and the file
    exporter writing what it received to out (proto, length-framed)."""

    def __init__(self, tmp_path, port, out, grpc_port=None):
        if not os.access(OTELCOL, os.X_OK):
            pytest.fail(f"no OpenTelemetry Collector at {OTELCOL}: scripts/setup --test-deps "
                        "builds it from its Go modules")
        self.out = out
        cfg = tmp_path / f"otelcol-{os.path.basename(out)}.yaml"
        cfg.write_text(f"""receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:{port}
      grpc:
        endpoint: 127.0.0.1:{grpc_port or free_port()}
exporters:
  file:
    path: {out}
    format: proto
    flush_interval: 100ms
service:
  telemetry:
    metrics:
      level: none
  pipelines:
    profiles:
      receivers: [otlp]
      exporters: [file]
""")
        self.log = open(tmp_path / f"otelcol-{os.path.basename(out)}.log", "w")
        self.p = subprocess.Popen([OTELCOL, "--config", str(cfg),
                                   "--feature-gates=service.profilesSupport"],
                                  stdout=self.log, stderr=subprocess.STDOUT)
        end = time.monotonic() + 30
        while time.monotonic() < end:               # until it listens
            assert self.p.poll() is None, open(self.log.name).read()
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.2)
        pytest.fail("the Collector did not start: " + open(self.log.name).read())

    def stop(self):
        self.p.send_signal(signal.SIGTERM)          # it flushes its file and exits
        self.p.wait(timeout=30)
        self.log.close()


@pytest.mark.parametrize("protocol", ["http/protobuf", "grpc"])
@both_builds
def test_daemon_otlp_into_the_collector_across_restarts(build, protocol, tmp_path):
    assert SUPPORTED, "no supported CPython"
    port, grpc_port = free_port(), free_port()
    col = Collector(tmp_path, port, tmp_path / "received-1.bin", grpc_port)
    url = f"http://127.0.0.1:{grpc_port if protocol == 'grpc' else port}"
    w, d = None, None
    outs = [col.out]
    try:
        d = Daemon(["-F", "99", "-i", "1", "--otlp", url, "--otlp-protocol", protocol,
                    "--spool", str(tmp_path / "spool")], tmp_path)
        text = d.text
        env = dict(os.environ, PYPERF_SERVICE="split-otlp")
        w = subprocess.Popen([SUPPORTED[-1][0], os.path.join(WORKLOADS, "split.py"), "14",
                              str(tmp_path / "t.json")], stdout=subprocess.PIPE, text=True, env=env)
        assert w.stdout.readline().strip() == "ready"
        assert d.wait_log("stats:", count=3), text()
        col.stop()                                  # the receiver goes away ...
        n = text().count("stats:")
        assert d.wait_log("stats:", count=n + 3), text()
        assert "failed" in text(), text()           # ... the daemon spools ...
        col = Collector(tmp_path, port, tmp_path / "received-2.bin", grpc_port)
        outs.append(col.out)                        # ... and it comes back
        assert d.wait_log("works again", timeout=90), text()
        w.wait(timeout=60)
        assert d.wait_log("stats:", count=text().count("stats:") + 2), text()
        rc, err = d.stop()
        assert rc == 0, err
    finally:
        if d:
            d.kill()
        if w and w.poll() is None:
            w.kill()
        col.stop()
    stats = d.stats()
    received = [otlp_decode(o, framed=True) for o in outs if os.path.exists(o)]
    for r in received:
        assert r["checks"] == [], r["checks"]
    resources = [res for r in received for res in r["resources"]]
    # exactly once: every sample the daemon counted arrived, none twice
    total = sum(s["value"] for res in resources for p in res["profiles"] for s in p["samples"])
    assert total == sum(s[0] for s in stats), (total, stats)
    assert os.listdir(tmp_path / "spool" / "otlp") == []
    # the workload's profiles: its service name, one per interval, in order,
    # and the split it measured
    mine = [res for res in resources if res["attrs"].get("service.name") == "split-otlp"]
    assert len(mine) >= 10, [r["attrs"] for r in resources]
    times = [res["profiles"][0]["time"] for res in mine]
    assert len(set(times)) == len(times)
    leaf = {"leaf_a": 0, "leaf_b": 0, "leaf_c": 0}
    for res in mine:
        for s in res["profiles"][0]["samples"]:
            for f in s["stack"]:
                if f["name"] in leaf:
                    leaf[f["name"]] += s["value"]
                    break
    truth = json.load(open(tmp_path / "t.json"))
    n = sum(leaf.values())
    # 14 s at 99 Hz: up to ~1400, half or less on a machine busy with other tests
    assert n > 300, leaf
    for k in leaf:
        want = truth[k] / sum(truth[x] for x in leaf)
        assert abs(leaf[k] / n - want) < 0.06, (leaf, truth)
