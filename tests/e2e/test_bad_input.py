"""Bad input: one line on stderr, a non-zero exit, and no output file (nor a
temporary one) left behind."""
import os
import shutil
import subprocess
import sys

import pytest

from conftest import PYPERF, run_pyperf


def assert_clean_failure(r, tmp_path, needle, code=None):
    assert r.returncode != 0
    if code is not None:
        assert r.returncode == code, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("pyperf-bpf: ") and needle in lines[0], lines[0]
    assert os.listdir(tmp_path) == [], os.listdir(tmp_path)


@pytest.mark.parametrize("args,needle", [
    (["-F", "0"], "-F"), (["-F", "1000000"], "-F"), (["-F", "abc"], "-F"), (["-F", "-5"], "-F"),
    (["-d", "-1"], "-d"), (["-d", "0"], "-d"), (["-d", "soon"], "-d"), (["-d", "nan"], "-d"),
    (["-p", "abc"], "-p"), (["-p", "0"], "-p"), (["-p", "-3"], "-p"), (["-p", "12,"], "-p"),
    (["-f", "pdf"], "unknown format"), (["--bogus"], "unknown"), (["-d"], "needs a value"),
    (["--frequency"], "--frequency: needs a value"), (["--min-age", "5"], "goes with"),
    (["-o", "{tmp}/out.weird"], "cannot tell the format"),
    (["-p", "1", "--", "true"], "not both"),
    (["-o", "{tmp}/a.folded", "-o", "{tmp}/a.folded"], "given twice"),
    (["-o", "{tmp}/a.folded", "-o", "{tmp}/b.svg", "-f", "svg"], "-f goes with one -o"),
    (["-o", "{tmp}/a.folded", "-o", "{tmp}/b.weird"], "cannot tell the format"),
    (["--unwind-mb", "0"], "--unwind-mb"), (["--unwind-mb", "lots"], "--unwind-mb"),
])
def test_bad_option_is_one_line_and_exit_2(args, needle, tmp_path):
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    if "-o" not in args:
        args = ["-o", str(tmp_path / "x.folded")] + args
    r = run_pyperf(args)
    assert_clean_failure(r, tmp_path, needle, code=2)


@pytest.mark.parametrize("command", [["-d", "1"], ["top", "-d", "1"], ["daemon", "--dir", "{tmp}/d"]],
                         ids=["record", "top", "daemon"])
@pytest.mark.parametrize("var,value", [("PYPERF_COUNTS_ENTRIES", "lots"),
                                       ("PYPERF_COUNTS_ENTRIES", "0"),
                                       ("PYPERF_UNWIND_BYTES", "12"),
                                       ("PYPERF_OFFCPU_SLOTS", "3"),
                                       ("PYPERF_BPF_LOOP", "no")])
def test_bad_environment_is_refused_by_every_command(command, var, value, tmp_path):
    """Every command reads the PYPERF_* variables through one checked path:
    a bad value is a one-line error before anything starts."""
    args = [a.replace("{tmp}", str(tmp_path)) for a in command]
    r = run_pyperf(args, env=dict(os.environ, **{var: value}), timeout=30)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and var in lines[0] and value in lines[0], r.stderr
    assert os.listdir(tmp_path) == [], os.listdir(tmp_path)


def test_no_such_pid(tmp_path):
    p = subprocess.Popen(["true"])
    p.wait()  # a pid that existed and is gone now
    r = run_pyperf(["-p", str(p.pid), "-d", "1", "-o", str(tmp_path / "x.folded")])
    assert_clean_failure(r, tmp_path, "no such process")


def test_pid_that_ends_while_it_is_attached_to(tmp_path):
    """The loader reads a -p process, writes its entry, then checks that the
    process is still the image it read (an exec or an exit in between would
    leave an entry read through the wrong addresses).  gdb holds the loader
    at that check while the process is killed: one clear line, not "cannot
    configure the sampler: No such file or directory"."""
    if not shutil.which("gdb"):
        pytest.fail("gdb is missing: scripts/setup --test-deps installs it")
    t = subprocess.Popen([sys.executable, "-c", "import time; print('ready', flush=True); "
                          "time.sleep(60)"], stdout=subprocess.PIPE, text=True)
    try:
        assert t.stdout.readline().strip() == "ready"
        # SIGKILL takes effect when the target next runs: on a loaded machine
        # the loader could go on before it did.  gdb waits until it is a
        # zombie (dead, not reaped: this test is its parent)
        dead = (f"shell while ! grep -q '^{t.pid} (.*) Z' /proc/{t.pid}/stat; do sleep 0.05; "
                "done")
        r = subprocess.run(["gdb", "-q", "-batch", "-ex", "break procmaps_same_image", "-ex", "run",
                            "-ex", f"shell kill -9 {t.pid}", "-ex", dead, "-ex", "continue",
                            "--args", PYPERF, "-p", str(t.pid), "-d", "2",
                            "-o", str(tmp_path / "x.folded")],
                           capture_output=True, text=True, timeout=120)
    finally:
        t.kill()
        t.wait()
    assert "hit Breakpoint 1" in r.stdout, r.stdout + r.stderr
    assert "exited with code 01" in r.stdout, r.stdout  # gdb's own status is 0
    assert_clean_failure(subprocess.CompletedProcess(r.args, 1, r.stdout, r.stderr), tmp_path,
                         f"pid {t.pid}: the process ended while it was attached to")


def test_pid_that_is_not_python(tmp_path):
    p = subprocess.Popen(["sleep", "60"])
    try:
        r = run_pyperf(["-p", str(p.pid), "-d", "1", "-o", str(tmp_path / "x.folded")])
        assert_clean_failure(r, tmp_path, "is not a CPython process")
    finally:
        p.kill()
        p.wait()


