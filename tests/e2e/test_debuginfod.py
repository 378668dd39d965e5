"""Debug files from a debuginfod server (DEBUGINFOD_URLS): Debian's own
debuginfod serves, on loopback, the debug file of a library built here
whose busy function is static; the library itself is stripped.  Native
code only is checked: one interpreter (Debian's 3.11, else the newest)."""
import os
import shutil
import socket
import subprocess
import threading
import time
import urllib.request

import pytest
from conftest import PYPERF, STATIC, both_builds, SUPPORTED, WORKLOADS, parse_folded, run_pyperf

PYTHON = "/usr/bin/python3.11" if os.path.exists("/usr/bin/python3.11") else \
    (SUPPORTED[-1][0] if SUPPORTED else None)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def build_id(path):
    out = subprocess.run(["readelf", "-n", path], capture_output=True, text=True).stdout
    return next(line.split()[-1] for line in out.splitlines() if "Build ID" in line)


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    """(stripped library, its build-id, the folder the server serves)"""
    if not shutil.which("debuginfod"):
        pytest.fail("Debian's debuginfod is not installed (scripts/setup --test-deps)")
    assert PYTHON, "no interpreter to run the workload"
    tmp = tmp_path_factory.mktemp("dbgsrv")
    srv = tmp / "srv"
    srv.mkdir()
    full = srv / "libdbgspin.so"
    subprocess.run(["cc", "-g", "-O1", "-shared", "-fPIC", "-Wl,--build-id", "-o", str(full),
                    os.path.join(WORKLOADS, "dbgspin.c")], check=True)
    subprocess.run(["objcopy", "--only-keep-debug", str(full), str(srv / "libdbgspin.debug")],
                   check=True)
    stripped = tmp / "libdbgspin.so"
    subprocess.run(["strip", "--strip-all", "-o", str(stripped), str(full)], check=True)
    full.unlink()  # the server has the debug file only
    return stripped, build_id(str(stripped)), srv


