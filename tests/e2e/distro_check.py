"""The static build, the .deb and the wheel on another Debian release's user
space (tests/e2e/test_distros.py; and test_kernels.py runs it inside the
5.10 guest on bullseye's root, so that release runs with its own kernel).

A program of its own, with no pytest, so that it runs as it is inside a
virtual machine.  In a mount namespace of its own it chroots into ROOT (a
debootstrap root of that release, with its python3): through an overlay of
it (--overlay: the root stays as it was), or ROOT itself read-only with a
tmpfs on /tmp (a guest sees this machine's files read-only).  There:
  record   the static PYPERF records the release's own python3 running
           workloads/split.py, whose leaves measure their own share;
  deb      (--deb DEB) `apt-get install ./DEB` installs the package and
           nothing else (everything it depends on or recommends is in the
           root), `systemd-analyze verify --root` passes its unit, and the
           installed /usr/bin/pyperf-bpf records the split too;
  wheel    (--wheel WHEEL) pip installs the wheel into a venv made by the
           release's python3, and the pyperf-bpf it put on the venv's PATH
           records that python3 too.
Writes OUTDIR/results.json: {check: {"ok": bool, "why": "...", ...facts}}.

Usage: distro_check.py ROOT PYPERF OUTDIR [--overlay] [--deb DEB] [--wheel WHEEL]"""
import json
import math
import os
import re
import shutil
import subprocess
import sys

# the smoke set's reading of folded stacks (a program of its own too, beside this one)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kernel_smoke import func, parse_folded  # noqa: E402

WORKLOADS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "workloads")
LEAVES = ("leaf_a", "leaf_b", "leaf_c")
CHAIN = ["<module>", "main", "run_schedule"]


def is_python(frame):
    """a Python frame: "name (file.py:line)" """
    return re.search(r"\(.*\.py:-?\d+\)$", frame) is not None


def check_split(folded, truth, need=800):
    """the split's shares against what its leaves measured, every leaf sample
    under the whole Python chain, merged below the interpreter's native
    start-up frames; facts, or AssertionError"""
    stacks = parse_folded(folded)
    with open(truth) as f:
        t = json.load(f)
    want = {k: v / sum(t.values()) for k, v in t.items()}
    got = dict.fromkeys(LEAVES, 0)
    chained = rooted = pending = 0
    for frames, count in stacks:
        py = [func(f) for f in frames if is_python(f)]
        if not py or py[-1] not in LEAVES:
            continue
        got[py[-1]] += count
        chained += count * (py[:-1] == CHAIN)
        if "[native pending]" in frames:
            pending += count
            continue
        first = next(i for i, f in enumerate(frames) if is_python(f))
        rooted += count * any(func(f) in ("Py_BytesMain", "Py_RunMain") for f in frames[:first])
    n = sum(got.values())
    assert n >= need, f"{n} leaf samples, fewer than {need}"
    for leaf in LEAVES:
        share = got[leaf] / n
        b = 3 * math.sqrt(max(want[leaf] * (1 - want[leaf]), 0.01) / n) + 0.04
        assert abs(share - want[leaf]) <= b, \
            f"{leaf}: {share:.3f} of the samples, {want[leaf]:.3f} of the time measured"
    assert chained >= 0.95 * n, f"{chained} of {n} leaf samples under {';'.join(CHAIN)}"
    assert rooted >= 0.9 * (n - pending), \
        f"{rooted} of {n - pending} leaf samples merged below Py_BytesMain"
    return {"samples": n, "shares": {k: round(v / n, 3) for k, v in got.items()},
            "truth": {k: round(v, 3) for k, v in want.items()}}


