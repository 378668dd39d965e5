"""The Debian package (`make deb`, scripts/mkdeb): lintian finds no error,
and it installs into a fresh Debian root (bookworm's minbase with the
libraries it links, made by scripts/setup --test-deps with debootstrap; the
test works in an overlay of it, in a mount namespace of its own), where
`systemd-analyze verify` passes its unit and the unit's own command line,
run the way the unit runs it (its group, and only its capabilities in the
bounding, inheritable and ambient sets), profiles a CPython process of the
host into the group-readable directory that the packaged config names."""
import os
import re
import subprocess
import textwrap

import pytest

from conftest import ROOT, SUPPORTED, WORKLOADS
from pprofread import pprof_total

DEBROOT = os.environ.get("PYPERF_DEBROOT", "/var/cache/pyperf-bpf/debroot")
# linux/capability.h
CAP_NUMBERS = {"dac_read_search": 2, "sys_ptrace": 19, "sys_resource": 24, "perfmon": 38,
               "bpf": 39, "checkpoint_restore": 40}


def build_deb():
    r = subprocess.run(["make", "-s", "deb"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    deb = r.stdout.strip().splitlines()[-1]
    assert re.fullmatch(r"build/pyperf-bpf_[\d.]+_\w+\.deb", deb), r.stdout
    return os.path.join(ROOT, deb)


def unit_settings(text):
    """ExecStart, Group and the capability set of a unit file."""
    get = lambda key: re.search(rf"^{key}=(.*)$", text, re.M).group(1).strip()
    caps = [c.lower().replace("cap_", "") for c in get("CapabilityBoundingSet").split()]
    assert get("AmbientCapabilities").split() == get("CapabilityBoundingSet").split()
    return get("ExecStart"), get("Group"), caps


def test_package_is_lintian_clean_installs_and_runs_as_its_unit(tmp_path):
    assert SUPPORTED, "no supported CPython"
    if not os.path.exists(os.path.join(DEBROOT, "usr/bin/dpkg")):
        pytest.fail(f"no Debian root at {DEBROOT}: scripts/setup --test-deps makes it with debootstrap")
    deb = build_deb()
    r = subprocess.run(["lintian", "--fail-on", "error", "--no-tag-display-limit", deb],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and not re.search(r"^E: ", r.stdout, re.M), r.stdout + r.stderr
    listing = subprocess.run(["dpkg-deb", "-c", deb], capture_output=True, text=True).stdout
    for mode, path in [("-rwxr-xr-x", "./usr/bin/pyperf-bpf"),
                       ("-rw-r--r--", "./usr/share/man/man1/pyperf-bpf.1.gz"),
                       ("-rw-r--r--", "./usr/share/man/man1/pyperf-bpf-record.1.gz"),
                       ("-rw-r--r--", "./usr/share/man/man1/pyperf-bpf-daemon.1.gz"),
                       ("-rw-r--r--", "./usr/share/bash-completion/completions/pyperf-bpf"),
                       ("-rw-r--r--", "./usr/share/zsh/vendor-completions/_pyperf-bpf"),
                       ("-rw-r--r--", "./lib/systemd/system/pyperf-bpf.service"),
                       ("-rw-r--r--", "./etc/pyperf-bpf/daemon.conf"),
                       ("-rw-r--r--", "./usr/share/doc/pyperf-bpf/copyright")]:
        assert re.search(rf"^{re.escape(mode)} root/root .* {re.escape(path)}$", listing, re.M), \
            (path, listing)
    # the man page renders
    man = subprocess.run(["sh", "-c", f"dpkg-deb --fsys-tarfile {deb} | tar -xO "
                          "./usr/share/man/man1/pyperf-bpf.1.gz | zcat | man -l -"],
                         capture_output=True, text=True, env=dict(os.environ, MANWIDTH="80"))
    assert "sampling profiler for CPython" in man.stdout and "--otlp" in man.stdout.replace("‐", "-"), \
        man.stdout[:2000] + man.stderr

    work = tmp_path / "fresh"
    root = work / "root"
    for d in ("upper", "work", "root"):
        (work / d).mkdir(parents=True)
    w = subprocess.Popen([SUPPORTED[-1][0], os.path.join(WORKLOADS, "split.py"), "30",
                          str(tmp_path / "t.json")], stdout=subprocess.PIPE, text=True)
    try:
        assert w.stdout.readline().strip() == "ready"
        script = textwrap.dedent(f"""\
            set -eu
            mount -t overlay overlay -o lowerdir={DEBROOT},upperdir={work}/upper,workdir={work}/work {root}
            cp {deb} {root}/tmp/pkg.deb
            chroot {root} dpkg -i /tmp/pkg.deb
            echo "== verify"
            # (--man=no: the man page is checked above; this root has no man-db)
            systemd-analyze verify --man=no --root={root} /lib/systemd/system/pyperf-bpf.service 2>&1 && echo verify-ok
            echo "== unit"
            cat {root}/lib/systemd/system/pyperf-bpf.service
            """)
        r = subprocess.run(["unshare", "--mount", "--propagation", "private", "bash", "-c", script],
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stdout + r.stderr
        assert "verify-ok" in r.stdout, r.stdout
        unit = r.stdout.split("== unit\n", 1)[1]
        exe, group, caps = unit_settings(unit)
        assert exe.startswith("/usr/bin/pyperf-bpf daemon --config /etc/pyperf-bpf/daemon.conf"), exe
        assert group == "pyperf-bpf" and "bpf" in caps and "sys_admin" not in caps, (group, caps)
        # the unit's capabilities that this machine's root has (a sandbox may
        # lack some: CAP_SYS_RESOURCE here, which only kernels before 5.11
        # need for the maps' locked memory)
        have = int(re.search(r"^CapBnd:\s*([0-9a-f]+)$", open("/proc/self/status").read(),
                             re.M).group(1), 16)
        caps = [c for c in caps if have >> CAP_NUMBERS[c] & 1]
        capset = "-all," + ",".join("+" + c for c in caps)
        # as systemd would: StateDirectory made, the group, only those
        # capabilities; SIGTERM writes the interval under way
        run = textwrap.dedent(f"""\
            set -eu
            mount -t overlay overlay -o lowerdir={DEBROOT},upperdir={work}/upper,workdir={work}/work {root}
            for d in proc sys dev; do mount --rbind /$d {root}/$d; done
            mkdir -p -m 0755 {root}/var/lib/pyperf-bpf
            chroot {root} setpriv --regid=pyperf-bpf --clear-groups --bounding-set={capset} \\
                --inh-caps={capset} --ambient-caps={capset.replace("-all,", "")} -- {exe} \\
                --log /var/lib/pyperf-bpf/daemon.log &
            pid=$!
            sleep 8
            kill -TERM $pid
            wait $pid
            echo "rc=$?"
            cat {root}/var/lib/pyperf-bpf/daemon.log
            """)
        r = subprocess.run(["unshare", "--mount", "--propagation", "private", "bash", "-c", run],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0 and "rc=0" in r.stdout, r.stdout + r.stderr
    finally:
        w.kill()
        w.wait()
    gid = int(open(work / "upper" / "etc" / "group").read().split("pyperf-bpf:x:")[1].split(":")[0])
    out = work / "upper" / "var" / "lib" / "pyperf-bpf" / "profiles"
    st = os.stat(out)
    assert (oct(st.st_mode & 0o777), st.st_gid) == (oct(0o750), gid)
    files = os.listdir(out)
    mine = [f for f in files if f"-{w.pid}-" in f]
    assert mine, (files, r.stdout)
    for f in files:
        fs = os.stat(out / f)
        assert (oct(fs.st_mode & 0o777), fs.st_gid) == (oct(0o640), gid), f
    assert pprof_total(str(out / mine[0])) > 0
