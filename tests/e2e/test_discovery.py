"""Finding Python processes: whole-host mode picks up processes started during
the run; 3.13+ processes are read through their own _Py_DebugOffsets; code
objects freed soon after their samples are named right or marked, never
named from what their memory holds next; a Python in a chroot, or whose
files were deleted since it started, is read through the files it maps."""
import os
import re
import shutil
import signal
import subprocess
import time

import pytest

from conftest import (PYPERF, SUPPORTED, UNSUPPORTED, WORKLOADS, FRAME_RE, names, otlp_decode,
                      parse_folded, python_id, record_workload, supported_pythons, py_leaf, func_name)
from pprofread import pprof_raw


@supported_pythons()
def test_whole_host_mode_finds_process_started_during_run(python, tmp_path):
    out, log = tmp_path / "all.folded", tmp_path / "err.log"
    # -v's lines go to a file: a pipe nobody reads till the end fills, and a
    # loader blocked on it classifies nothing
    with open(log, "w") as errf:
        rec = subprocess.Popen([PYPERF, "-d", "4", "-F", "199", "-v", "-o", str(out)],
                               stderr=errf, text=True)
    try:
        deadline = time.monotonic() + 60
        while "sampling at" not in log.read_text() and rec.poll() is None:
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.05)
        time.sleep(0.2)  # started during the run, not before it
        work = subprocess.run([python[0], os.path.join(WORKLOADS, "split.py"), "1.5",
                               str(tmp_path / "t.json")], capture_output=True, timeout=60)
        assert work.returncode == 0
        rec.wait(timeout=60)
    finally:
        if rec.poll() is None:
            rec.kill()
    err = log.read_text()
    assert rec.returncode == 0, err
    mine = [(f, c) for f, c in parse_folded(out.read_text()) if "split.py" in f[0]]
    assert mine, f"the process started during the run was not profiled: {err}"
    assert {"leaf_a", "leaf_b", "leaf_c"} <= {py_leaf(f) for f, _ in mine}


THIRTEEN_PLUS = [p for p in SUPPORTED if p[1] >= (3, 13)]


