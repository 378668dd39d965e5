"""OTLP profiles (opentelemetry-proto v1.10.0, v1development), read back with
the official bindings (PyPI's opentelemetry-proto, tests/otlpread.py).

`record -o p.otlp`: one recording written as folded stacks and as OTLP must
hold the same stacks with the same counts, frame for frame, with the
resource, frame types, mappings and build-ids OTLP readers use.  The writer
does not depend on the interpreter's version (the stacks it is handed do, and
the folded and pprof tests cover every version): it runs on the newest and
the oldest supported CPython."""
import os
import re
import socket
import subprocess
import time

import pytest

from conftest import SUPPORTED, otlp_decode, python_id, record_workload

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