@pytest.mark.parametrize("target", ["/nonexistent-dir/x.folded", "/etc/hostname/x.folded",
                                    "/proc/x.folded"])
def test_unwritable_output(target, tmp_path):
    r = run_pyperf(["-d", "1", "-o", target])
    assert r.returncode != 0
    assert len(r.stderr.strip().splitlines()) == 1 and "cannot write" in r.stderr, r.stderr
    assert not os.path.exists(target)


def test_command_that_cannot_run(tmp_path):
    r = run_pyperf(["-o", str(tmp_path / "x.folded"), "--", "/nonexistent/program"])
    assert_clean_failure(r, tmp_path, "cannot run /nonexistent/program", code=127)


def test_kernel_without_btf(tmp_path):
    env = dict(os.environ, PYPERF_VMLINUX_BTF="/nonexistent/vmlinux")
    r = run_pyperf(["-d", "1", "-o", str(tmp_path / "x.folded")], env=env)
    assert_clean_failure(r, tmp_path, "no BTF")


def test_not_root(tmp_path):
    os.chmod(tmp_path, 0o777)
    cmd = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all",
           PYPERF, "-d", "1", "-o", str(tmp_path / "x.folded")]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert_clean_failure(r, tmp_path, "permission denied")


def test_one_unwritable_output_of_several_leaves_no_file(tmp_path):
    """The writable file of a pair is not created when the other cannot be."""
    r = run_pyperf(["-d", "1", "-o", str(tmp_path / "ok.folded"), "-o", "/nonexistent-dir/x.svg"])
    assert_clean_failure(r, tmp_path, "cannot write /nonexistent-dir/x.svg")


def test_outputs_that_are_no_regular_file_are_written_in_place(tmp_path):
    """-o /dev/null (or a FIFO, a terminal) is written directly: the file
    written whole and renamed into place would replace the device node with
    a regular file (it did, as root).  A symbolic link keeps pointing at its
    target, which gets the profile."""
    from conftest import SUPPORTED, WORKLOADS
    assert SUPPORTED, "no supported CPython"
    cmd = ["--", SUPPORTED[-1][0], os.path.join(WORKLOADS, "split.py"), "1",
           str(tmp_path / "t.json")]
    before = os.stat("/dev/null")
    r = run_pyperf(["-f", "folded", "-o", "/dev/null"] + cmd)
    after = os.stat("/dev/null")
    assert r.returncode == 0, r.stderr
    assert (after.st_mode, after.st_rdev) == (before.st_mode, before.st_rdev)
    fifo = tmp_path / "fifo.folded"
    os.mkfifo(fifo)
    target = tmp_path / "real.folded"
    link = tmp_path / "link.folded"
    os.symlink(target.name, link)
    reader = subprocess.Popen(["timeout", "60", "cat", str(fifo)], stdout=subprocess.PIPE)
    r = run_pyperf(["-o", str(fifo), "-o", str(link)] + cmd)
    streamed = reader.communicate(timeout=90)[0].decode()
    assert r.returncode == 0, r.stderr
    assert os.path.islink(link) and os.readlink(link) == target.name
    assert "leaf_a" in target.read_text() and streamed == target.read_text()
    assert sorted(os.listdir(tmp_path)) == ["fifo.folded", "link.folded", "real.folded", "t.json"]


@pytest.mark.parametrize("args", [["frobnicate"], ["fold", "a.folded", "b.folded"]])
def test_unknown_first_word_is_an_error_that_lists_the_commands(args, tmp_path):
    """the first word is a command or an option: anything else is one line
    naming the commands and how to profile a program, exit 2, nothing run
    (a word taken for a program ran the system's diff for `pyperf-bpf diff`
    before diff was a command)"""
    r = run_pyperf(args, cwd=tmp_path, timeout=30)
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert r.stdout == "", r.stdout
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    for command in ("record", "dump", "top", "leaks", "daemon", "diff", "-- " + args[0]):
        assert command in lines[0], lines[0]


def test_diff_without_its_two_files_says_so(tmp_path):
    r = run_pyperf(["diff"], cwd=tmp_path, timeout=30)
    assert r.returncode == 2 and r.stdout == "", (r.returncode, r.stdout, r.stderr)
    assert r.stderr.count("\n") == 1 and "BASE and NEW" in r.stderr, r.stderr


def test_a_program_after_the_double_dash_is_still_profiled(tmp_path):
    """pyperf-bpf -- diff A B runs diff (here: two files that differ)"""
    (tmp_path / "a").write_text("one\n")
    (tmp_path / "b").write_text("two\n")
    r = run_pyperf(["-o", str(tmp_path / "p.folded"), "--", "diff", str(tmp_path / "a"),
                    str(tmp_path / "b")], timeout=60)
    assert "< one" in r.stdout and "> two" in r.stdout, (r.stdout, r.stderr)


def test_a_recording_with_no_sample_says_so(tmp_path):
    """record -o x.svg -- /bin/true: no Python ran, so nothing was sampled:
    one line on stderr, exit 1, the (empty, valid) file written all the
    same; --allow-empty exits 0"""
    out = tmp_path / "x.svg"
    r = run_pyperf(["-o", str(out), "--", "/bin/true"], timeout=60)
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert "nothing was sampled" in r.stderr and r.stderr.count("\n") == 1, r.stderr
    assert out.read_text().rstrip().endswith("</svg>")
    r = run_pyperf(["--allow-empty", "-o", str(out), "--", "/bin/true"], timeout=60)
    assert r.returncode == 0 and "nothing was sampled" not in r.stderr, r.stderr
