"""`pyperf-bpf daemon`: intervals of per-process pprof profiles, to a directory
and to a Pyroscope-compatible receiver started here on loopback.  Every
profile is decoded by Google's pprof; the daemon's own --stats lines say how
many samples each interval had, and the profiles must add up to exactly that.
Outages of the receiver lose nothing up to the spool limit; beyond it drops
are counted and logged; SIGTERM flushes the last interval."""
import hashlib
import http.server
import os
import re
import shutil
import signal
import stat
import subprocess
import threading
import time
import urllib.parse

import pytest

import conftest
from conftest import both_builds, PYPERF, ROOT, SUPPORTED, UNSUPPORTED, WORKLOADS, Daemon, run_pyperf
from pprofread import pprof, pprof_raw, pprof_total



def python():
    assert SUPPORTED, "no supported CPython"
    return SUPPORTED[-1][0]


class Receiver:
    """A Pyroscope-like /ingest endpoint on loopback that keeps every upload."""

    def __init__(self, port=0):
        self.uploads = []
        self.lock = threading.Lock()
        rec = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                u = urllib.parse.urlparse(self.path)
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                with rec.lock:
                    rec.uploads.append((u.path, urllib.parse.parse_qs(u.query), body))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *a):
                pass

        http.server.ThreadingHTTPServer.allow_reuse_address = True
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


def workload(tmp_path, seconds, name="w", env=None):
    e = dict(os.environ)
    e.update(env or {})
    p = subprocess.Popen([python(), os.path.join(WORKLOADS, "split.py"), str(seconds),
                          str(tmp_path / f"{name}.json")], stdout=subprocess.PIPE, text=True, env=e)
    assert p.stdout.readline().strip() == "ready"
    return p


def test_dir_sink_sigterm_flush_and_totals(tmp_path):
    out = tmp_path / "profiles"
    d = Daemon(["-F", "99", "-i", "2", "--dir", str(out), "--no-kernel"], tmp_path)
    w = workload(tmp_path, 30, env={"PYPERF_SERVICE": "billing-api"})
    try:
        assert d.wait_log("stats:", timeout=30, count=3), d.text()
        # half an interval on: the SIGTERM flush then holds ~100 samples,
        # not the few that a stop right after an interval's end would
        time.sleep(1)
        rc, err = d.stop()
        assert rc == 0, err + d.text()
    finally:
        w.kill()
        w.wait()
    assert "stopped after" in d.text()
    files = sorted(os.listdir(out))
    mine = [f for f in files if f.startswith(f"billing-api-{w.pid}-") and f.endswith(".pb.gz")]
    assert len(mine) >= 3, files
    # every process's stacks, paths and command lines: root's only, as the
    # spool (a made directory 0700, profiles 0600)
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o700
    assert {stat.S_IMODE(os.stat(out / f).st_mode) for f in files} == {0o600}
    total = sum(pprof_total(str(out / f)) for f in files)
    stats = d.stats()
    assert total == sum(s[0] for s in stats) > 0, (total, stats)
    assert len(files) == sum(s[1] for s in stats)
    # the last file is the SIGTERM flush; every file names the workload's functions
    funcs = {f for c, fr, _ in pprof_raw(str(out / mine[-1])) for f in fr}
    assert {"leaf_a", "run_schedule", "<module>"} <= funcs, funcs
    labels = pprof_raw(str(out / mine[0]))[0][2]
    assert labels.get("pid") == str(w.pid), labels


def test_every_interval_names_its_threads(tmp_path):
    """The daemon forgets threads' names (and idle stacks) at each interval's
    end; a stack is announced to it (with its thread's name) only when new
    since it last forgot (bpf/pyperf.bpf.c, announced), so each forgetting
    makes the sampler announce every stack once more.  A steady Python-only
    workload has no new stacks after its first second: without that, every
    later interval's threads would be "?"."""
    out = tmp_path / "profiles"
    d = Daemon(["-F", "99", "-i", "1", "--dir", str(out), "--python-only"], tmp_path)
    w = workload(tmp_path, 30)
    try:
        assert d.wait_log("stats:", timeout=30, count=5), d.text()
        rc, err = d.stop()
        assert rc == 0, err + d.text()
    finally:
        w.kill()
        w.wait()
    mine = sorted(f for f in os.listdir(out) if f"-{w.pid}-" in f and f.endswith(".pb.gz"))
    assert len(mine) >= 4, os.listdir(out)
    for f in mine[1:]:
        names = {lb.get("thread_name") for _, _, lb in pprof_raw(str(out / f))}
        assert names and not names & {None, "", "?"}, (f, names)


