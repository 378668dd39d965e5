"""Real containers: podman with runc (crun refuses this kernel's hybrid
cgroups), each from an image imported from a local root filesystem (the
Debian root scripts/setup makes, plus a CPython; no registry).  Two
containers with two CPython versions, one of them at a path that does not
exist on the host, beside a CPython of the host: a whole-host recording
names every frame and groups by container (report, folded roots, OTLP
resource attributes), dump shows the container and the pid inside it, and
the daemon profiles only the container it is told.

podman 4.3.1 ignores --ulimit with --rootfs, and its default limits are
more than this machine's root may set (it lacks CAP_SYS_RESOURCE): hence
imported images and --ulimit nofile=1024:1024 --ulimit nproc=4096:4096."""
import os
import re
import shutil
import signal
import subprocess
import time

import pytest

from conftest import PYPERF, SUPPORTED, WORKLOADS, otlp_decode, parse_folded
from pprofread import pprof_raw

DEBROOT = os.environ.get("PYPERF_DEBROOT", "/var/cache/pyperf-bpf/debroot")
PODMAN = ["podman", "--runtime", "runc"]


def pyenv(minor):
    found = [p for p, v in SUPPORTED if "/.pyenv/" in p and v == (3, minor)]
    if not found:
        pytest.fail(f"no pyenv CPython 3.{minor} (the container test uses 3.11 and 3.12)")
    return os.path.dirname(os.path.dirname(os.path.realpath(found[0])))


