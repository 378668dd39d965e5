#!/usr/bin/env python3
"""debug_offsets_image.py - the bytes of a CPython 3.13+ _Py_DebugOffsets
block, from a version's headers or from a live interpreter, for the tests of
user/python/py_debug_offsets.c.

  debug_offsets_image.py --headers INCLUDE_DIR OUT    (INCLUDE_DIR: .../include/python3.X)
  debug_offsets_image.py --live PYTHON OUT

--headers compiles a small program against the version's own headers (with
Py_BUILD_CORE) that writes the initializer CPython itself puts at the start
of _PyRuntime: _Py_DebugOffsets_INIT from 3.14, and in 3.13 the
`.debug_offsets = {...}` part of _PyRuntimeState_INIT, taken out of
pycore_runtime_init.h.  --live runs the interpreter and copies
sizeof(_Py_DebugOffsets) bytes from its _PyRuntime with ctypes (the size
given by --size, or 4096).  The two are the same bytes for the same build.
Needs gcc ($CC).  Exit status 2 with a one-line reason when it cannot.
"""
import argparse
import os
import shlex
import subprocess
import sys
import tempfile

PRELUDE = r"""
#define Py_BUILD_CORE 1
#include "Python.h"
#include "pycore_runtime.h"
#include "pycore_interp.h"
#include "pycore_frame.h"
%s
#include <stdio.h>
#include <stddef.h>
"""


def block_313(internal):
    """The .debug_offsets initializer of 3.13's _PyRuntimeState_INIT."""
    with open(os.path.join(internal, "pycore_runtime_init.h")) as fh:
        text = fh.read()
    at = text.find(".debug_offsets = {")
    if at < 0:
        raise SystemExit("debug_offsets_image.py: no .debug_offsets in pycore_runtime_init.h")
    i = text.index("{", at)
    depth = 0
    for j in range(i, len(text)):
        if text[j] == "{":
            depth += 1
        elif text[j] == "}":
            depth -= 1
            if depth == 0:
                body = text[i:j + 1]
                break
    body = body.replace("\\\n", "\n").replace("debug_cookie", '"xdebugpy"')
    return "static const _Py_DebugOffsets blk = %s;\n" % body


def from_headers(inc, out):
    internal = os.path.join(inc, "internal")
    if os.path.isfile(os.path.join(internal, "pycore_debug_offsets.h")):
        extra = '#include "pycore_debug_offsets.h"'
        decl = 'static const _Py_DebugOffsets blk = _Py_DebugOffsets_INIT("xdebugpy");\n'
    else:
        extra = ""
        decl = block_313(internal)
    src = (PRELUDE % extra) + decl + r"""
int main(void)
{
	fwrite(&blk, sizeof(blk), 1, stdout);
	return 0;
}
"""
    with tempfile.TemporaryDirectory(prefix="doimg.") as work:
        c = os.path.join(work, "p.c")
        exe = os.path.join(work, "p")
        with open(c, "w") as fh:
            fh.write(src)
        cc = shlex.split(os.environ.get("CC", "gcc"))
        r = subprocess.run(cc + ["-w", "-I", inc, "-I", internal, "-I", os.path.dirname(inc),
                                 c, "-o", exe], capture_output=True, text=True)
        if r.returncode:
            raise SystemExit("debug_offsets_image.py: %s: probe does not compile: %s" %
                             (inc, r.stderr.strip().splitlines()[-1:]))
        data = subprocess.run([exe], capture_output=True, check=True).stdout
    with open(out, "wb") as fh:
        fh.write(data)


LIVE = r"""
import ctypes, sys
n = int(sys.argv[1])
addr = ctypes.addressof(ctypes.c_char.in_dll(ctypes.pythonapi, "_PyRuntime"))
sys.stdout.buffer.write(ctypes.string_at(addr, n))
"""


def from_live(python, out, size):
    r = subprocess.run([python, "-c", LIVE, str(size)], capture_output=True)
    if r.returncode or len(r.stdout) != size:
        raise SystemExit("debug_offsets_image.py: %s: cannot read _PyRuntime: %s" %
                         (python, r.stderr.decode(errors="replace").strip()[-200:]))
    with open(out, "wb") as fh:
        fh.write(r.stdout)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--headers", metavar="INCLUDE_DIR")
    g.add_argument("--live", metavar="PYTHON")
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("out")
    a = ap.parse_args(argv)
    if a.headers:
        from_headers(a.headers, a.out)
    else:
        from_live(a.live, a.out, a.size)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
