"""_Py_DebugOffsets of every 3.13+ interpreter present, read the way the
profiler reads them, agree with the offsets gen_offsets.py measured from the
headers.

How it works: tests/unit/debug_offsets_image.py copies the block out of a
live interpreter's _PyRuntime (ctypes), and compiles it from the headers of
each 3.13+ version whose headers are here; build/tests/debug_offsets_check
parses each with user/python/py_debug_offsets.c and compares the result with the
generated table entry of its version, field by field.  A block compiled from
the headers of a release whose image is committed under tests/unit/data must
be that image, byte for byte (the cmocka test_offsets parses those)."""
import glob
import os
import re
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from conftest import ROOT, SUPPORTED, python_id  # noqa: E402

IMAGE = os.path.join(ROOT, "tests", "unit", "debug_offsets_image.py")
CHECK = os.path.join(ROOT, "build", "tests", "debug_offsets_check")
DATA = os.path.join(ROOT, "tests", "unit", "data")

LIVE = [p for p in SUPPORTED if p[1] >= (3, 13)]
HEADERS = sorted(glob.glob("/root/.pyenv/versions/3.*/include/python3.1[3-9]") +
                 glob.glob("/opt/pyperf-sid/usr/include/python3.1[3-9]"))


def _check(path):
    assert os.access(CHECK, os.X_OK), f"{CHECK} missing: run make unit"
    r = subprocess.run([CHECK, path], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout.strip()


def test_live_and_header_blocks_exist():
    assert LIVE, "no CPython 3.13+ interpreter found"
    assert HEADERS, "no CPython 3.13+ headers found"


@pytest.mark.parametrize("python", LIVE, ids=[python_id(p) for p in LIVE])
def test_live_block_parses_to_table(python, tmp_path):
    path, (major, minor) = python
    out = tmp_path / "live.bin"
    subprocess.run([sys.executable, IMAGE, "--live", path, str(out)], check=True)
    assert _check(str(out)) == f"ok {major}.{minor}"


def _version(inc):
    text = open(os.path.join(inc, "patchlevel.h")).read()
    return ".".join(re.search(r"#define\s+PY_%s_VERSION\s+(\d+)" % w, text).group(1)
                    for w in ("MAJOR", "MINOR", "MICRO"))


@pytest.mark.parametrize("inc", HEADERS, ids=[os.path.basename(h) for h in HEADERS])
def test_header_block_parses_to_table(inc, tmp_path):
    ver = _version(inc)
    out = tmp_path / "hdr.bin"
    subprocess.run([sys.executable, IMAGE, "--headers", inc, str(out)], check=True)
    assert _check(str(out)) == "ok " + ".".join(ver.split(".")[:2])
    committed = os.path.join(DATA, f"debug_offsets_{ver}.bin")
    if os.path.exists(committed):
        assert out.read_bytes() == open(committed, "rb").read(), committed