@pytest.mark.parametrize("python", THIRTEEN_PLUS, ids=[f"{v[0]}.{v[1]}" for _, v in THIRTEEN_PLUS])
def test_313_plus_uses_debug_offsets(python, tmp_path):
    out = tmp_path / "d.folded"
    r = subprocess.run([PYPERF, "-v", "-F", "199", "-o", str(out), "--", python[0], "-c",
                        "import time\nend=time.monotonic()+1.5\nwhile time.monotonic()<end: pass"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "offsets from _Py_DebugOffsets" in r.stderr, r.stderr
    # -v says when the command's process was taken: within its 1.5 s run
    taken = re.search(r"pid \d+: Python .*, taken at (\d+) ms", r.stderr)
    assert taken and int(taken.group(1)) < 1500, r.stderr
    assert any(names(f)[:1] == ["<module>"] for f, _ in parse_folded(out.read_text()))


def test_some_313_plus_interpreter_present():
    """The _Py_DebugOffsets path needs a 3.13+ interpreter to be tested end to
    end; scripts/setup --test-deps installs 3.14 and 3.15."""
    assert THIRTEEN_PLUS, "no CPython 3.13+ found: run scripts/setup --test-deps"


def test_whole_host_says_an_unsupported_interpreter_once(tmp_path):
    """whole-host mode: three processes of an unsupported CPython give one
    line for that interpreter, not one per process (a fleet host's old
    interpreters would flood the log); -p and commands still name each.
    The report lists each of them under "Not profiled", with why and the
    samples it would have had: its CPU time at the rate (from wait4)."""
    if not UNSUPPORTED:
        pytest.skip("no CPython older than 3.8 present")
    old = UNSUPPORTED[-1][0]
    p = subprocess.Popen([PYPERF, "-d", "4", "-o", str(tmp_path / "p.folded"), "-o",
                          str(tmp_path / "r.txt")],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(1.5)
    kids = [subprocess.Popen([old, "-c", "import time\nt = time.time()\n"
                              "while time.time() - t < 1: pass"]) for _ in range(3)]
    cpu = {}
    for k in kids:
        _, _, ru = os.wait4(k.pid, 0)
        k.returncode = 0
        cpu[k.pid] = ru.ru_utime + ru.ru_stime
    _, err = p.communicate(timeout=60)
    assert p.returncode == 0, err
    mine = [line for line in err.splitlines() if "unsupported Python" in line and
            any(f"pid {k.pid}:" in line for k in kids)]
    assert len(mine) == 1, err
    report = (tmp_path / "r.txt").read_text()
    assert re.search(r"^Not profiled: \d+ processes, \d+ samples", report, re.M), report
    for k in kids:
        m = re.search(rf"^  {k.pid} python[\d.]*m?: (\d+) samples: unsupported Python", report, re.M)
        assert m, report
        want = cpu[k.pid] * 99  # the default rate
        assert abs(int(m.group(1)) - want) <= max(0.3 * want, 10), (m.group(0), cpu[k.pid])


@supported_pythons()
def test_short_lived_code_is_named_right_or_marked(python, tmp_path):
    """gen_N runs in file <gen N>, then its code object and strings are
    freed.  The loader reads names after the sample, so some of them are
    freed first: each must be shown as gen_N of <gen N> with the same N, or
    marked (an unknown code object, or <freed code> of a <gen N> file when
    the name died with it, as the README says), never with a name or file
    now belonging to something else.  run_short's code lives ~1 ms: named
    or marked is a race with the loader's wakeup, lost more often the more
    loaded the machine (a loaded CI run: 1679 right, 1170 marked).
    run_long's lives ~20 ms: a new Python stack wakes the loader at once,
    so nearly all of it must be named, loaded machine or not (were new code
    named only at the next 100 ms poll, most would be marked)."""
    stacks, _, r = record_workload(python[0], tmp_path, "shortlived_code.py", "2",
                                   extra=["-v"])
    assert "object types checked" in r.stderr, r.stderr
    right = {"run_short": 0, "run_long": 0}
    marked = dict.fromkeys(right, 0)
    wrong = 0
    for frames, count in stacks:
        caller = next((func_name(f) for f in frames if func_name(f) in right), None)
        for f in frames:
            m = FRAME_RE.match(f)
            if f.startswith("<unknown code") or \
                    (m and m.group("name") == "<freed code>" and
                     re.fullmatch(r"<gen \d+>", m.group("file"))):
                if caller:
                    marked[caller] += count
            elif m and (re.fullmatch(r"gen_\d+", m.group("name")) or
                        m.group("file").startswith("<gen")):
                g = re.fullmatch(r"gen_(\d+)", m.group("name"))
                if (g and m.group("file") == f"<gen {g.group(1)}>") or \
                        (m.group("name") == "<module>" and re.fullmatch(r"<gen \d+>", m.group("file"))):
                    if caller:
                        right[caller] += count
                else:
                    wrong += count
                    print("wrong:", f)
    print("right", right, "marked", marked)
    assert wrong == 0, (wrong, right, marked)
    assert right["run_long"] > 200, (right, marked)
    assert right["run_long"] > 5 * marked["run_long"], (right, marked)
    assert right["run_short"] > 0, (right, marked)


def _shared_and_static():
    """A pyenv build (its libpython a shared library) and a sid one (one
    static binary): where _PyRuntime lives is what differs here, not the
    version."""
    shared = [p for p in SUPPORTED if "/.pyenv/" in p[0]]
    static = [p for p in SUPPORTED if p[0].startswith("/opt/pyperf-sid/")]
    return shared[-1:] + static[-1:]


FOREIGN = _shared_and_static()


def _prefix_and_libs(python):
    """The interpreter's prefix and the shared libraries it loads (ldd)."""
    prefix = subprocess.run([python, "-c", "import sys; print(sys.base_prefix)"],
                            capture_output=True, text=True, check=True).stdout.strip()
    ldd = subprocess.run(["ldd", python], capture_output=True, text=True, check=True).stdout
    libs = set(re.findall(r"(/\S+) \(0x", ldd))
    return prefix, libs


def _link_tree(src, dst):
    """dst holds src's files: hard links where one file system holds both."""
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    if subprocess.run(["cp", "-al", src, dst], capture_output=True).returncode:
        subprocess.run(["cp", "-a", src, dst], check=True)


def _wait_ready(proc):
    line = proc.stdout.readline()
    assert line.strip() == "ready", (line, proc.poll())


def _profiles_and_dumps(pid, tmp_path, where):
    """record -p and dump -p of a split.py process: its leaves named, with
    their file as the process sees it, and the interpreter's native frames."""
    out = tmp_path / "p.folded"
    r = subprocess.run([PYPERF, "-p", str(pid), "-d", "1.5", "-F", "199", "-o", str(out)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    stacks = parse_folded(out.read_text())
    leaves = {py_leaf(f) for f, _ in stacks}
    assert {"leaf_a", "leaf_b", "leaf_c"} <= leaves, (leaves, r.stderr)
    assert any(fr.startswith("leaf_a (" + where) for f, _ in stacks for fr in f), stacks[:3]
    assert any(fr.startswith("Py_BytesMain (") for f, _ in stacks for fr in f), stacks[:1]
    d = subprocess.run([PYPERF, "dump", "-p", str(pid)], capture_output=True, text=True,
                       timeout=60)
    assert d.returncode == 0 and "run_schedule (" + where in d.stdout, d.stdout + d.stderr


@pytest.mark.parametrize("python", FOREIGN, ids=[python_id(p) for p in FOREIGN])
def test_a_chroot_python_is_profiled(python, tmp_path):
    """A CPython in a chroot of its own mount and pid namespaces (unshare
    --mount --pid --fork chroot, as chroot-style containers run): the paths
    in its /proc/PID/maps are the host's (ROOT/...), which /proc/PID/root
    does not resolve; the files are read through /proc/PID/map_files.  As a
    command (its samples found as it is exec'd under unshare) and by -p."""
    root = tmp_path / "root"
    prefix, libs = _prefix_and_libs(python[0])
    _link_tree(prefix, str(root) + prefix)
    for lib in libs | {os.path.realpath(x) for x in libs}:
        if not os.path.exists(str(root) + lib):
            os.makedirs(os.path.dirname(str(root) + lib), exist_ok=True)
            shutil.copy2(lib, str(root) + lib)
    (root / "w").mkdir()
    shutil.copy(os.path.join(WORKLOADS, "split.py"), root / "w" / "split.py")
    cmd = ["unshare", "--mount", "--pid", "--fork", "chroot", str(root), python[0],
           "/w/split.py"]
    # as the profiled command
    out = tmp_path / "c.folded"
    r = subprocess.run([PYPERF, "-F", "199", "-o", str(out), "--"] + cmd + ["1.5", "/w/t.json"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "not a CPython" not in r.stderr and "cannot open" not in r.stderr, r.stderr
    stacks = parse_folded(out.read_text())
    assert {"leaf_a", "leaf_b", "leaf_c"} <= {py_leaf(f) for f, _ in stacks}, r.stderr
    # attached to
    proc = subprocess.Popen(cmd + ["20", "/w/t.json"], stdout=subprocess.PIPE, text=True)
    try:
        _wait_ready(proc)
        kids = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True,
                              text=True).stdout.split()
        assert len(kids) == 1, kids
        _profiles_and_dumps(int(kids[0]), tmp_path, "/w/split.py:")
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.parametrize("python", FOREIGN, ids=[python_id(p) for p in FOREIGN])
def test_a_python_whose_files_were_deleted_is_profiled(python, tmp_path):
    """A service's interpreter and libpython deleted or replaced on disk
    after it started (a package upgrade): the files it maps are read through
    /proc/PID/map_files, not by their names."""
    prefix, libs = _prefix_and_libs(python[0])
    bindir = tmp_path / "bin"
    bindir.mkdir()
    exe = bindir / os.path.basename(python[0])
    shutil.copy2(python[0], exe)
    for lib in libs:
        if "libpython" in lib:
            shutil.copy2(lib, bindir / os.path.basename(lib))
    env = dict(os.environ, PYTHONHOME=prefix, LD_LIBRARY_PATH=str(bindir))
    proc = subprocess.Popen([str(exe), os.path.join(WORKLOADS, "split.py"), "20",
                             str(tmp_path / "t.json")], stdout=subprocess.PIPE, text=True, env=env)
    try:
        _wait_ready(proc)
        shutil.rmtree(bindir)
        maps = open(f"/proc/{proc.pid}/maps").read()
        assert "(deleted)" in maps
        _profiles_and_dumps(proc.pid, tmp_path, os.path.join(WORKLOADS, "split.py") + ":")
    finally:
        proc.kill()
        proc.wait()


CONTAINER_ID = "3f1e0c5b7a9d2e4f6a8b0c1d3e5f7a9b1c3d5e7f9a0b2c4d6e8f0a1b3c5d7e9f"


def test_a_container_process_carries_its_container_and_inner_pid(tmp_path):
    """A CPython that is pid 1 of its own pid namespace in a cgroup named as
    docker's cgroupfs driver names it (/docker/ID, made here in the v1 pids
    hierarchy): dump shows the container and the inner pid, pprof labels
    each sample container_id and container_pid, OTLP has them as resource
    attributes; beside a host process, `--containers` groups the report and
    the folded stacks by container, and `daemon --container ID` profiles only
    the container's process.  The parsing of every engine's spelling is the
    unit test's (test_container.c); one Python."""
    cg = f"/sys/fs/cgroup/pids/docker/{CONTAINER_ID}"
    try:
        os.makedirs(cg)
    except OSError as e:
        pytest.fail(f"cannot make a cgroup {cg}: {e}")
    proc = subprocess.Popen(["unshare", "--pid", "--fork", SUPPORTED[-1][0],
                             os.path.join(WORKLOADS, "split.py"), "20", str(tmp_path / "t.json")],
                            stdout=subprocess.PIPE, text=True)
    pid = None
    try:
        _wait_ready(proc)
        pid = int(subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True,
                                 text=True).stdout.split()[0])
        with open(os.path.join(cg, "cgroup.procs"), "w") as f:
            f.write(str(pid))
        d = subprocess.run([PYPERF, "dump", "-p", str(pid)], capture_output=True, text=True,
                           timeout=60)
        assert d.returncode == 0, d.stderr
        assert f"Container docker {CONTAINER_ID[:12]}, pid 1 in it" in d.stdout, d.stdout
        prof = tmp_path / "p.pb.gz"
        r = subprocess.run([PYPERF, "-p", str(pid), "-d", "1", "-o", str(prof)],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        samples = pprof_raw(str(prof))
        assert samples and all(labels.get("container_id") == CONTAINER_ID and
                               labels.get("container_pid") == "1" and
                               labels.get("pid") == str(pid) for _, _, labels in samples), \
            samples[:2]
        # beside a process on the host: --containers groups them, OTLP
        # carries the container as resource attributes
        host = subprocess.Popen([SUPPORTED[-1][0], os.path.join(WORKLOADS, "split.py"), "20",
                                 str(tmp_path / "h.json")], stdout=subprocess.PIPE, text=True)
        _wait_ready(host)
        outs = [tmp_path / n for n in ("r.txt", "c.folded", "c.otlp")]
        r = subprocess.run([PYPERF, "-p", str(pid), "-p", str(host.pid), "-d", "1", "--containers"] +
                           [a for o in outs for a in ("-o", str(o))],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        report = outs[0].read_text()
        short = CONTAINER_ID[:12]
        assert re.search(rf"^  {pid} .*\(Python [\d.]+; docker {short}, pid 1 in it\)", report, re.M), report
        assert re.search(rf"^  docker {short}: \d+ samples \([\d.]+%\), 1 processes: {pid} \(1 in it\)$",
                         report, re.M), report
        assert re.search(rf"^  host: \d+ samples \([\d.]+%\), 1 processes: {host.pid}$", report, re.M), report
        roots = {line.split(";")[0] for line in outs[1].read_text().splitlines()}
        assert roots == {f"container docker {short}", "host"}, roots
        res = {r["attrs"]["process.pid"]: r["attrs"] for r in otlp_decode(outs[2])["resources"]}
        assert res[pid]["container.id"] == CONTAINER_ID and res[pid]["pyperf.container.pid"] == 1
        assert "container.id" not in res[host.pid]
        # the daemon keeps the processes of the container it is told
        dd = tmp_path / "d"
        dmn = subprocess.Popen([PYPERF, "daemon", "-F", "49", "-i", "1", "--dir", str(dd),
                                "--container", short[:8]], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
        time.sleep(4)
        dmn.send_signal(signal.SIGTERM)
        _, err = dmn.communicate(timeout=60)
        assert dmn.returncode == 0, err
        pids = {int(re.match(r".*-(\d+)-\d{8}T", f).group(1)) for f in os.listdir(dd)}
        assert pids == {pid}, (pids, os.listdir(dd))
        host.kill()
        host.wait()
    finally:
        if pid:
            os.kill(pid, 9)  # a namespace's init ignores SIGTERM
        proc.kill()
        proc.wait()
        for _ in range(50):
            try:
                os.rmdir(cg)
                os.rmdir(os.path.dirname(cg))
                break
            except OSError:
                time.sleep(0.1)
