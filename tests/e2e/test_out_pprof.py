"""pprof output, read back by Google's pprof (built from Debian's Go sources by
`make test`): one recording written as folded stacks and as pprof must hold the
same stacks with the same counts, frame for frame (names, Python lines, native
binaries, kernel frames), and carry what pprof users expect: sample types,
period, duration, labels, and mappings with the binaries' build-ids."""
import os
import re
import subprocess

from conftest import SUPPORTED, record_workload, supported_pythons
from pprofread import decode, pprof

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
    stacks, (prof,), _ = record_workload(python, tmp_path, "split.py", "2",
                                         str(tmp_path / "t.json"), hz=499, also=[".pb.gz"],
                                         extra=extra)
    return {tuple(f): c for f, c in stacks}, str(prof)


@supported_pythons()
def test_pprof_holds_the_same_stacks_as_folded(python, tmp_path):
    folded, prof = record(python[0], tmp_path)
    head, samples, locs, maps = decode(prof)
    got = stacks_from_pprof(samples, locs)
    # 2 s at 499 Hz: about 1000 samples on an idle CPU, half or less on a CI
    # machine whose two cores run other tests beside it
    assert sum(got.values()) == sum(folded.values()) > 200
    differ = {k: (got.get(k), folded.get(k)) for k in set(got) | set(folded)
              if got.get(k) != folded.get(k)}
    assert not differ, differ
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