def make_image(tmp_path, tag, prefix, where):
    """The Debian root with the CPython installed at prefix copied to where
    (without its test suite and site-packages) and the workload in /w."""
    stage = tmp_path / tag
    subprocess.run(["cp", "-al", DEBROOT, str(stage)], check=True)
    dest = stage / where.lstrip("/")
    dest.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(f"tar -C {prefix} -c --exclude=./lib/python3.*/test "
                   f"--exclude=./lib/python3.*/site-packages . | "
                   f"(mkdir -p {dest} && tar -C {dest} -x)", shell=True, check=True)
    (stage / "w").mkdir()
    shutil.copy(os.path.join(WORKLOADS, "split.py"), stage / "w")
    r = subprocess.run(f"tar -C {stage} -c . | podman import - localhost/pyperf-test:{tag}",
                       shell=True, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    shutil.rmtree(stage)
    return f"localhost/pyperf-test:{tag}"


def run_container(name, image, where, minor, service):
    r = subprocess.run(PODMAN + ["run", "-d", "--name", name, "--ulimit", "nofile=1024:1024",
                                 "--ulimit", "nproc=4096:4096", "--network", "none",
                                 "-e", f"LD_LIBRARY_PATH={where}/lib", "-e", f"PYTHONHOME={where}",
                                 "-e", f"PYPERF_SERVICE={service}", image,
                                 f"{where}/bin/python3.{minor}", "/w/split.py", "40", "/w/t.json"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    cid = r.stdout.strip().splitlines()[-1]
    pid = int(subprocess.run(PODMAN[:1] + ["inspect", name, "--format", "{{.State.Pid}}"],
                             capture_output=True, text=True).stdout)
    return cid, pid


@pytest.fixture
def two_containers(tmp_path):
    if not shutil.which("podman") or not shutil.which("runc"):
        pytest.fail("podman and runc are missing: scripts/setup --test-deps installs them")
    if not os.path.exists(os.path.join(DEBROOT, "usr/bin/dpkg")):
        pytest.fail(f"no Debian root at {DEBROOT}: scripts/setup --test-deps makes it")
    names = ["pyperf-test-a", "pyperf-test-b"]
    subprocess.run(PODMAN[:1] + ["rm", "-f"] + names, capture_output=True)
    images, host = [], None
    try:
        # a: CPython 3.12 at /opt/py312, a path the host does not have
        images.append(make_image(tmp_path, "a", pyenv(12), "/opt/py312"))
        # b: CPython 3.11 at its host path
        images.append(make_image(tmp_path, "b", pyenv(11), pyenv(11)))
        a = run_container(names[0], images[0], "/opt/py312", 12, "ctr-a")
        b = run_container(names[1], images[1], pyenv(11), 11, "ctr-b")
        host = subprocess.Popen([SUPPORTED[-1][0], os.path.join(WORKLOADS, "split.py"), "40",
                                 str(tmp_path / "h.json")], stdout=subprocess.PIPE, text=True)
        assert host.stdout.readline().strip() == "ready"
        time.sleep(1)  # the containers' calibration is over too
        yield a, b, host.pid
    finally:
        if host:
            host.kill()
            host.wait()
        subprocess.run(PODMAN[:1] + ["rm", "-f", "-t", "0"] + names, capture_output=True)
        for image in images:
            subprocess.run(PODMAN[:1] + ["rmi", "-f", image], capture_output=True)


def test_two_containers_and_the_host(two_containers, tmp_path):
    (aid, apid), (bid, bpid), hpid = two_containers
    assert not os.path.exists("/opt/py312")
    outs = [tmp_path / n for n in ("r.txt", "p.folded", "p.otlp")]
    r = subprocess.run([PYPERF, "-d", "3", "--containers"] + [a for o in outs for a in ("-o", str(o))],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    report = outs[0].read_text()
    for cid, pid, ver in ((aid, apid, "3.12"), (bid, bpid, "3.11")):
        assert re.search(rf"^  {pid} .*\(Python {ver}; podman {cid[:12]}, pid 1 in it\): \d+ samples",
                         report, re.M), report
        assert re.search(rf"^  podman {cid[:12]}: \d+ samples \([\d.]+%\), 1 processes: {pid} \(1 in it\)",
                         report, re.M), report
    assert re.search(rf"^  host: \d+ samples .* {hpid}\b", report, re.M), report
    # each container's stacks: its workload's frames, named, under its root
    stacks = parse_folded(outs[1].read_text())
    for cid, pid in ((aid, apid), (bid, bpid)):
        mine = [f for f, c in stacks if f[0] == f"container podman {cid[:12]}" and
                f[1].startswith(f"process {pid} ")]
        leaves = {fr.split(" (")[0] for f in mine for fr in f}
        assert {"leaf_a", "leaf_b", "run_schedule", "<module>"} <= leaves, sorted(leaves)[:40]
        assert any("(/w/split.py:" in fr for f in mine for fr in f)
    a_native = {fr for f, c in stacks if f[0] == f"container podman {aid[:12]}" for fr in f
                if fr.endswith("(libpython3.12.so.1.0)")}
    assert a_native, "container a's libpython frames are not named"
    res = {x["attrs"]["process.pid"]: x["attrs"] for x in otlp_decode(outs[2])["resources"]}
    assert res[apid]["container.id"] == aid and res[apid]["pyperf.container.pid"] == 1
    assert res[bpid]["container.id"] == bid and res[bpid]["pyperf.container.pid"] == 1
    assert "container.id" not in res[hpid]
    # dump: the container and the pid inside it
    d = subprocess.run([PYPERF, "dump", "-p", str(apid)], capture_output=True, text=True, timeout=60)
    assert d.returncode == 0, d.stderr
    assert f"Container podman {aid[:12]}, pid 1 in it" in d.stdout and "/w/split.py" in d.stdout, \
        d.stdout
    # the daemon, told one container, profiles it alone
    dd = tmp_path / "d"
    dmn = subprocess.Popen([PYPERF, "daemon", "-F", "49", "-i", "1", "--dir", str(dd),
                            "--container", bid[:10]], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    time.sleep(4)
    dmn.send_signal(signal.SIGTERM)
    _, err = dmn.communicate(timeout=60)
    assert dmn.returncode == 0, err
    files = os.listdir(dd)
    assert files and all(f.startswith(f"ctr-b-{bpid}-") for f in files), files
    labels = pprof_raw(str(dd / files[0]))[0][2]
    assert labels.get("container_id") == bid and labels.get("container_pid") == "1", labels