@pytest.fixture(scope="module")
def server(lib, tmp_path_factory):
    """a debuginfod on loopback over lib's folder: its URL, once it serves"""
    _, bid, srv = lib
    port = free_port()
    db = tmp_path_factory.mktemp("dbgdb") / "db.sqlite"
    p = subprocess.Popen(["debuginfod", "-F", str(srv), "-p", str(port), "-d", str(db)],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{url}/buildid/{bid}/debuginfo", timeout=5) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            assert time.monotonic() < deadline, "debuginfod did not serve the debug file"
            time.sleep(0.3)
        yield url
    finally:
        p.kill()
        p.wait()


def spin_frames(out):
    """{name of the frame under dbg_spin: samples}"""
    leaf = {}
    for frames, count in parse_folded(out.read_text()):
        names = [f.rsplit(" (", 1)[0] for f in frames]
        if "dbg_spin" in names and names[-1] != "dbg_spin":
            name = names[names.index("dbg_spin") + 1]
            leaf[name] = leaf.get(name, 0) + count
    return leaf


def record(lib, tmp_path, env, seconds="2", extra=()):
    out = tmp_path / "p.folded"
    r = run_pyperf(["-F", "199", "-o", str(out), *extra, "--", PYTHON,
                    os.path.join(WORKLOADS, "dbgspin.py"), str(lib), seconds], env=env)
    assert r.returncode == 0, r.stderr
    return spin_frames(out), r


def clean_env(tmp_path, **more):
    env = {k: v for k, v in os.environ.items() if not k.startswith("DEBUGINFOD_")}
    env["DEBUGINFOD_CACHE_PATH"] = str(tmp_path / "cache")
    env.update(more)
    return env


@both_builds
def test_a_stripped_library_is_named_through_the_server(build, lib, server, tmp_path):
    """Without a server the static function is an address; with one its
    debug file is fetched (off the naming thread) and it is named, also in
    the stacks counted before the file came; the command keeps its
    DEBUGINFOD_URLS."""
    path, bid, _ = lib
    leaf, r = record(path, tmp_path, clean_env(tmp_path))
    assert "hidden_spin" not in leaf and sum(leaf.values()) > 100, leaf
    assert all(n.startswith("libdbgspin.so+0x") for n in leaf), leaf
    leaf, r = record(path, tmp_path, clean_env(tmp_path, DEBUGINFOD_URLS=server), extra=["-v"])
    assert r.stdout.splitlines()[0] == server, r.stdout
    total = sum(leaf.values())
    assert total > 100, (leaf, r.stderr)
    assert leaf.get("hidden_spin", 0) >= 0.95 * total, leaf
    assert f"debuginfod: {bid}: debug file {tmp_path / 'cache'}" in r.stderr, r.stderr
    assert os.path.exists(tmp_path / "cache" / bid / "debuginfo")


def test_no_server_no_debuginfod_client_is_loaded(lib, tmp_path):
    """Without DEBUGINFOD_URLS nothing loads libdebuginfod (and through it
    libcurl's forty-odd libraries, 7 MB of RSS): libdw's standard search for
    a debug file ends by asking debuginfod itself, loading the client first;
    ours searches the local places only.  The stripped library with no local
    debug file is still named from its own symbols.  The dynamic build (the
    static one has no such library to load)."""
    if os.path.realpath(PYPERF) == os.path.realpath(STATIC):
        pytest.skip("PYPERF_BIN is the static build")
    path, _, _ = lib
    leaf, r = record(path, tmp_path, clean_env(tmp_path, LD_DEBUG="files"))
    assert sum(leaf.values()) > 100 and all(n.startswith("libdbgspin.so+0x") for n in leaf), leaf
    loaded = [x for x in r.stderr.splitlines() if "dynamically loaded by" in x]
    assert not [x for x in loaded if "libdebuginfod" in x or "libcurl" in x], loaded


def black_hole():
    """a server that accepts and never answers: (URL, stop)"""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(64)
    held, done = [], threading.Event()

    def serve():
        s.settimeout(0.2)
        while not done.is_set():
            try:
                held.append(s.accept()[0])
            except OSError:
                pass

    t = threading.Thread(target=serve, daemon=True)
    t.start()

    def stop():
        done.set()
        t.join()
        for c in held:
            c.close()
        s.close()
    return f"http://127.0.0.1:{s.getsockname()[1]}", stop


@both_builds
def test_a_server_that_never_answers_costs_no_time(build, lib, tmp_path):
    """libdwfl asking the server itself held a 2 s recording for minutes;
    now the recording ends when the command does, the frames named as without a server,
    and -v says why"""
    path, bid, _ = lib
    url, stop = black_hole()
    try:
        t0 = time.monotonic()
        leaf, r = record(path, tmp_path, clean_env(tmp_path, DEBUGINFOD_URLS=url), extra=["-v"])
        took = time.monotonic() - t0
    finally:
        stop()
    assert took < 15, f"{took:.1f} s for a 2 s recording"
    assert sum(leaf.values()) > 100 and all(n.startswith("libdbgspin.so+0x") for n in leaf), leaf
    assert f"debuginfod: {bid}: the run ended before an answer" in r.stderr, r.stderr


@both_builds
def test_a_server_that_is_down_costs_a_line_in_verbose(build, lib, tmp_path):
    path, bid, _ = lib
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    leaf, r = record(path, tmp_path, clean_env(tmp_path, DEBUGINFOD_URLS=url), extra=["-v"])
    assert sum(leaf.values()) > 100 and all(n.startswith("libdbgspin.so+0x") for n in leaf), leaf
    line = [x for x in r.stderr.splitlines() if f"debuginfod: {bid}:" in x]
    assert line and "debug file" not in line[0], r.stderr
    leaf, r = record(path, tmp_path, clean_env(tmp_path, DEBUGINFOD_URLS=url))
    assert "debuginfod" not in r.stderr, r.stderr


def dump_names(pid, env):
    """the main thread's frame names in one dump --native"""
    r = run_pyperf(["dump", "-p", str(pid), "--native"], env=env, timeout=60)
    assert r.returncode == 0, r.stderr
    block = r.stdout.split(f'Thread {pid} "', 1)[-1].split("\n\n")[0]
    return [x.strip().rsplit(" (", 1)[0] for x in block.splitlines() if x.startswith("    ")]


def test_dump_waits_for_the_server_a_bounded_time(lib, server, tmp_path):
    """dump --native asks the server while it names (the process's threads
    already running on), waits for the answer and names from it; a server
    that never answers costs at most its 10 s wait"""
    path, _, _ = lib
    p = subprocess.Popen([PYTHON, os.path.join(WORKLOADS, "dbgspin.py"), str(path), "120"],
                         stdout=subprocess.DEVNULL)
    url, stop = black_hole()
    try:
        time.sleep(1)
        for _ in range(20):  # until a dump finds the thread in hidden_spin
            names = dump_names(p.pid, clean_env(tmp_path, DEBUGINFOD_URLS=server))
            if "hidden_spin" in names:
                break
        assert "hidden_spin" in names and "dbg_spin" in names, names
        assert not any(n.startswith("libdbgspin.so+0x") for n in names), names
        other = tmp_path / "other"
        other.mkdir()
        t0 = time.monotonic()
        names = dump_names(p.pid, clean_env(other, DEBUGINFOD_URLS=url))
        took = time.monotonic() - t0
        assert 9 < took < 20, took
        assert "dbg_spin" in names and "hidden_spin" not in names, names
    finally:
        stop()
        p.kill()
        p.wait()
