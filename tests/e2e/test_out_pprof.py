"""pprof output, read back by Google's pprof (built from Debian's Go sources by
`make test`): one recording written as folded stacks and as pprof must hold the
same stacks with the same counts, frame for frame (names, Python lines, native
binaries, kernel frames), and carry what pprof users expect: sample types,
period, duration, labels, and mappings with the binaries' build-ids."""
import os
import re
import subprocess

import pytest

from conftest import ROOT, SUPPORTED, WORKLOADS, parse_folded, run_pyperf, supported_pythons

PPROF = os.path.join(ROOT, "build", "tools", "pprof")


def pprof(*args):
    if not os.access(PPROF, os.X_OK):
        pytest.fail(f"{PPROF} is missing: `make test` builds it from Debian's "
                    "golang-github-google-pprof-dev (scripts/setup --test-deps)")
    r = subprocess.run([PPROF] + list(args), capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout


LOC_RE = re.compile(r"^\s+(\d+): 0x([0-9a-f]+) (?:M=(\d+) )?(.*):(-?\d+) s=(-?\d+)(?:\((.*)\))?$")


def split_name_file(body):
    """pprof prints "NAME FILE"; markers ("[native incomplete]") have spaces
    in their names and no file, file names such as "<frozen importlib._bootstrap>"
    have spaces too, Python and C names do not."""
    if body.startswith("["):
        name, _, file = body.partition("] ")
        return name.rstrip("]") + "]", file
    name, _, file = body.partition(" ")
    return name, file


def decode(path):
    """What pprof -raw says: header fields, samples [(count, ns, [loc ids], labels)],
    locations {id: (name, file, line, mapping, address)}, mappings {id: (file, build-id)}."""
    head, samples, locs, maps, section = {}, [], {}, {}, "head"
    for line in pprof("-raw", path).splitlines():
        if line in ("Samples:", "Locations", "Mappings"):
            section = line.rstrip(":")
            continue
        if section == "head" and ": " in line:
            k, _, v = line.partition(": ")
            head[k] = v
        elif section == "Samples":
            m = re.match(r"^\s+(\d+)\s+(\d+): ([\d ]*)$", line)
            if m:
                samples.append([int(m.group(1)), int(m.group(2)),
                                [int(x) for x in m.group(3).split()], {}])
            elif samples and ":[" in line:
                samples[-1][3].update(re.findall(r"(\w+):\[([^\]]*)\]", line))
            elif line.strip() and not samples:
                head["types"] = line.strip()
        elif section == "Locations":
            m = LOC_RE.match(line)
            if m:
                name, file = split_name_file(m.group(4))
                locs[int(m.group(1))] = (name or m.group(7), file, int(m.group(5)),
                                         int(m.group(3) or 0), int(m.group(2), 16))
        elif section == "Mappings":
            m = re.match(r"^(\d+): 0x[0-9a-f]+/0x[0-9a-f]+/0x[0-9a-f]+ (\S+) (\S*)", line)
            if m:
                maps[int(m.group(1))] = (m.group(2), m.group(3))
    return head, samples, locs, maps


def folded_label(loc, lines=True):
    """The folded output's label of a pprof location.  Native frames are the
    ones in a binary's mapping (pprof adds a nameless mapping of its own to
    profiles that have none)."""
    name, file, line, mapping, _ = loc
    if file == "[kernel.kallsyms]":
        return f"{name}_[k]"
    if not file:
        return name                      # markers: [truncated], [native incomplete], ...
    # a Python frame has a line (a code object's file can be any string,
    # even a docstring read from a code object freed under the sampler)
    if not (file.endswith(".py") or file.startswith("<") or (lines and line)):
        return f"{name} ({os.path.basename(file)})"
    return f"{name} ({file}:{line})" if lines else f"{name} ({file})"


def stacks_from_pprof(samples, locs, lines=True):
    out = {}
    for count, _, ids, _ in samples:
        key = tuple(folded_label(locs[i], lines) for i in reversed(ids))
        out[key] = out.get(key, 0) + count
    return out


def record(python, tmp_path, *extra):
    folded, prof = tmp_path / "p.folded", tmp_path / "p.pb.gz"
    r = run_pyperf(["-F", "499", "-o", str(folded), "-o", str(prof)] + list(extra) +
                   ["--", python, os.path.join(WORKLOADS, "split.py"), "2",
                    str(tmp_path / "t.json")])
    assert r.returncode == 0, r.stderr
    return {tuple(f): c for f, c in parse_folded(folded.read_text())}, str(prof)


@supported_pythons()
def test_pprof_holds_the_same_stacks_as_folded(python, tmp_path):
    folded, prof = record(python[0], tmp_path)
    head, samples, locs, maps = decode(prof)
    got = stacks_from_pprof(samples, locs)
    assert sum(got.values()) == sum(folded.values()) > 500
    assert got == folded
    # Python frames carry their current line, native ones a mapping
    leaf = [locs[s[2][0]] for s in samples]
    assert any(n == "leaf_a" and ln > 0 for n, _, ln, _, _ in leaf)
    assert all(locs[i][3] for s in samples for i in s[2]
               if folded_label(locs[i]).endswith("(libc.so.6)"))


def test_pprof_header_labels_and_mappings(tmp_path):
    assert SUPPORTED, "no supported CPython"
    folded, prof = record(SUPPORTED[-1][0], tmp_path)
    head, samples, locs, maps = decode(prof)
    assert head["types"].split() == ["samples/count", "cpu/nanoseconds[dflt]"], head
    assert head["PeriodType"] == "cpu nanoseconds"
    assert int(head["Period"]) == 1000000000 // 499
    assert "split.py" in head["Comment"]
    assert 1.5 < float(head["Duration"].rstrip("s")) < 10, head["Duration"]
    for count, ns, _, labels in samples:
        assert ns == count * (1000000000 // 499)
        assert set(labels) == {"pid", "thread_id", "thread_name", "process_name"}, labels
        assert labels["pid"].isdigit() and labels["thread_id"].isdigit()
    # every binary's build-id is the one in its ELF notes
    libc = [(f, b) for f, b in maps.values() if os.path.basename(f) == "libc.so.6"]
    assert libc, maps
    notes = subprocess.run(["readelf", "-n", libc[0][0]], capture_output=True, text=True).stdout
    assert re.search(r"Build ID: " + libc[0][1] + r"\b", notes), (libc, notes)
    # and the pprof tool's own views work on it
    top = pprof("-top", "-nodecount=5", prof)
    assert "leaf_a" in top


def test_pprof_no_lines_and_python_only(tmp_path):
    assert SUPPORTED, "no supported CPython"
    folded, prof = record(SUPPORTED[-1][0], tmp_path, "--no-lines", "--python-only")
    head, samples, locs, maps = decode(prof)
    assert all(not f.startswith("/") for f, _ in maps.values()), maps  # no binaries
    assert all(ln == 0 for _, _, ln, _, _ in locs.values())
    assert stacks_from_pprof(samples, locs, lines=False) == folded
