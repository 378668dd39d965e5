"""Shared test helpers: where the profiler is, which interpreters exist, and
how to read folded output.

Interpreters: every CPython under /root/.pyenv/versions, /usr/bin and
/opt/pyperf-sid/usr/bin (3.14 and 3.15 from Debian sid, installed by
scripts/sid-pythons), or the list in PYPERF_TEST_PYTHONS, separated by ':'.  Supported ones (3.8+) drive
the end-to-end tests; older ones drive the "unsupported version" tests."""
import contextlib
import glob
import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# the dynamic build; PYPERF_BIN=build/static/pyperf-bpf runs the suite (or a
# part of it) with the static one
PYPERF = os.path.abspath(os.environ.get("PYPERF_BIN", os.path.join(ROOT, "pyperf-bpf")))
STATIC = os.path.join(ROOT, "build/static/pyperf-bpf")
# py-spy and austin, the referees: scripts/setup --test-deps installs them
PEERS = os.environ.get("PYPERF_PEERS", "/var/cache/pyperf-bpf/peers")


def peer(name):
    """the path of peer tool name (py-spy, austin); the test fails, saying
    why, when it is missing"""
    path = os.path.join(PEERS, "bin", name)
    if not os.access(path, os.X_OK):
        pytest.fail(f"{name} is not installed in {PEERS}: scripts/setup --test-deps installs it "
                    "from PyPI")
    return path
WORKLOADS = os.path.join(ROOT, "tests", "e2e", "workloads")
# the OpenTelemetry Collector that scripts/setup --test-deps builds
OTELCOL = os.path.join(os.environ.get("PYPERF_OTELCOL", "/var/cache/pyperf-bpf/otelcol"),
                       "otelcol-pyperf")


# PYPERF_TEST_LOG=FILE: a line for each test as it ends (the clock, its
# outcome, its seconds, the phase, its id), and one for each set-up or
# tear-down that failed or took a second or more (a VM's boot), so that a run
# stopped before pytest's summary still names its failures and its slow parts
_TEST_LOG = os.environ.get("PYPERF_TEST_LOG")


def pytest_runtest_logreport(report):
    if not _TEST_LOG:
        return
    if report.when == "call" or report.outcome != "passed" or report.duration >= 1:
        with open(_TEST_LOG, "a") as f:
            f.write(f"{time.strftime('%H:%M:%S')} {report.outcome} {report.duration:.1f} "
                    f"{report.when} {report.nodeid}\n")


STATS_RE = re.compile(r"stats: interval [\d.]+ s, (\d+) samples, (\d+) processes, (\d+) dropped samples")


