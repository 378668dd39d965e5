"""Ground truth for user/python/linetable.c from real interpreters.

How it works: for each CPython listed below, tests/unit/linetable_dump.py is
run under it (isolated mode) to print every code object's line table and the
line that interpreter reports for each bytecode offset; the output is piped
into the checker binary (tests/unit/linetable_check.c linked with
user/python/linetable.c), which must agree on every offset.  This file builds
nothing: the checker is taken from $LINETABLE_CHECK, default
build/tests/linetable_check under the repository root, and a missing checker
fails.  An interpreter that is not installed is skipped with a reason; if none
of them is installed, test_an_interpreter_is_present fails."""
import os
import re
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DUMP = os.path.join(ROOT, "tests", "unit", "linetable_dump.py")
CHECK = os.environ.get("LINETABLE_CHECK", os.path.join("build", "tests", "linetable_check"))
if not os.path.isabs(CHECK):
    CHECK = os.path.join(ROOT, CHECK)

INTERPRETERS = [
    "/root/.pyenv/versions/3.8.18/bin/python3.8",
    "/root/.pyenv/versions/3.9.18/bin/python3.9",
    "/root/.pyenv/versions/3.10.13/bin/python3.10",
    "/root/.pyenv/versions/3.11.7/bin/python3.11",
    "/root/.pyenv/versions/3.12.1/bin/python3.12",
    "/root/.pyenv/versions/3.13.0/bin/python3.13",
    "/usr/bin/python3.11",
    "/opt/pyperf-sid/usr/bin/python3.14",
    "/opt/pyperf-sid/usr/bin/python3.15",
]


def _present(path):
    return os.path.isfile(path) and os.access(path, os.X_OK)


def _id(path):
    ver = os.path.basename(path)[len("python"):]
    return ver + ("-pyenv" if "/.pyenv/" in path else "-" + os.path.dirname(path).strip("/").replace("/", "-"))


def test_an_interpreter_is_present():
    assert any(_present(p) for p in INTERPRETERS), \
        "none of these interpreters exists, so nothing checks linetable.c: " + ", ".join(INTERPRETERS)


@pytest.mark.parametrize("python", INTERPRETERS, ids=[_id(p) for p in INTERPRETERS])
def test_linetable_matches_interpreter(python):
    if not _present(python):
        pytest.skip(python + " is not installed")
    assert os.path.isfile(CHECK) and os.access(CHECK, os.X_OK), \
        "checker binary %s is missing: build it first (make unit) or set LINETABLE_CHECK" % CHECK
    dump = subprocess.run([python, "-I", DUMP], capture_output=True, text=True, timeout=600)
    assert dump.returncode == 0, "linetable_dump.py failed under %s:\n%s" % (python, dump.stderr[-4000:])
    check = subprocess.run([CHECK], input=dump.stdout, capture_output=True, text=True, timeout=600)
    assert check.returncode == 0, "%s disagrees with %s:\n%s%s" % (
        CHECK, python, check.stdout[-2000:], check.stderr[-4000:])
    m = re.search(r"checked (\d+) offsets", check.stdout)
    assert m and int(m.group(1)) > 0, "checker output: %r" % check.stdout
    print(python, check.stdout.strip())
