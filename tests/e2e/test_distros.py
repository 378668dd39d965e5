"""One binary for every distribution: the static build (make static) links
no shared library and asks nothing of the host's C library at run time; on
the user spaces of Debian 11, 12 and 13 (debootstrap roots that
scripts/setup --test-deps makes in /var/cache/pyperf-bpf/roots, PYPERF_ROOTS)
it records that release's own python3 (3.9, 3.11, 3.13) with the split's
shares right, named and merged; the .deb (make deb) installs there with
apt-get and its unit verifies; the wheel (make wheel) installs with pip into
a venv of that python3 and puts a working pyperf-bpf on the venv's PATH
(distro_check.py does each, in a chroot on this kernel; test_kernels.py runs
bullseye's with its own 5.10 kernel).  The version is one number:
--version, the .deb's and the wheel's."""
import json
import os
import re
import subprocess
import zipfile

import pytest

from conftest import PYPERF, ROOT, STATIC

ROOTS = os.environ.get("PYPERF_ROOTS", "/var/cache/pyperf-bpf/roots")
AUDITWHEEL = os.path.join(os.environ.get("PYPERF_AUDITWHEEL", "/var/cache/pyperf-bpf/auditwheel"),
                          "bin", "auditwheel")
CHECK = os.path.join(ROOT, "tests", "e2e", "distro_check.py")
RELEASES = {"bullseye": "3.9", "bookworm": "3.11", "trixie": "3.13"}


def version():
    return subprocess.run([os.path.join(ROOT, "scripts/version")], capture_output=True, text=True,
                          check=True).stdout.strip()


@pytest.fixture(scope="module")
def packages():
    """(the .deb, the wheel), built from the static binary"""
    r = subprocess.run(["make", "-s", "deb", "wheel"], cwd=ROOT, capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    made = r.stdout.split()
    deb = next(p for p in made if p.endswith(".deb"))
    whl = next(p for p in made if p.endswith(".whl"))
    return os.path.join(ROOT, deb), os.path.join(ROOT, whl)


def test_the_static_build_links_no_shared_library():
    assert os.access(STATIC, os.X_OK), "make static"
    ldd = subprocess.run(["ldd", STATIC], capture_output=True, text=True)
    assert re.search(r"not a dynamic executable|statically linked", ldd.stdout + ldd.stderr), \
        ldd.stdout + ldd.stderr
    dyn = subprocess.run(["readelf", "-d", STATIC], capture_output=True, text=True).stdout
    assert "(NEEDED)" not in dyn and "(INTERP)" not in dyn, dyn
    head = subprocess.run(["readelf", "-lW", STATIC], capture_output=True, text=True).stdout
    assert "INTERP" not in head, head
    # the link warns of what would need the host's libc (dlopen, NSS): the
    # Makefile fails on it, and this is the log it read
    log = open(os.path.join(os.path.dirname(STATIC), "pyperf-bpf.log")).read()
    assert "statically linked applications requires" not in log, log
    # the same program: --version and the commands' help
    for args in (["--version"], ["record", "--help"]):
        a = subprocess.run([PYPERF] + args, capture_output=True, text=True)
        b = subprocess.run([STATIC] + args, capture_output=True, text=True)
        assert (a.returncode, a.stdout) == (b.returncode, b.stdout), (a.stdout, b.stdout)
    version_line = subprocess.run([STATIC, "--version"], capture_output=True, text=True).stdout
    assert version_line.strip() == f"pyperf-bpf {version()}", version_line


def test_the_wheel_is_tagged_as_auditwheel_sees_it(packages):
    _, whl = packages
    if not os.access(AUDITWHEEL, os.X_OK):
        pytest.fail(f"no auditwheel at {AUDITWHEEL}: scripts/setup --test-deps installs it from PyPI")
    name = os.path.basename(whl)
    m = re.fullmatch(r"pyperf_bpf-([\d.]+)-py3-none-([\w.]+)\.whl", name)
    assert m and m.group(1) == version(), name
    tags = m.group(2).split(".")
    r = subprocess.run([AUDITWHEEL, "show", whl], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    text = " ".join(r.stdout.split())
    assert "requires no external shared libraries" in text, text
    # the binary is consistent with manylinux_X_Y: a tag of glibc X.Y or
    # later is true of it
    seen = re.search(r'consistent with the following platform tag: "manylinux_(\d+)_(\d+)_x86_64"',
                     text)
    assert seen, text
    for t in tags:
        mt = re.fullmatch(r"manylinux_(\d+)_(\d+)_x86_64", t)
        if mt:
            assert (int(mt.group(1)), int(mt.group(2))) >= (int(seen.group(1)), int(seen.group(2))), \
                (t, text)
        else:
            assert t == "manylinux2014_x86_64", t  # the alias of manylinux_2_17
    with zipfile.ZipFile(whl) as z:
        names = z.namelist()
        script = f"pyperf_bpf-{version()}.data/scripts/pyperf-bpf"
        assert script in names, names
        assert z.getinfo(script).external_attr >> 16 & 0o111, "the script is not executable"
        meta = z.read(f"pyperf_bpf-{version()}.dist-info/METADATA").decode()
        assert f"Version: {version()}" in meta and "Name: pyperf-bpf" in meta, meta
    deb, _ = packages
    control = subprocess.run(["dpkg-deb", "-f", deb], capture_output=True, text=True).stdout
    assert re.search(rf"^Version: {re.escape(version())}$", control, re.M), control
    assert re.search(r"^Depends: adduser, procps$", control, re.M), control


_runs = {}


@pytest.fixture(scope="module", params=list(RELEASES))
def release(request, packages, tmp_path_factory):
    """distro_check.py's results on one release's root, run once"""
    suite = request.param
    if suite not in _runs:
        root = os.path.join(ROOTS, suite)
        if not os.path.exists(os.path.join(root, "usr/bin/python3")):
            pytest.fail(f"no Debian {suite} root at {root}: scripts/setup --test-deps makes it "
                        "with debootstrap")
        out = str(tmp_path_factory.mktemp(f"distro-{suite}"))
        deb, whl = packages
        r = subprocess.run(["python3", CHECK, root, STATIC, out, "--overlay", "--deb", deb,
                            "--wheel", whl], capture_output=True, text=True, timeout=900)
        path = os.path.join(out, "results.json")
        res = json.load(open(path)) if os.path.exists(path) else None
        _runs[suite] = (res, r.stdout + r.stderr)
    return suite, _runs[suite]


@pytest.mark.parametrize("check", ["record", "deb", "wheel"])
def test_static_build_deb_and_wheel_on_debian(release, check):
    suite, (res, log) = release
    assert res, f"{suite}: distro_check.py wrote no results: {log[-2000:]}"
    c = res[check]
    assert c["ok"], f"{check} on {suite}: {c['why']}"
    if check == "record":
        assert c["python"].startswith(RELEASES[suite] + "."), c["python"]
    if check == "deb":
        assert c["version"] == f"pyperf-bpf {version()}", c


def test_static_build_without_curl_refuses_to_push_with_one_line(tmp_path):
    """the static build pushes with the host's curl program: without one on
    PATH the daemon says so and stops, before profiling anything"""
    for push in (["--push", "http://127.0.0.1:9"], ["--otlp", "http://127.0.0.1:9"]):
        r = subprocess.run([STATIC, "daemon", "--spool", str(tmp_path / "spool")] + push,
                           capture_output=True, text=True, timeout=60,
                           env=dict(os.environ, PATH=str(tmp_path)))
        assert r.returncode != 0, r.stderr
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and "need the curl program on PATH" in lines[0], r.stderr
