"""Reading pprof files in the tests, with Google's pprof itself (`pprof -raw`;
`make test` builds it from Debian's Go sources): what users' tools see."""
import os
import re
import subprocess

import pytest

from conftest import ROOT

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
    """pprof prints "NAME FILE"; markers ("[native incomplete]") and the
    placeholder of a code object freed before it was read ("<unknown code
    0x...>") have spaces in their names, file names such as "<frozen
    importlib._bootstrap>" have spaces too, Python and C names do not."""
    if body.startswith("["):
        name, _, file = body.partition("] ")
        return name.rstrip("]") + "]", file
    if body.startswith("<unknown code "):
        name, _, file = body.partition("> ")
        return name + ">", file
    name, _, file = body.partition(" ")
    return name, file


def decode(path):
    """What pprof -raw says: header fields, samples [(first value, last value (count
    and ns in cpu mode, the time twice in the others), [loc ids], labels)],
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
            m = re.match(r"^\s+((?:-?\d+\s+)*-?\d+): ([\d ]*)$", line)  # a diff's are signed
            if m:  # one value per sample type: the first and the last kept
                values = [int(x) for x in m.group(1).split()]
                samples.append([values[0], values[-1],
                                [int(x) for x in m.group(2).split()], {}])
            elif samples and ":[" in line:
                samples[-1][3].update(re.findall(r"(\w+):\[([^\]]*)\]", line))
            elif line.strip() and not samples:
                head["types"] = line.strip()
        elif section == "Locations":
            m = LOC_RE.match(line)
            if m:
                name, file = split_name_file(m.group(4))
                locs[int(m.group(1))] = (name or m.group(7) or "", file, int(m.group(5)),
                                         int(m.group(3) or 0), int(m.group(2), 16))
        elif section == "Mappings":
            m = re.match(r"^(\d+): 0x[0-9a-f]+/0x[0-9a-f]+/0x[0-9a-f]+ (\S+) (\S*)", line)
            if m:
                maps[int(m.group(1))] = (m.group(2), m.group(3))
    return head, samples, locs, maps


def pprof_raw(path):
    """[(count, [function names, leaf first], {label: value})] of a pprof file."""
    _, samples, locs, _ = decode(path)
    return [(count, [locs[i][0] if i in locs else "?" for i in ids], labels)
            for count, _, ids, labels in samples]


def pprof_total(path):
    return sum(c for c, _, _ in pprof_raw(path))