class Daemon:
    """`pyperf-bpf daemon --stats --log tmp_path/daemon.log ARGS`, started and
    waited for; its log, --stats lines and stop."""

    def __init__(self, args, tmp_path, env=None):
        self.log = tmp_path / "daemon.log"
        self.p = subprocess.Popen([PYPERF, "daemon", "--stats", "--log", str(self.log)] + args,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        assert self.wait_log("profiling CPython processes"), self.text()

    def text(self):
        return self.log.read_text() if self.log.exists() else ""

    def wait_log(self, needle, timeout=30, count=1):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if self.text().count(needle) >= count:
                return True
            if self.p.poll() is not None:
                return False
            time.sleep(0.1)
        return False

    def stop(self, sig=signal.SIGTERM):
        self.p.send_signal(sig)
        out, err = self.p.communicate(timeout=60)
        return self.p.returncode, err

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()

    def stats(self):
        return [tuple(int(x) for x in m.groups()) for m in STATS_RE.finditer(self.text())]


def otlp_decode(path, framed=False):
    """OTLP profiles in path as the official bindings read them (tests/otlpread.py,
    run by the peers' Python, which has opentelemetry-proto)."""
    py = peer("python")
    r = subprocess.run([py, os.path.join(ROOT, "tests", "otlpread.py")] +
                       (["--framed"] if framed else []) + [str(path)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def _candidates():
    env = os.environ.get("PYPERF_TEST_PYTHONS")
    if env:
        return [p for p in env.split(":") if p]
    pats = ["/root/.pyenv/versions/*/bin/python[23].[0-9]", "/root/.pyenv/versions/*/bin/python[23].[0-9][0-9]",
            "/usr/bin/python3.[0-9]", "/usr/bin/python3.[0-9][0-9]",
            # 3.14 and 3.15 from Debian sid (scripts/sid-pythons)
            "/opt/pyperf-sid/usr/bin/python3.[0-9][0-9]"]
    found = []
    for pat in pats:
        found += sorted(glob.glob(pat))
    return found


def _describe(path):
    try:
        out = subprocess.run(
            # also Python 2's syntax: its print would show a tuple
            [path, "-c", "import sys, platform; sys.stdout.write('%s %d %d' % ("
             "platform.python_implementation(), sys.version_info[0], sys.version_info[1]))"],
            capture_output=True, text=True, timeout=30).stdout.split()
    except (OSError, subprocess.TimeoutExpired):
        return None
    if len(out) != 3 or out[0] != "CPython":
        return None
    return int(out[1]), int(out[2])


def _interpreters():
    supported, old = [], []
    for path in _candidates():
        ver = _describe(path)
        if not ver:
            continue
        (supported if ver >= (3, 8) else old).append((path, ver))
    return supported, old


SUPPORTED, UNSUPPORTED = _interpreters()


def python_id(p):
    path, (major, minor) = p
    kind = ("pyenv" if "/.pyenv/" in path else "sid" if path.startswith("/opt/pyperf-sid/")
            else os.path.dirname(path).strip("/").replace("/", "-"))
    return f"{major}.{minor}-{kind}"


def supported_pythons():
    return pytest.mark.parametrize("python", SUPPORTED, ids=[python_id(p) for p in SUPPORTED])


def _has_symtab(path):
    r = subprocess.run(["readelf", "-S", "--wide", path], capture_output=True, text=True)
    return " .symtab " in r.stdout


def _stripped(path):
    """Does nothing of the interpreter (the executable, its libpython) carry
    a .symtab?  Then only a debug package names its static functions."""
    real = os.path.realpath(path)
    libs = re.findall(r"=> (\S*libpython\S*)", subprocess.run(
        ["ldd", real], capture_output=True, text=True).stdout)
    return not any(_has_symtab(f) for f in [real] + libs)


# Debug files are searched here and nowhere else: the run sees a stripped
# interpreter as a user without its -dbg package does
NO_DEBUG_FILES = {"PYPERF_DEBUGINFO_PATH": "/nonexistent"}
STRIPPED = [p for p in SUPPORTED if _stripped(p[0])]


def merged_pythons():
    """Every supported interpreter, and each stripped one (Debian's) a second
    time with its debug files out of reach (id ...-nodbg): users rarely
    install -dbg packages.  A parameter is (path, version) or (path, version,
    environment to add); pyperf_env() gives the run's environment."""
    params = [pytest.param(p, id=python_id(p)) for p in SUPPORTED]
    params += [pytest.param((p[0], p[1], NO_DEBUG_FILES), id=python_id(p) + "-nodbg")
               for p in STRIPPED]
    return pytest.mark.parametrize("python", params)


def pyperf_env(python):
    """The environment to run the profiler in for a parameter of
    merged_pythons() (None: this one's own)."""
    return {**os.environ, **python[2]} if len(python) > 2 else None


BUILDS = ["dynamic", "static"]


@pytest.fixture
def build(request, monkeypatch):
    """Which build a test runs (parametrize it over BUILDS, indirect): the
    static one differs where it reaches what the host has (curl for pushes,
    debuginfod-find, /etc/group), so the tests of those run both."""
    if request.param == "static":
        if not os.access(STATIC, os.X_OK):
            pytest.fail(f"no static build at {STATIC}: make static")
        monkeypatch.setattr(sys.modules[__name__], "PYPERF", STATIC)
    return request.param


both_builds = pytest.mark.parametrize("build", BUILDS, indirect=True)


def run_pyperf(args, timeout=120, **kw):
    return subprocess.run([PYPERF] + list(args), capture_output=True, text=True,
                          timeout=timeout, **kw)


def record_workload(python, tmp_path, script, *args, hz=999, also=(), extra=(), pyflags=(),
                    env=None):
    """Record `python [pyflags] workloads/script args` to tmp_path/p.folded and
    one more file per suffix in `also` (p.svg, p.pb.gz, ...); returns (folded
    stacks, [those paths], the finished run).  The run must succeed."""
    folded = tmp_path / "p.folded"
    outs = [tmp_path / f"p{suffix}" for suffix in also]
    r = run_pyperf(["-F", str(hz), "-o", str(folded)] + [a for o in outs for a in ("-o", str(o))] +
                   list(extra) + ["--", python, *pyflags, os.path.join(WORKLOADS, script), *args],
                   env=env)
    assert r.returncode == 0, r.stderr
    return parse_folded(folded.read_text()), outs, r


def parse_folded(text):
    """[(frames root-first, count)] from folded text."""
    stacks = []
    for line in text.splitlines():
        if not line.strip():
            continue
        stack, _, count = line.rpartition(" ")
        stacks.append((stack.split(";"), int(count)))
    return stacks


FRAME_RE = re.compile(r"^(?P<name>.*) \((?P<file>.*?)(?::(?P<line>-?\d+))?\)$")


def func_name(frame):
    m = FRAME_RE.match(frame)
    return m.group("name") if m else frame


def is_kernel(frame):
    return frame.endswith("_[k]")


NATIVE_MARKS = ("[native truncated]", "[native incomplete]", "[native pending]", "[unmerged native]",
                "[stack scan]")


def is_native(frame):
    """A native frame is "symbol (binary)": its file is not Python source;
    "[unknown]" is native code outside any known binary."""
    if frame == "[unknown]":
        return True
    m = FRAME_RE.match(frame)
    if not m or is_kernel(frame):
        return False
    if m.group("line") is not None:
        return False    # only Python frames carry a line, whatever their file is called
    f = m.group("file")
    return not (f.endswith(".py") or f.startswith("<"))


def is_python(frame):
    m = FRAME_RE.match(frame)
    return bool(m) and not is_kernel(frame) and not is_native(frame)


# what the loader adds where a sample ran the cyclic garbage collector
GC_MARK = "<GC>"


def names(frames):
    """Function names of the Python (and synthetic root) frames; kernel frames,
    native frames and the markers (the merge's, <GC>) left out."""
    return [func_name(f) for f in frames
            if not is_kernel(f) and not is_native(f) and f not in NATIVE_MARKS and f != GC_MARK]


def py_leaf(frames):
    """The leaf Python (or synthetic root) frame's name; None for the stack of
    a thread that ran no Python code (native and kernel frames only)."""
    fn = names(frames)
    return fn[-1] if fn else None


PENDING = "[native pending]"


def count_pending(stacks):
    """Samples taken while the table of a binary they ran in was being built
    (tables are built when a sample first needs them): the native part stops
    there.  Start-up costs a few; tests bound them apart from real cuts."""
    return sum(c for f, c in stacks if PENDING in f)


def pending_beyond_first_tables(stacks, stats_path, hz=999):
    """(pending samples, how many the time before the first complete native
    stack explains, a line of the run's unwind figures).  Until the first
    tables are built every sample is pending; how long that takes depends
    on the machine's load (0.5 s of a 3 s run in CI, once as start-up
    imports, twice well into the workload's own loop), and the bench
    measures it.  Pending beyond that time (a table that never arrives, code
    mapped later and never looked at) is what a test bounds."""
    with open(stats_path) as f:
        st = json.load(f)
    first = st.get("first_complete_native_ms") or 0
    why = ", ".join(f"{k} {st.get(k)}" for k in ("first_complete_native_ms",
                                                  "unwind_first_table_ms", "unwind_build_ms",
                                                  "unwind_built", "stat_native_pending", "load_s"))
    return count_pending(stacks), int(hz * first / 1000), why


def all_names(frames):
    """Function names of every frame: Python, native, markers, kernel."""
    return [func_name(f) for f in frames]


@contextlib.contextmanager
def mp_tree(pids, methods, python=None):
    """workloads/mp_tree.py under `python` (the newest supported): a parent
    whose multiprocessing workers (start methods `methods`, "spawn,fork")
    spin; yields (the parent's Popen, the workers' pids) once they all run,
    and kills them all after."""
    pids = str(pids)
    tree = subprocess.Popen([python or SUPPORTED[-1][0], os.path.join(WORKLOADS, "mp_tree.py"),
                             pids, methods], stdout=subprocess.DEVNULL)

    def listed():
        return open(pids).read().split() if os.path.exists(pids) else []
    try:
        deadline = time.monotonic() + 30
        while "ready" not in listed():
            assert time.monotonic() < deadline and tree.poll() is None, "mp_tree did not start"
            time.sleep(0.1)
        yield tree, {int(x) for x in listed() if x != "ready"} - {tree.pid}
    finally:
        tree.kill()
        tree.wait()
        for w in [int(x) for x in listed() if x != "ready"]:
            try:
                os.kill(w, signal.SIGKILL)
            except ProcessLookupError:
                pass