@both_builds
def test_dir_group_reads_the_profiles(build, tmp_path):
    """--group: the directory (even one that was there) 0750 and the
    profiles 0640, both of that group, so its members read them."""
    import grp
    group = "pyperf-readers"
    try:
        grp.getgrnam(group)
    except KeyError:
        r = subprocess.run(["groupadd", "--system", group], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
    gid = grp.getgrnam(group).gr_gid
    out = tmp_path / "profiles"
    out.mkdir(mode=0o755)
    d = Daemon(["-F", "49", "-i", "1", "--dir", str(out), "--group", group, "--python-only"],
               tmp_path)
    w = workload(tmp_path, 30)
    try:
        assert d.wait_log("stats:", timeout=30, count=2), d.text()
        rc, err = d.stop()
        assert rc == 0, err + d.text()
    finally:
        w.kill()
        w.wait()
    files = os.listdir(out)
    assert files
    st = os.stat(out)
    assert stat.S_IMODE(st.st_mode) == 0o750 and st.st_gid == gid
    assert {(stat.S_IMODE(os.stat(out / f).st_mode), os.stat(out / f).st_gid) for f in files} == \
        {(0o640, gid)}
    r = subprocess.run([conftest.PYPERF, "daemon", "--dir", str(out), "--group", "no-such-group-x"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode != 0 and "no such group" in r.stderr, r.stderr


def test_binaries_no_process_maps_are_let_go(tmp_path):
    """A daemon that sees new binaries all the time (upgrades, fresh copies)
    must not keep them: once no process maps a binary for the idle time
    (PYPERF_IDLE_CLOSE_S, 2 s here; 30 s by default) its file is closed and
    its symbols dropped, and once no profile kept holds a stack of it, its
    names are freed too (the --stats line counts them).  Three fresh copies
    of an interpreter run one after the other: each is open while it runs,
    none is after, and their names are freed; a copy run again is named."""
    py = [p for p in SUPPORTED if "/.pyenv/" in p[0]]
    assert py, "no pyenv CPython"
    exe = os.path.realpath(py[-1][0])
    prefix = os.path.dirname(os.path.dirname(exe))
    env = dict(os.environ, PYTHONHOME=prefix, LD_LIBRARY_PATH=os.path.join(prefix, "lib"))
    log = tmp_path / "daemon.log"
    d = subprocess.Popen([PYPERF, "daemon", "-F", "49", "-i", "1", "--dir", str(tmp_path / "d"),
                          "--stats", "--log", str(log)],
                         env=dict(os.environ, PYPERF_IDLE_CLOSE_S="2"),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def open_copies():
        out = set()
        for fd in os.listdir(f"/proc/{d.pid}/fd"):
            try:
                target = os.readlink(f"/proc/{d.pid}/fd/{fd}")
            except OSError:
                continue
            if target.startswith(str(tmp_path / "py")):
                out.add(target)
        return out

    seen = set()
    try:
        end = time.monotonic() + 30
        while "profiling CPython" not in (log.read_text() if log.exists() else ""):
            assert time.monotonic() < end and d.poll() is None, log.read_text()
            time.sleep(0.1)
        for i in range(3):
            copy = tmp_path / f"py{i}"
            shutil.copy(exe, copy)
            w = subprocess.Popen([str(copy), os.path.join(WORKLOADS, "split.py"), "3",
                                  str(tmp_path / f"t{i}.json")], stdout=subprocess.PIPE,
                                 text=True, env=env)
            assert w.stdout.readline().strip() == "ready"
            end = time.monotonic() + 10
            while str(copy) not in open_copies() and time.monotonic() < end:
                time.sleep(0.2)
            seen |= open_copies()
            assert w.wait(timeout=30) == 0
        end = time.monotonic() + 20
        while open_copies() and time.monotonic() < end:
            time.sleep(0.5)
        left = open_copies()

        def freed():
            got = re.findall(r"names of \d+ binaries \(\d+ open, (\d+) freed so far\)",
                             log.read_text())
            return int(got[-1]) if got else 0
        # the copies' names go once the intervals that held their stacks
        # are written and a prune comes (every PYPERF_IDLE_CLOSE_S here)
        end = time.monotonic() + 20
        while freed() < 3 and time.monotonic() < end:
            time.sleep(0.5)
        names_freed = freed()
        # a binary let go is opened again when a process maps it again, and
        # its frames are named
        again = subprocess.Popen([str(tmp_path / "py0"), os.path.join(WORKLOADS, "split.py"), "3",
                                  str(tmp_path / "t.json")], stdout=subprocess.PIPE, text=True,
                                 env=env)
        assert again.stdout.readline().strip() == "ready"
        assert again.wait(timeout=30) == 0
        time.sleep(1.5)
    finally:
        d.send_signal(signal.SIGTERM)
        d.communicate(timeout=60)
    assert seen == {str(tmp_path / f"py{i}") for i in range(3)}, seen
    assert not left, left
    assert names_freed >= 3, log.read_text()[-3000:]
    files = [f for f in os.listdir(tmp_path / "d") if f"-{again.pid}-" in f]
    funcs = {f for name in files for _, fr, _ in pprof_raw(str(tmp_path / "d" / name)) for f in fr}
    assert {"leaf_a", "main"} <= funcs, (files, sorted(funcs)[:50])


CODEGEN = '''import sys, time
end = time.time() + float(sys.argv[1])
made = 0
print("ready", flush=True)
while time.time() < end:
    ns = {}
    exec(compile(f"def made_{made}():\\n    t = time.perf_counter()\\n"
                 f"    while time.perf_counter() - t < 0.02: pass\\n", f"gen{made}.py", "exec"),
         {"time": time}, ns)
    ns[f"made_{made}"]()
    made += 1
print(made, flush=True)
'''


def test_stacks_a_live_process_stopped_using_are_let_go(tmp_path):
    """A process that lives on but makes new code all the time (templates,
    exec, an asyncio server's fresh task names) must not make the daemon
    keep every stack it ever had: after each interval the stacks not counted
    for the idle time (PYPERF_IDLE_CLOSE_S, 2 s here; 5 minutes by default)
    go, with the code objects' names only they held.  The workload makes
    about 50 functions a second for 12 s, each sampled under its own stack:
    the daemon keeps a few seconds' worth, and names the newest right."""
    py = SUPPORTED[-1][0]
    script = tmp_path / "codegen_workload.py"
    script.write_text(CODEGEN)
    log = tmp_path / "daemon.log"
    d = subprocess.Popen([PYPERF, "daemon", "-F", "97", "-i", "1", "--dir", str(tmp_path / "d"),
                          "--match", "codegen_workload", "--python-only", "--stats", "--log",
                          str(log)], env=dict(os.environ, PYPERF_IDLE_CLOSE_S="2"),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        end = time.monotonic() + 30
        while "profiling CPython" not in (log.read_text() if log.exists() else ""):
            assert time.monotonic() < end and d.poll() is None, log.read_text()
            time.sleep(0.1)
        w = subprocess.Popen([py, str(script), "12"], stdout=subprocess.PIPE, text=True)
        assert w.stdout.readline().strip() == "ready"
        made = int(w.stdout.readline())
        assert w.wait(timeout=30) == 0
        time.sleep(1.5)
    finally:
        d.send_signal(signal.SIGTERM)
        d.communicate(timeout=60)
    kept = [int(k) for k in re.findall(r"(\d+) stacks and \d+ Python functions kept",
                                       log.read_text())]
    assert made > 300 and len(kept) >= 8, (made, kept)
    # each function is sampled about twice (20 ms at 97 Hz): without the
    # trim every one of them stays; with it, the last few seconds' worth
    assert max(kept[len(kept) // 2:]) < made / 3, (made, kept)
    files = sorted(os.listdir(tmp_path / "d"))
    names = {f for name in files[-3:] for _, fr, _ in pprof_raw(str(tmp_path / "d" / name))
             for f in fr if f.startswith("made_")}
    assert names, files
    newest = max(int(n.split("_")[1].split()[0]) for n in names)
    assert newest > made * 0.7, (made, sorted(names))


def test_a_process_it_cannot_profile_is_logged(tmp_path):
    """An unsupported CPython is never left out silently: the daemon's log
    (not only stderr) says which process and why."""
    if not UNSUPPORTED:
        pytest.fail("no CPython older than 3.8 present (pyenv's 3.6 and 3.7 are expected)")
    d = Daemon(["-F", "49", "-i", "1", "--dir", str(tmp_path / "d")], tmp_path)
    old = subprocess.Popen([UNSUPPORTED[-1][0], "-c", "import time\nt = time.time()\n"
                            "while time.time() - t < 3: pass"])
    try:
        assert d.wait_log(f"pid {old.pid}: unsupported Python", timeout=20), d.text()
    finally:
        old.wait()
        d.stop()


def test_dir_retention_by_count(tmp_path):
    out = tmp_path / "profiles"
    d = Daemon(["-F", "49", "-i", "1", "--dir", str(out), "--keep", "2", "--python-only"], tmp_path)
    w = workload(tmp_path, 30)
    try:
        assert d.wait_log("stats:", timeout=30, count=5), d.text()
        assert len([f for f in os.listdir(out) if f.endswith(".pb.gz")]) <= 2
    finally:
        d.stop()
        w.kill()
        w.wait()
    assert len(os.listdir(out)) == 2, os.listdir(out)


def uploads_total(uploads):
    total = 0
    for i, (_, _, body) in enumerate(uploads):
        path = f"/tmp/pyperf-upload-{os.getpid()}-{i}.pb.gz"
        with open(path, "wb") as f:
            f.write(body)
        try:
            total += pprof_total(path)
        finally:
            os.unlink(path)
    return total


def run_over(tmp_path, args, service, argv=None, intervals=3):
    """The daemon with args while a workload named service runs (split.py,
    or argv), until `intervals` --stats lines, then SIGTERM; (the daemon,
    the workload)."""
    d = Daemon(args, tmp_path)
    if argv:
        w = subprocess.Popen(argv, stdout=subprocess.DEVNULL,
                             env=dict(os.environ, PYPERF_SERVICE=service))
    else:
        w = workload(tmp_path, 30, env={"PYPERF_SERVICE": service})
    try:
        assert d.wait_log("stats:", timeout=30, count=intervals), d.text()
        rc, err = d.stop()
        assert rc == 0, err
    finally:
        w.kill()
        w.wait()
    return d, w


def push_run(tmp_path, args, service, argv=None):
    """A daemon pushing to a receiver here, for three intervals of a workload
    named service (split.py, or argv); (the uploads, the daemon, the workload)."""
    rec = Receiver()
    try:
        d, w = run_over(tmp_path, ["-F", "99", "-i", "1", "--push", f"http://127.0.0.1:{rec.port}",
                                   "--spool", str(tmp_path / "spool")] + args, service, argv)
    finally:
        rec.stop()
    return rec.uploads, d, w


def test_push_uploads_decode_and_add_up(tmp_path):
    ups, d, w = push_run(tmp_path, ["--python-only"], "checkout")
    assert ups and all(p == "/ingest" for p, _, _ in ups)
    q = ups[0][1]
    assert q["format"] == ["pprof"] and q["spyName"] == ["pyperf-bpf"], q
    # whole-host: other Python processes (pytest's own receiver thread) upload too
    mine = [q for _, q, _ in ups if re.search(rf"[{{,]pid={w.pid}[,}}]", q["name"][0])]
    assert mine, [q["name"] for _, q, _ in ups]
    for q in mine:
        name = q["name"][0]
        assert name.startswith("checkout{") and "hostname=" in name, name
        assert int(q["from"][0]) <= int(q["until"][0])
    assert uploads_total(ups) == sum(s[0] for s in d.stats()) > 0
    assert os.listdir(tmp_path / "spool") == []


def test_outage_is_spooled_and_delivered_in_order(tmp_path):
    rec = Receiver()
    port = rec.port
    d = Daemon(["-F", "99", "-i", "1", "--push", f"http://127.0.0.1:{port}",
                "--spool", str(tmp_path / "spool"), "--python-only"], tmp_path)
    w = workload(tmp_path, 60)
    try:
        assert d.wait_log("stats:", count=2), d.text()
        rec.stop()                                   # the backend goes away
        n0 = d.text().count("stats:")
        assert d.wait_log("stats:", count=n0 + 4), d.text()
        assert "failed" in d.text(), d.text()
        assert len(os.listdir(tmp_path / "spool")) >= 2
        before = len(rec.uploads)
        rec = Receiver(port)                          # and comes back
        assert d.wait_log("works again", timeout=90), d.text()
        rc, err = d.stop()
        assert rc == 0, err
    finally:
        rec.stop()
        w.kill()
        w.wait()
    ups = rec.uploads
    assert len(ups) >= 4
    froms = [int(q["from"][0]) for _, q, _ in ups]
    assert froms == sorted(froms), froms            # oldest first
    stats = d.stats()
    # every interval's profile arrived exactly once: the counts add up
    assert before + len(ups) == sum(s[1] for s in stats)
    assert os.listdir(tmp_path / "spool") == []


def test_tiny_spool_counts_and_logs_drops(tmp_path):
    d = Daemon(["-F", "99", "-i", "1", "--push", "http://127.0.0.1:9",  # nothing listens
                "--spool", str(tmp_path / "spool"), "--spool-bytes", "3K", "--python-only"],
               tmp_path)
    w = workload(tmp_path, 30)
    try:
        assert d.wait_log("spool", timeout=40) and d.wait_log("is full", timeout=40), d.text()
        assert d.wait_log("stats:", count=4), d.text()
    finally:
        d.stop()
        w.kill()
        w.wait()
    m = re.findall(r"(\d+) profiles dropped", d.text())
    assert m and int(m[-1]) > 0, d.text()
    assert sum(os.path.getsize(tmp_path / "spool" / f) for f in os.listdir(tmp_path / "spool")) <= 3072


def test_processes_come_and_go(tmp_path):
    out = tmp_path / "profiles"
    d = Daemon(["-F", "99", "-i", "2", "--dir", str(out), "--python-only"], tmp_path)
    try:
        # 1 s of the wall clock: it exits mid-interval, however busy the machine
        short = workload(tmp_path, "1wall", name="short", env={"PYPERF_SERVICE": "shortlived"})
        short.wait()
        n0 = d.text().count("stats:")
        late = workload(tmp_path, 30, name="late", env={"PYPERF_SERVICE": "latecomer"})
        assert d.wait_log("stats:", count=n0 + 2), d.text()
        late.kill()
        late.wait()
    finally:
        rc, err = d.stop()
    assert rc == 0, err
    files = os.listdir(out)
    gone = [f for f in files if f.startswith(f"shortlived-{short.pid}-")]
    assert len(gone) == 1, files
    funcs = {f for c, fr, _ in pprof_raw(str(out / gone[0])) for f in fr}
    assert "leaf_a" in funcs, funcs                  # named after it exited
    assert any(f.startswith(f"latecomer-{late.pid}-") for f in files), files


def test_match_filter_and_sighup_reload(tmp_path):
    out = tmp_path / "profiles"
    conf = tmp_path / "daemon.conf"
    conf.write_text(f"# test\ndir = {out}\ninterval = 1\nmatch = nothing-matches-this\n"
                    "python-only = true\n")
    d = Daemon(["--config", str(conf), "-F", "99"], tmp_path)
    w = workload(tmp_path, 30, name="w1")
    try:
        assert d.wait_log("stats:", count=2), d.text()
        assert not os.path.exists(out) or not os.listdir(out)
        conf.write_text(f"dir = {out}\ninterval = 1\nmatch = split\\.py\npython-only = true\n")
        d.p.send_signal(signal.SIGHUP)
        assert d.wait_log("reloaded"), d.text()
        w2 = workload(tmp_path, 30, name="w2")      # found after the reload
        try:
            n0 = d.text().count("stats:")
            assert d.wait_log("stats:", count=n0 + 2), d.text()
        finally:
            w2.kill()
            w2.wait()
        assert d.p.poll() is None                   # SIGHUP did not stop it
    finally:
        rc, err = d.stop()
        w.kill()
        w.wait()
    assert rc == 0, err
    assert any(f.startswith(f"split-{w2.pid}-") for f in os.listdir(out)), os.listdir(out)


@pytest.mark.parametrize("args,needle", [
    ([], "no sink"), (["--dir", "/tmp/x", "-i", "0"], "interval"),
    (["--push", "ftp://x"], "not an http"), (["--dir", "/tmp/x", "--match", "("], "regular expression"),
    (["--dir", "/tmp/x", "--bogus"], "unknown"), (["--config", "/nonexistent.conf"], "nonexistent"),
    (["--dir", "/tmp/x", "--spool-bytes", "lots"], "spool-bytes"),
])
def test_daemon_bad_options(args, needle):
    r = run_pyperf(["daemon"] + args)
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1 and needle in r.stderr, r.stderr


def test_bad_config_line(tmp_path):
    conf = tmp_path / "c.conf"
    conf.write_text("dir = /tmp/x\nfrequency = fast\n")
    r = run_pyperf(["daemon", "--config", str(conf)])
    assert r.returncode == 2 and f"{conf}:2: frequency" in r.stderr, r.stderr


def test_systemd_unit_is_valid(tmp_path):
    unit = open(os.path.join(ROOT, "scripts", "pyperf-bpf.service")).read()
    assert "CAP_BPF" in unit and "CAP_PERFMON" in unit and "CAP_SYS_PTRACE" in unit
    local = tmp_path / "pyperf-bpf.service"
    local.write_text(unit.replace("/usr/local/bin/pyperf-bpf", PYPERF))
    # --man=no: its Documentation= man page comes with the package (test_package.py)
    r = subprocess.run(["systemd-analyze", "verify", "--man=no", str(local)], capture_output=True,
                       text=True)
    if r.returncode == 127 or "command not found" in r.stderr:
        pytest.fail("systemd-analyze is missing (package systemd)")
    assert r.returncode == 0 and not r.stderr.strip(), r.stderr


def test_exec_keeps_two_programs_apart(tmp_path):
    """One pid, two programs in one interval: one profile each, named after
    each program, and neither holds the other's functions."""
    out = tmp_path / "profiles"
    d = Daemon(["-F", "99", "-i", "30", "--dir", str(out), "--python-only"], tmp_path)
    e = dict(os.environ, PYPERF_SERVICE="first", NEXT_SERVICE="second")
    p = subprocess.Popen([python(), os.path.join(WORKLOADS, "exec_chain.py"), "1.5", "1.5",
                          str(tmp_path / "t.json")], stdout=subprocess.PIPE, text=True, env=e)
    try:
        assert p.stdout.readline().strip() == "ready"
        assert p.wait(timeout=60) == 0
    finally:
        rc, err = d.stop()
    assert rc == 0, err
    files = sorted(os.listdir(out))
    first = [f for f in files if f.startswith(f"first-{p.pid}-")]
    second = [f for f in files if f.startswith(f"second-{p.pid}-")]
    assert len(first) == 1 and len(second) == 1, files
    f1 = {f for _, fr, _ in pprof_raw(str(out / first[0])) for f in fr}
    f2 = {f for _, fr, _ in pprof_raw(str(out / second[0])) for f in fr}
    assert "first_program" in f1 and "leaf_a" not in f1, f1
    assert "leaf_a" in f2 and "first_program" not in f2, f2


def test_dir_retention_by_bytes(tmp_path):
    out = tmp_path / "profiles"
    d = Daemon(["-F", "49", "-i", "1", "--dir", str(out), "--keep-bytes", "1K", "--python-only"],
               tmp_path)
    w = workload(tmp_path, 30)
    try:
        assert d.wait_log("stats:", timeout=30, count=6), d.text()
    finally:
        d.stop()
        w.kill()
        w.wait()
    sizes = [os.path.getsize(out / f) for f in os.listdir(out)]
    written = sum(s[1] for s in d.stats())
    assert sizes and sum(sizes) <= 1024 and len(sizes) < written, (sizes, written)


def test_journald_lines_carry_a_priority(tmp_path):
    """Under systemd (JOURNAL_STREAM set) stderr lines start with <N>."""
    env = dict(os.environ, JOURNAL_STREAM="8:12345")
    p = subprocess.Popen([PYPERF, "daemon", "--dir", str(tmp_path / "p"), "-i", "1", "--stats"],
                         stderr=subprocess.PIPE, text=True, env=env)
    try:
        first = p.stderr.readline()
        assert first.startswith("<6>profiling CPython processes"), first
    finally:
        p.send_signal(signal.SIGTERM)
        _, err = p.communicate(timeout=60)
    assert p.returncode == 0
    assert all(re.match(r"<[346]>", line) for line in err.splitlines()), err


def test_wall_mode_pushes_time(tmp_path):
    """--mode wall: each upload says its values are nanoseconds (no sample
    rate), its pprof holds wall/nanoseconds, and the uploads add up to the
    --stats lines' time; a workload thread that mostly sleeps is there."""
    ups, d, _ = push_run(tmp_path, ["--mode", "wall"], "sleepy")
    mine = [(q, body) for _, q, body in ups if q["name"][0].startswith("sleepy{")]
    assert mine, [q["name"] for _, q, _ in ups]
    for q, _ in mine:
        assert q["units"] == ["nanoseconds"] and "sampleRate" not in q, q
    path = tmp_path / "one.pb.gz"
    path.write_bytes(mine[0][1])
    assert "wall/nanoseconds" in pprof("-raw", str(path))
    logged = [int(m.group(1)) for m in re.finditer(r"stats: interval [\d.]+ s, (\d+) ns,", d.text())]
    assert logged and uploads_total(ups) == sum(logged) > 0, logged


def test_alloc_mode_pushes_bytes(tmp_path):
    """--mode alloc: each upload says its values are bytes (no sample rate)
    and its pprof holds alloc_space/bytes (faults share the code path)."""
    ups, _, _ = push_run(tmp_path, ["--mode", "alloc"], "allocs",
                         [python(), os.path.join(WORKLOADS, "allocsplit.py"), "30"])
    mine = [(q, body) for _, q, body in ups if q["name"][0].startswith("allocs{")]
    assert mine, [q["name"] for _, q, _ in ups]
    for q, _ in mine:
        assert q["units"] == ["bytes"] and "sampleRate" not in q, q
    path = tmp_path / "one.pb.gz"
    path.write_bytes(mine[0][1])
    assert "alloc_space/bytes" in pprof("-raw", str(path))


def test_async_names_tasks(tmp_path):
    """--async: the daemon's profiles show asyncio tasks like record --async
    (the same session engine): the burning coroutine under its three tasks."""
    pys = [p for p in SUPPORTED if p[1] >= (3, 12)]
    if not pys:
        pytest.skip("no CPython 3.12+ present")
    out = tmp_path / "profiles"
    _, w = run_over(tmp_path, ["-F", "99", "-i", "1", "--dir", str(out), "--async", "--no-kernel"],
                    "tasks", [pys[-1][0], os.path.join(WORKLOADS, "async_tree.py"), "30"],
                    intervals=4)
    burn = chained = 0
    for f in os.listdir(out):
        if not f.startswith(f"tasks-{w.pid}-"):
            continue
        for count, frames, _ in pprof_raw(str(out / f)):
            if "burn" in frames:
                burn += count
                # pprof_raw lists frames leaf first
                if frames[-3:] == ["<task leaf>", "<task middle>", "<task root>"]:
                    chained += count
    assert burn > 100 and chained >= 0.9 * burn, (burn, chained)


def spool_parts(path):
    """(header line, query, body) of a spool file (spool.h: "pyperf-spool 1
    BODYLEN CRC32", the query line, the gzipped pprof)."""
    data = open(path, "rb").read()
    header, _, rest = data.partition(b"\n")
    query, _, body = rest.partition(b"\n")
    return header, query, body


def test_kill9_spool_resumes_without_corrupt_or_duplicate_uploads(tmp_path):
    """kill -9 while the receiver is down leaves a spool that the next start
    sends: a file cut short and a file with a byte changed are dropped and
    logged, never sent; a temporary file left by the crash is removed, never
    sent; every other profile arrives exactly once and decodes with pprof."""
    spool = tmp_path / "spool"
    rec = Receiver()
    port = rec.port
    rec.stop()                                       # down from the start
    url = f"http://127.0.0.1:{port}"
    args = ["-F", "99", "-i", "1", "--push", url, "--spool", str(spool), "--python-only"]
    w = workload(tmp_path, 60, env={"PYPERF_SERVICE": "crashy"})
    try:
        d = Daemon(args, tmp_path)
        assert d.wait_log("stats:", count=5), d.text()
        assert d.wait_log("failed", timeout=10), d.text()
        d.p.kill()                                   # kill -9, mid-interval
        d.p.wait(timeout=30)
        files = sorted(f for f in os.listdir(spool) if f.endswith(".prof"))
        assert len(files) >= 4, files
        for f in files:
            assert spool_parts(spool / f)[0].startswith(b"pyperf-spool 1 "), f
        # one file cut in half, one with a byte of its body changed
        cut, flipped = spool / files[1], spool / files[2]
        bad = {hashlib.sha256(spool_parts(p)[2]).hexdigest() for p in (cut, flipped)}
        with open(cut, "r+b") as f:
            f.truncate(os.path.getsize(cut) // 2)
        data = bytearray(flipped.read_bytes())
        data[len(data) - len(spool_parts(flipped)[2]) // 2] ^= 0x55
        flipped.write_bytes(bytes(data))
        # a temporary file a crash could leave: a copy of a good one (if it
        # were sent, that profile would arrive twice)
        (spool / ".new.k9Xy7Z").write_bytes((spool / files[0]).read_bytes())
        good = {hashlib.sha256(spool_parts(spool / f)[2]).hexdigest()
                for f in files if spool / f not in (cut, flipped)}

        rec = Receiver(port)                         # the backend is back
        log2 = tmp_path / "second"
        log2.mkdir()
        d2 = Daemon(args, log2)
        try:
            end = time.monotonic() + 60
            while time.monotonic() < end and any((spool / f).exists() for f in files):
                time.sleep(0.2)
            assert d2.wait_log("stats:", count=2), d2.text()
        finally:
            rc, err = d2.stop()
        assert rc == 0, err
    finally:
        rec.stop()
        w.kill()
        w.wait()
    text = d2.text()
    assert not [f for f in os.listdir(spool) if f.startswith(".new.")], os.listdir(spool)
    assert re.search(r"removed [1-9]\d* unfinished files", text), text
    for p in (cut, flipped):
        assert re.search(rf"spool: \S*{p.name} is corrupt, dropped unsent", text), text
    assert text.count("is corrupt") == 2, text
    assert re.search(r", 2 corrupt spool files,", text), text
    ups = rec.uploads
    hashes = [hashlib.sha256(body).hexdigest() for _, _, body in ups]
    assert len(hashes) == len(set(hashes)), "a profile arrived twice"
    assert good <= set(hashes), (len(good), len(hashes))
    assert not bad & set(hashes)
    for i, (_, q, body) in enumerate(ups):       # every upload is a whole pprof
        path = tmp_path / f"up{i}.pb.gz"
        path.write_bytes(body)
        pprof("-raw", str(path))
    assert any(q["name"][0].startswith("crashy{") for _, q, _ in ups)
