"""Cython frames: an extension's C functions named as Cython names them,
`crunch (fastloop.pyx:17)`, with the .pyx line of each sample, a `cdef`
function as well as a `def`, and the Python callback it calls above it; no
stack marked incomplete that is whole.  The line comes from the
extension's DWARF: the generated C file's marks (Cython writes the .pyx
line above the code of each) or, built with line directives, the .pyx
itself.

Built here with Debian's cython3 (0.29, up to CPython 3.11) and Cython 3
from PyPI (the peers' virtual environment, scripts/setup --test-deps), at
-O2 -g as setuptools builds them.  Interpreters: a representative subset,
since naming reads the extension's DWARF and not the interpreter (0.29 on
pyenv 3.8 and Debian's 3.11; Cython 3 on Debian's 3.11 (also with line
directives), pyenv 3.12 and sid's 3.14 and 3.15)."""
import os
import re
import shutil
import subprocess
import sysconfig

import pytest

from conftest import PEERS, PENDING, SUPPORTED, WORKLOADS, func_name, python_id, record_workload

PYX = os.path.join(WORKLOADS, "cython", "fastloop.pyx")
RUN = os.path.join("cython", "cython_run.py")
CYTHON_029 = "/usr/bin/cython3"
CYTHON_3 = os.path.join(PEERS, "bin", "cython")
FRAME_RE = re.compile(r"^(\w+) \(fastloop\.pyx:(\d+)\)$")
# fastloop.pyx: crunch's loop, its callback's call, mix's loop
CRUNCH_LINES = range(13, 23)
MIX_LINES = range(5, 11)


def pick(minor, where):
    for p in SUPPORTED:
        if p[1] == (3, minor) and where in p[0]:
            return p
    return None


CASES = [(CYTHON_029, pick(8, "/.pyenv/"), False), (CYTHON_029, pick(11, "/usr/bin/"), False),
         (CYTHON_3, pick(11, "/usr/bin/"), False), (CYTHON_3, pick(11, "/usr/bin/"), True),
         (CYTHON_3, pick(12, "/.pyenv/"), False), (CYTHON_3, pick(14, "/opt/pyperf-sid/"), False),
         (CYTHON_3, pick(15, "/opt/pyperf-sid/"), False)]


def case_id(c):
    cy, py, lines = c
    return "%s-%s%s" % ("cython0.29" if cy == CYTHON_029 else "cython3",
                        python_id(py) if py else "missing", "-line-directives" if lines else "")


def build(cython, python, line_directives, where):
    """fastloop.pyx compiled by `cython` for `python` into where; the
    extension's path"""
    if not os.access(cython, os.X_OK):
        pytest.fail(f"{cython} is missing: scripts/setup --test-deps installs Debian's cython3 "
                    "and Cython 3 from PyPI")
    pyx = os.path.join(where, "fastloop.pyx")
    shutil.copy(PYX, pyx)
    r = subprocess.run([cython, "-3"] + (["--line-directives"] if line_directives else []) +
                       ["fastloop.pyx", "-o", "fastloop.c"], cwd=where, capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr
    info = subprocess.run([python, "-c", "import sysconfig, sys; print(sysconfig.get_paths()"
                           "['include']); print(sysconfig.get_config_var('EXT_SUFFIX'))"],
                          capture_output=True, text=True).stdout.split()
    inc, suffix = info[0], info[1]
    # Debian's layout keeps pyconfig.h under include/<multiarch>/pythonX.Y
    extra = ["-I" + os.path.dirname(inc)]
    so = os.path.join(where, "fastloop" + suffix)
    r = subprocess.run(["gcc", "-O2", "-g", "-shared", "-fPIC", "-I" + inc] + extra +
                       ["fastloop.c", "-o", so], cwd=where, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    return so


@pytest.mark.parametrize("case", CASES, ids=[case_id(c) for c in CASES])
def test_cython_functions_are_named_with_their_pyx_lines(case, tmp_path):
    cython, python, line_directives = case
    if python is None:
        pytest.fail("the interpreter this case needs is not installed (see the module's "
                    "docstring)")
    ext = tmp_path / "ext"
    ext.mkdir()
    build(cython, python[0], line_directives, str(ext))
    stacks, _, r = record_workload(python[0], tmp_path, RUN, str(ext), "3", hz=499)
    run = [(f, c) for f, c in stacks if "main" in map(func_name, f)]
    total = sum(c for _, c in run)
    assert total >= 500, (total, r.stderr)
    incomplete = sum(c for f, c in run if "[incomplete]" in f or "[native incomplete]" in f)
    assert incomplete <= 0.02 * total, (incomplete, total)
    named = crunch_leaf = crunch_leaf_in_loop = mix = 0
    for frames, count in run:
        if PENDING in frames:
            continue  # start-up: the extension's unwind table was being built
        cy = [(i, FRAME_RE.match(f)) for i, f in enumerate(frames) if FRAME_RE.match(f)]
        crunch = [(i, m) for i, m in cy if m.group(1) == "crunch"]
        if crunch:
            named += count
        if any(m.group(1) == "mix" for _, m in cy):
            mix += count
            assert all(int(m.group(2)) in MIX_LINES for _, m in cy if m.group(1) == "mix"), \
                frames
            # mix is called by crunch: root side of it
            assert crunch and crunch[0][0] < [i for i, m in cy if m.group(1) == "mix"][0], frames
        names = list(map(func_name, frames))
        if "callback" in names:
            # the Python callback runs above the Cython frame that called it,
            # at the line of the call
            assert crunch and crunch[-1][0] < names.index("callback"), frames
            assert crunch[-1][1].group(2) == "19", frames
        if crunch and crunch[-1][0] == len(frames) - 1:
            crunch_leaf += count
            crunch_leaf_in_loop += count * (int(crunch[-1][1].group(2)) in CRUNCH_LINES)
    assert named >= 0.8 * total, (named, total, r.stderr)
    assert mix >= 0.05 * total, (mix, total)
    assert crunch_leaf >= 0.05 * total, (crunch_leaf, total)
    assert crunch_leaf_in_loop >= 0.9 * crunch_leaf, (crunch_leaf_in_loop, crunch_leaf)