def main():
    args = sys.argv[1:]
    root, pyperf, out = (os.path.abspath(a) for a in args[:3])
    overlay = "--overlay" in args
    deb = os.path.abspath(args[args.index("--deb") + 1]) if "--deb" in args else None
    wheel = os.path.abspath(args[args.index("--wheel") + 1]) if "--wheel" in args else None
    os.makedirs(out, exist_ok=True)
    mnt = os.path.join(out, "mnt")
    for d in ("mnt", "upper", "work"):
        os.makedirs(os.path.join(out, d), exist_ok=True)
    if overlay:
        mount = (f"mount -t overlay overlay -o lowerdir={root},upperdir={out}/upper,"
                 f"workdir={out}/work {mnt}")
    else:
        mount = f"mount --rbind {root} {mnt}; mount -t tmpfs tmpfs {mnt}/tmp"
    steps = [f"""
        echo "== record"
        chroot {mnt} /tmp/pyperf-bpf record -F 999 -o /tmp/p.folded -- python3 /tmp/split.py 3 /tmp/truth.json
        cp {mnt}/tmp/p.folded {mnt}/tmp/truth.json {out}/
        chroot {mnt} python3 -c 'import platform; print(platform.python_version())' > {out}/python
        chroot {mnt} ldd --version | head -n 1 > {out}/libc
        """]
    if deb:
        steps.append(f"""
        echo "== deb"
        cp {deb} {mnt}/tmp/
        ( chroot {mnt} apt-get install -y -q /tmp/{os.path.basename(deb)} > {out}/apt.log 2>&1 &&
          chroot {mnt} pyperf-bpf --version > {out}/deb-version &&
          systemd-analyze verify --man=no --root={mnt} /lib/systemd/system/pyperf-bpf.service &&
          echo ok > {out}/deb-ok &&
          chroot {mnt} /usr/bin/pyperf-bpf record -F 999 -o /tmp/d.folded -- python3 /tmp/split.py 2 /tmp/dtruth.json &&
          cp {mnt}/tmp/d.folded {mnt}/tmp/dtruth.json {out}/ ) || echo "deb step failed: $?"
        """)
    if wheel:
        w = os.path.basename(wheel)
        steps.append(f"""
        echo "== wheel"
        cp {wheel} {mnt}/tmp/
        ( chroot {mnt} python3 -m venv /tmp/venv &&
          chroot {mnt} /tmp/venv/bin/pip install -q --no-index --disable-pip-version-check /tmp/{w} &&
          chroot {mnt} env PATH=/tmp/venv/bin:/usr/bin:/bin sh -c 'command -v pyperf-bpf' > {out}/wheel-which &&
          chroot {mnt} env PATH=/tmp/venv/bin:/usr/bin:/bin pyperf-bpf record -F 999 -o /tmp/w.folded -- python3 /tmp/split.py 2 /tmp/wtruth.json &&
          cp {mnt}/tmp/w.folded {mnt}/tmp/wtruth.json {out}/ ) || echo "wheel step failed: $?"
        """)
    script = f"""
        set -eu
        {mount}
        for d in proc sys dev; do mount --rbind /$d {mnt}/$d; done
        cp {pyperf} {mnt}/tmp/pyperf-bpf
        cp {WORKLOADS}/split.py {mnt}/tmp/
        """ + "".join(steps)
    r = subprocess.run(["unshare", "--mount", "--propagation", "private", "bash", "-c", script],
                       capture_output=True, text=True, timeout=600)
    log = (r.stdout + r.stderr)[-3000:]
    with open(os.path.join(out, "run.log"), "w") as f:
        f.write(r.stdout + r.stderr)
    results = {}

    def check(name, fn):
        try:
            results[name] = {"ok": True, "why": "", **(fn() or {})}
        except Exception as e:  # noqa: BLE001 - the why goes into the results
            results[name] = {"ok": False, "why": f"{type(e).__name__}: {e}"}

    def read(name):
        p = os.path.join(out, name)
        return open(p).read().strip() if os.path.exists(p) else None

    def record():
        assert r.returncode == 0 and os.path.exists(os.path.join(out, "p.folded")), log
        facts = check_split(os.path.join(out, "p.folded"), os.path.join(out, "truth.json"))
        return {**facts, "python": read("python"), "libc": read("libc")}

    check("record", record)
    if deb:
        def deb_check():
            assert read("deb-ok") == "ok", (read("apt.log"), log)
            # nothing but the package itself: what it needs was there
            assert re.search(r"^0 upgraded, 1 newly installed,", read("apt.log"), re.M), \
                read("apt.log")
            # and the installed program profiles
            assert os.path.exists(os.path.join(out, "d.folded")), log
            facts = check_split(os.path.join(out, "d.folded"), os.path.join(out, "dtruth.json"),
                                need=500)
            return {"version": read("deb-version"), **facts}
        check("deb", deb_check)
    if wheel:
        def wheel_check():
            assert read("wheel-which") == "/tmp/venv/bin/pyperf-bpf", (read("wheel-which"), log)
            assert os.path.exists(os.path.join(out, "w.folded")), log
            return check_split(os.path.join(out, "w.folded"), os.path.join(out, "wtruth.json"),
                               need=500)
        check("wheel", wheel_check)
    shutil.rmtree(os.path.join(out, "upper"), ignore_errors=True)
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
