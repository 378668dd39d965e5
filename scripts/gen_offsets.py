#!/usr/bin/env python3
"""gen_offsets.py - generate user/python/py_offsets_table.c, the per-CPython-version
struct offsets the sampler (bpf/pyperf.bpf.c) and the loader (user/python/pyread.c)
use to walk a target interpreter's memory.

How it works: for every CPython installation it is given, the script reads the
version from the headers' patchlevel.h, writes a small C program to a
temporary directory that includes that version's public and internal headers
with Py_BUILD_CORE defined, and prints offsetof()/sizeof() of every field
`struct py_offsets` (bpf/pyperf.h) describes.  The program is compiled with
gcc and run; its output is parsed, checked (field widths, the position of the
str `state` bits, limits of the BPF frame read) and written out as a C table
with one entry per minor version.  Several patch releases of one minor version
may be given; their values must agree, otherwise the script stops.

Which field of which CPython struct fills which table slot depends on the
minor version; field_sources() below says so for 3.8 to 3.15.  A minor version
it does not know is an error: look at that version's headers and extend the
map.  3.14 and 3.15 are read from the Debian sid interpreters that
scripts/sid-pythons installs under /opt/pyperf-sid.  Values are for 64-bit little-endian release builds (x86-64, arm64);
headers of free-threaded (Py_GIL_DISABLED) or Py_DEBUG / Py_TRACE_REFS builds
are refused, since their layouts differ and the loader only keys on the
version number.

Usage (from anywhere; paths default to this repository):
  scripts/gen_offsets.py                      every /root/.pyenv/versions/3.{8..13}.*
                                              and /opt/pyperf-sid/usr/include/python3.1{4,5}
  scripts/gen_offsets.py --python-include /usr/include/python3.11 ...
  scripts/gen_offsets.py --check              exit 1 if the committed table is stale
  scripts/gen_offsets.py --print              also print the values per version
Needs gcc (override with $CC).  Python 3.6+, standard library only.
"""
import argparse
import glob
import os
import re
import shlex
import subprocess
import sys
import tempfile

REPO = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
PYPERF_H = os.path.join(REPO, "bpf", "pyperf.h")
LINETABLE_H = os.path.join(REPO, "user", "linetable.h")
DEFAULT_OUT = os.path.join(REPO, "user", "python", "py_offsets_table.c")
DEFAULT_GLOB = "/root/.pyenv/versions/3.*"
# CPython 3.14 and 3.15 from Debian sid, installed by scripts/sid-pythons
SID_INCLUDE_GLOB = "/opt/pyperf-sid/usr/include/python3.*"
REGEN_CMD = "python3 scripts/gen_offsets.py"
MIN_MINOR, MAX_MINOR = 8, 15

NO = "PYPERF_NO_OFFSET"  # symbolic value for "field absent"


class GenError(Exception):
    pass


# ---------------------------------------------------------------- field map

def field_sources(minor):
    """Per table field: ("off", C expression, expected member width or None)
    for a value the C probe computes, or ("sym", C symbol) / ("num", int) for
    a value fixed by the version.  Expressions are evaluated by the probe with
    offsetof()/sizeof(); the member width guards against reading e.g. a 4-byte
    int as a pointer."""
    if not MIN_MINOR <= minor <= MAX_MINOR:
        raise GenError("no field map for 3.%d (known: 3.%d to 3.%d); read that version's "
                       "headers and extend field_sources()" % (minor, MIN_MINOR, MAX_MINOR))
    f = {}

    def off(name, typ, member, width):
        f[name] = ("off", "offsetof(%s, %s)" % (typ, member),
                   "sizeof(((%s *)0)->%s)" % (typ, member), width)

    off("runtime_interp_head", "_PyRuntimeState", "interpreters.head", 8)
    if minor <= 10:
        off("interp_threads_head", "PyInterpreterState", "tstate_head", 8)
    else:
        off("interp_threads_head", "PyInterpreterState", "threads.head", 8)
    off("tstate_next", "PyThreadState", "next", 8)
    off("tstate_thread_id", "PyThreadState", "thread_id", 8)
    if minor <= 10:
        off("tstate_frame", "PyThreadState", "frame", 8)
        f["cframe_current_frame"] = ("sym", NO)
    elif minor <= 12:
        off("tstate_frame", "PyThreadState", "cframe", 8)
        off("cframe_current_frame", "_PyCFrame", "current_frame", 8)
    else:
        off("tstate_frame", "PyThreadState", "current_frame", 8)
        f["cframe_current_frame"] = ("sym", NO)

    if minor <= 10:
        # PyFrameObject: f_lasti counts bytes up to 3.9; 3.10 made it count
        # 2-byte code units (PyFrame_GetLineNumber passes f_lasti * 2 to
        # PyCode_Addr2Line there).
        off("frame_back", "PyFrameObject", "f_back", 8)
        off("frame_code", "PyFrameObject", "f_code", 8)
        off("frame_instr", "PyFrameObject", "f_lasti", 4)
        f["frame_owner"] = ("sym", NO)
        f["frame_is_entry"] = ("sym", NO)
        f["instr_kind"] = ("sym", "INSTR_LASTI_BYTES" if minor <= 9 else "INSTR_LASTI_UNITS")
        f["owner_shim"] = ("num", 0xFF)
        off("frame_globals", "PyFrameObject", "f_globals", 8)
    else:
        # _PyInterpreterFrame: the instruction is a _Py_CODEUNIT pointer into
        # co_code_adaptive (_PyInterpreterFrame_LASTI in pycore_frame.h).
        off("frame_back", "_PyInterpreterFrame", "previous", 8)
        if minor <= 12:
            off("frame_code", "_PyInterpreterFrame", "f_code", 8)
            off("frame_instr", "_PyInterpreterFrame", "prev_instr", 8)
        else:
            off("frame_code", "_PyInterpreterFrame", "f_executable", 8)
            off("frame_instr", "_PyInterpreterFrame", "instr_ptr", 8)
        off("frame_owner", "_PyInterpreterFrame", "owner", 1)  # 3.11 has it too
        off("frame_globals", "_PyInterpreterFrame", "f_globals", 8)
        if minor == 11:
            # 3.11 marks the first frame of each C call of the eval loop;
            # 3.12+ puts a C-stack shim frame below it instead
            off("frame_is_entry", "_PyInterpreterFrame", "is_entry", 1)
        else:
            f["frame_is_entry"] = ("sym", NO)
        f["instr_kind"] = ("sym", "INSTR_POINTER")
        # The entry frame each eval-loop call pushes is owned by
        # FRAME_OWNED_BY_CSTACK in 3.12/3.13 and by FRAME_OWNED_BY_INTERPRETER
        # from 3.14 (Python/ceval.c), which also owns 3.15's base frame; 3.14
        # still defines CSTACK (4) but never sets it.  Frames owned by this
        # value or above are shims.  3.11 has neither (0xff; is_entry instead).
        f["owner_shim"] = ("probe", "FRAME_OWNED_BY_INTERPRETER" if minor >= 14
                           else "FRAME_OWNED_BY_CSTACK")
    # 3.14+ f_executable is a _PyStackRef: an object pointer with tag bits
    # (Py_TAG_BITS in pycore_stackref.h) that must be cleared
    f["code_tag_bits"] = ("probe", "Py_TAG_BITS") if minor >= 14 else ("num", 0)

    off("code_firstlineno", "PyCodeObject", "co_firstlineno", 4)
    if minor >= 11:
        off("code_adaptive", "PyCodeObject", "co_code_adaptive", None)  # char array
        off("code_qualname", "PyCodeObject", "co_qualname", 8)
    else:
        f["code_adaptive"] = ("sym", NO)
        f["code_qualname"] = ("sym", NO)
    off("code_filename", "PyCodeObject", "co_filename", 8)
    off("code_name", "PyCodeObject", "co_name", 8)
    if minor <= 9:
        off("code_linetable", "PyCodeObject", "co_lnotab", 8)
        f["linetable_kind"] = ("sym", "LT_LNOTAB")
    else:
        off("code_linetable", "PyCodeObject", "co_linetable", 8)
        f["linetable_kind"] = ("sym", "LT_LINETABLE310" if minor == 10 else "LT_LOCATIONS")

    # `state` is a struct of bitfields, so offsetof() works on the struct as
    # a whole; the probe cross-checks it against the byte that changes when a
    # bit is set (see PROBE_UNICODE below).
    off("unicode_state", "PyASCIIObject", "state", 4)
    off("unicode_length", "PyASCIIObject", "length", 8)
    f["unicode_ascii_size"] = ("off", "sizeof(PyASCIIObject)", None, None)
    f["unicode_compact_size"] = ("off", "sizeof(PyCompactUnicodeObject)", None, None)
    off("bytes_size", "PyBytesObject", "ob_base.ob_size", 8)
    off("bytes_sval", "PyBytesObject", "ob_sval", None)
    # the GIL: one per runtime up to 3.11 (_PyRuntime.ceval.gil), one per
    # interpreter from 3.12 (PyInterpreterState._gil, which ceval.gil points
    # at unless the interpreter shares the main one's)
    if minor <= 11:
        off("gil_state", "_PyRuntimeState", "ceval.gil", None)
        f["gil_in"] = ("sym", "GIL_IN_RUNTIME")
    else:
        off("gil_state", "PyInterpreterState", "_gil", None)
        f["gil_in"] = ("sym", "GIL_IN_INTERP")
    off("gil_locked", "struct _gil_runtime_state", "locked", 4)
    off("gil_holder", "struct _gil_runtime_state", "last_holder", 8)
    # the cyclic GC's "collecting" flag (<GC> frames): the runtime's in 3.8,
    # each interpreter's from 3.9 (PyInterpreterState.gc)
    if minor == 8:
        off("gc_collecting", "_PyRuntimeState", "gc.collecting", 4)
        f["gc_in"] = ("sym", "GIL_IN_RUNTIME")
    else:
        off("gc_collecting", "PyInterpreterState", "gc.collecting", 4)
        f["gc_in"] = ("sym", "GIL_IN_INTERP")
    # asyncio (--async, 3.12+): sys.modules, where the loader finds the
    # _asyncio module, and the frame a coroutine object holds inline
    if minor >= 12:  # subinterpreters with their own GIL: walked from 3.12
        off("interp_next", "PyInterpreterState", "next", 8)
        off("interp_id", "PyInterpreterState", "id", 8)
        # the word of bit-fields whose `active` (PY_TSTATE_ACTIVE, checked
        # by the probe) says a state is its thread's current one: a cached
        # state that is needs no look at the list of interpreters
        off("tstate_status", "PyThreadState", "_status", 4)
    else:
        f["interp_next"] = ("sym", NO)
        f["interp_id"] = ("sym", NO)
        f["tstate_status"] = ("sym", NO)
    if minor >= 12:
        off("interp_modules", "PyInterpreterState", "imports.modules", 8)
    else:
        f["interp_modules"] = ("sym", NO)
    if minor >= 11:
        off("gen_iframe", "PyGenObject", "gi_iframe", None)
    else:
        f["gen_iframe"] = ("sym", NO)
    # the top of a frame's value stack: what a suspended coroutine awaits
    # (--async in wall mode shows where each waiting task waits)
    if minor >= 11:
        off("frame_localsplus", "_PyInterpreterFrame", "localsplus", None)
        if minor <= 13:
            off("frame_stack", "_PyInterpreterFrame", "stacktop", 4)
            f["stack_kind"] = ("sym", "PYSTACK_INDEX")
        else:
            off("frame_stack", "_PyInterpreterFrame", "stackpointer", 8)
            f["stack_kind"] = ("sym", "PYSTACK_POINTER")
    else:
        off("frame_localsplus", "PyFrameObject", "f_localsplus", None)
        f["frame_stack"] = ("sym", NO)
        f["stack_kind"] = ("sym", "PYSTACK_NONE")
    # a frame's local variables (dump --locals): their names, which are
    # arguments, and (3.11+) which are plain locals, cells or free variables
    off("code_argcount", "PyCodeObject", "co_argcount", 4)
    off("code_kwonlyargcount", "PyCodeObject", "co_kwonlyargcount", 4)
    off("code_flags", "PyCodeObject", "co_flags", 4)
    if minor <= 10:
        off("code_nlocals", "PyCodeObject", "co_nlocals", 4)
        off("code_varnames", "PyCodeObject", "co_varnames", 8)
        f["code_localskinds"] = ("sym", NO)
        # a local that an inner function uses lives in a cell after the
        # locals, and an argument's own slot is cleared then
        off("code_cellvars", "PyCodeObject", "co_cellvars", 8)
    else:
        off("code_nlocals", "PyCodeObject", "co_nlocalsplus", 4)
        off("code_varnames", "PyCodeObject", "co_localsplusnames", 8)
        off("code_localskinds", "PyCodeObject", "co_localspluskinds", 8)
        f["code_cellvars"] = ("sym", NO)
    off("tuple_items", "PyTupleObject", "ob_item", None)
    # an instance's attributes (Python thread names): a dict at
    # tp_dictoffset up to 3.10, then the shared keys of the class
    # (ht_cached_keys) with values kept apart from any dict (pyobj.c)
    off("type_flags", "PyTypeObject", "tp_flags", 8)
    off("type_dictoffset", "PyTypeObject", "tp_dictoffset", 8)
    off("type_cached_keys", "PyHeapTypeObject", "ht_cached_keys", 8)
    f["obj_layout"] = ("sym", "PYOBJ_3%d" % min(max(minor, 10), 13))
    return f


# Headers the probe includes when the version has them (internal ones are
# found through -I .../internal).  Python.h brings code.h, the unicode and
# bytes objects and cpython/pystate.h (_PyCFrame); frameobject.h the 3.8-3.10
# PyFrameObject; pycore_pystate.h the 3.8 runtime and interpreter state;
# pycore_runtime.h / pycore_interp.h those of 3.9+; pycore_frame.h the 3.11+
# _PyInterpreterFrame and its owner enum; pycore_code.h is harmless and
# included for completeness where present.
PROBE_HEADERS = ["pycore_pystate.h", "pycore_runtime.h", "pycore_interp.h",
                 "pycore_frame.h", "pycore_code.h", "pycore_stackref.h",
                 "pycore_genobject.h", "pycore_interpframe_structs.h"]

PROBE_PRELUDE = r"""
/* generated by gen_offsets.py: print struct offsets of one CPython version */
#define Py_BUILD_CORE 1
#include "Python.h"
#include "frameobject.h"
%(internal)s
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#if defined(Py_GIL_DISABLED)
#define PROBE_FT 1
#else
#define PROBE_FT 0
#endif
#if defined(Py_DEBUG) || defined(Py_TRACE_REFS)
#define PROBE_DEBUG 1
#else
#define PROBE_DEBUG 0
#endif

/* first and last byte of an object that differ from zero */
static void changed(const void *p, size_t n, long *first, long *last)
{
	const unsigned char *b = p;
	*first = *last = -1;
	for (size_t i = 0; i < n; i++)
		if (b[i]) {
			if (*first < 0)
				*first = (long)i;
			*last = (long)i;
		}
}
"""

# Where the str flags live: set each bitfield alone in a zeroed PyASCIIObject
# and report which bytes changed and the 32-bit word at `state`.  user/python/pyread.c
# reads that word and takes kind from bits 2-4, compact bit 5, ascii bit 6.
PROBE_UNICODE = r"""
#define BIT_PROBE(field, val) do { \
	PyASCIIObject a; unsigned int w; long lo, hi; \
	memset(&a, 0, sizeof(a)); \
	a.state.field = (val); \
	changed(&a, sizeof(a), &lo, &hi); \
	memcpy(&w, (char *)&a + offsetof(PyASCIIObject, state), sizeof(w)); \
	printf("bit_" #field " %ld %ld %u\n", lo, hi, w); \
} while (0)
	BIT_PROBE(interned, 1);
	BIT_PROBE(kind, 7);
	BIT_PROBE(compact, 1);
	BIT_PROBE(ascii, 1);
	printf("state_after_hash %zu\n", offsetof(PyASCIIObject, hash) + sizeof(Py_hash_t));
"""

# The 32-bit word at PyThreadState._status with `active` alone set: the bit
# the sampler tests (PY_TSTATE_ACTIVE, bpf/pyperf.h), 3.12+.
PROBE_TSTATE_ACTIVE = r"""
	{
		PyThreadState t; unsigned int w;
		memset(&t, 0, sizeof(t));
		t._status.active = 1;
		memcpy(&w, &t._status, sizeof(w));
		printf("tstate_active_word %u\n", w);
	}
"""
TSTATE_ACTIVE = 1 << 4

# expected 32-bit word at `state` for each bit probe (see PROBE_UNICODE)
STATE_BITS = {"interned": 1 << 0, "kind": 7 << 2, "compact": 1 << 5, "ascii": 1 << 6}


# ---------------------------------------------------------------- helpers

def parse_struct_fields(path):
    """Field names of `struct py_offsets` in pyperf.h, in order."""
    with open(path) as fh:
        text = fh.read()
    m = re.search(r"struct py_offsets \{(.*?)\};", text, re.S)
    if not m:
        raise GenError("%s: struct py_offsets not found" % path)
    body = re.sub(r"/\*.*?\*/", "", m.group(1), flags=re.S)
    return re.findall(r"__u(?:8|16)\s+(\w+)\s*;", body)


def parse_define(path, name):
    with open(path) as fh:
        m = re.search(r"#define\s+%s\s+(\w+)" % name, fh.read())
    if not m:
        raise GenError("%s: %s not defined" % (path, name))
    return int(m.group(1), 0)


def header_version(inc):
    """(major, minor, micro) from DIR/patchlevel.h."""
    path = os.path.join(inc, "patchlevel.h")
    try:
        with open(path) as fh:
            text = fh.read()
    except OSError as e:
        raise GenError("%s: %s" % (path, e.strerror))
    vals = []
    for what in ("MAJOR", "MINOR", "MICRO"):
        m = re.search(r"#define\s+PY_%s_VERSION\s+(\d+)" % what, text)
        if not m:
            raise GenError("%s: PY_%s_VERSION missing" % (path, what))
        vals.append(int(m.group(1)))
    return tuple(vals)


def resolve_include(arg):
    """Accept an include directory (holding Python.h) or an install prefix."""
    if os.path.isfile(os.path.join(arg, "Python.h")):
        return os.path.abspath(arg)
    cands = sorted(d for d in glob.glob(os.path.join(arg, "include", "python3.*"))
                   if os.path.isfile(os.path.join(d, "Python.h")))
    if len(cands) == 1:
        return os.path.abspath(cands[0])
    if not cands:
        raise GenError("%s: no Python.h (give include/python3.X or the install prefix)" % arg)
    raise GenError("%s: several include dirs (%s); name one" % (arg, ", ".join(cands)))


def default_includes():
    out = []
    for prefix in sorted(glob.glob(DEFAULT_GLOB)):
        m = re.match(r"3\.(\d+)\.\d+$", os.path.basename(prefix))
        if not m or not MIN_MINOR <= int(m.group(1)) <= MAX_MINOR:
            continue
        inc = os.path.join(prefix, "include", "python3.%s" % m.group(1))
        if os.path.isfile(os.path.join(inc, "Python.h")):
            out.append(inc)
    for inc in sorted(glob.glob(SID_INCLUDE_GLOB)):
        m = re.match(r"python3\.(\d+)$", os.path.basename(inc))
        if m and MIN_MINOR <= int(m.group(1)) <= MAX_MINOR and \
                os.path.isfile(os.path.join(inc, "Python.h")):
            out.append(inc)
    return out


def compile_and_run(src, inc, workdir, tag):
    cc = os.environ.get("CC", "gcc")
    c_path = os.path.join(workdir, tag + ".c")
    exe = os.path.join(workdir, tag)
    with open(c_path, "w") as fh:
        fh.write(src)
    # the parent directory too: Debian's pyconfig.h includes
    # <x86_64-linux-gnu/python3.X/pyconfig.h> from there
    cmd = shlex.split(cc) + ["-w", "-I", inc, "-I", os.path.join(inc, "internal"),
                             "-I", os.path.dirname(inc), c_path, "-o", exe]
    cp = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                        universal_newlines=True)
    if cp.returncode != 0:
        return None, cp.stderr
    rp = subprocess.run([exe], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                        universal_newlines=True)
    if rp.returncode != 0:
        raise GenError("%s: probe exited %d: %s" % (tag, rp.returncode, rp.stderr.strip()))
    return rp.stdout, None


# ---------------------------------------------------------------- probing

def probe(inc, workdir, frame_read_max):
    """Offsets of one installation: (version tuple, {field: value})."""
    major, minor, micro = header_version(inc)
    ver = "%d.%d.%d" % (major, minor, micro)
    if major != 3:
        raise GenError("%s: Python %s is not 3.x" % (inc, ver))
    srcs = field_sources(minor)
    internal = "\n".join('#include "%s"' % h for h in PROBE_HEADERS
                         if os.path.isfile(os.path.join(inc, "internal", h)))
    pre = PROBE_PRELUDE % {"internal": internal}

    lines = ["int main(void)", "{",
             '\tprintf("version %d %d %d\\n", PY_MAJOR_VERSION, PY_MINOR_VERSION, '
             'PY_MICRO_VERSION);',
             '\tprintf("ft %d\\n", PROBE_FT);',
             '\tprintf("debug %d\\n", PROBE_DEBUG);',
             '\tprintf("ptr %zu\\n", sizeof(void *));']
    for name, s in srcs.items():
        if s[0] == "off":
            lines.append('\tprintf("%s %%zu\\n", (size_t)(%s));' % (name, s[1]))
            if s[2]:
                lines.append('\tprintf("width_%s %%zu\\n", %s);' % (name, s[2]))
    body = "\n".join(lines) + "\n" + PROBE_UNICODE
    if "tstate_status" in srcs and srcs["tstate_status"][0] == "off":
        body += PROBE_TSTATE_ACTIVE

    out, err = compile_and_run(pre + body + "\treturn 0;\n}\n", inc, workdir, "probe%d%d" % (major, minor))
    if out is None:
        raise GenError("%s: probe for %s did not compile:\n%s" % (inc, ver, err))
    vals = {}
    for line in out.splitlines():
        k, _, v = line.partition(" ")
        vals[k] = v
    got = tuple(int(x) for x in vals["version"].split())
    if got != (major, minor, micro):
        raise GenError("%s: patchlevel.h says %s, compiled headers say %s" % (inc, ver, got))
    if int(vals["ft"]):
        raise GenError("%s: free-threaded (Py_GIL_DISABLED) headers are not supported" % inc)
    if int(vals["debug"]):
        raise GenError("%s: Py_DEBUG / Py_TRACE_REFS headers: layout differs from release builds"
                       % inc)
    if int(vals["ptr"]) != 8:
        raise GenError("%s: %s-byte pointers; the table is for 64-bit targets" % (inc, vals["ptr"]))

    res = {}
    for name, s in srcs.items():
        if s[0] == "off":
            v = int(vals[name])
            if v >= 0xFFFF:
                raise GenError("%s: %s = %d does not fit the u16 table" % (ver, name, v))
            if s[3] is not None and int(vals["width_" + name]) != s[3]:
                raise GenError("%s: %s is %s bytes wide, expected %d (%s)" %
                               (ver, name, vals["width_" + name], s[3], s[1]))
            res[name] = v
        elif s[0] == "probe":
            res[name] = probe_enum(pre, s[1], inc, workdir, "enum%d%d" % (major, minor), ver)
        else:
            res[name] = s[1]

    check_unicode(ver, vals, res)
    check_frame(ver, res, frame_read_max)
    if "tstate_active_word" in vals and int(vals["tstate_active_word"]) != TSTATE_ACTIVE:
        raise GenError("%s: PyThreadState._status.active is word %s, not %d (PY_TSTATE_ACTIVE)"
                       % (ver, vals["tstate_active_word"], TSTATE_ACTIVE))
    return (major, minor, micro), res


def probe_enum(pre, sym, inc, workdir, tag, ver):
    """Value of an enumerator, or 0xff when this version does not define it."""
    src = pre + 'int main(void) { printf("%%d\\n", (int)(%s)); return 0; }\n' % sym
    out, err = compile_and_run(src, inc, workdir, tag)
    if out is None:
        if sym not in err:
            raise GenError("%s: probe for %s failed for another reason:\n%s" % (ver, sym, err))
        return 0xFF
    v = int(out)
    if not 0 <= v < 0xFF:
        raise GenError("%s: %s = %d does not fit a u8" % (ver, sym, v))
    return v


def check_unicode(ver, vals, res):
    st = res["unicode_state"]
    if int(vals["state_after_hash"]) != st:
        raise GenError("%s: str state at %d, but hash ends at %s" %
                       (ver, st, vals["state_after_hash"]))
    for field, want in STATE_BITS.items():
        lo, hi, word = (int(x) for x in vals["bit_" + field].split())
        if not (st <= lo <= hi < st + 4):
            raise GenError("%s: setting state.%s changed bytes %d..%d, outside state at %d" %
                           (ver, field, lo, hi, st))
        if word != want:
            raise GenError("%s: state.%s sets word 0x%x, user/python/pyread.c expects 0x%x" %
                           (ver, field, word, want))
    if st + 4 > res["unicode_ascii_size"] or res["unicode_length"] + 8 > res["unicode_ascii_size"]:
        raise GenError("%s: str header fields beyond sizeof(PyASCIIObject)" % ver)


def check_frame(ver, res, frame_read_max):
    """The BPF program reads the first PYPERF_FRAME_READ_MAX bytes of a frame."""
    for name in ("frame_back", "frame_code", "frame_instr"):
        if res[name] + 8 > frame_read_max:
            raise GenError("%s: %s = %d: beyond PYPERF_FRAME_READ_MAX (%d)" %
                           (ver, name, res[name], frame_read_max))
    for name in ("frame_owner", "frame_is_entry"):
        if res[name] != NO and res[name] >= frame_read_max:
            raise GenError("%s: %s = %d: beyond PYPERF_FRAME_READ_MAX" %
                           (ver, name, res[name]))


# ---------------------------------------------------------------- output

def fmt_value(name, v):
    if isinstance(v, str):
        return v
    if name == "owner_shim":
        return "0x%02x" % v if v == 0xFF else str(v)
    return str(v)


def render(entries, fields):
    """entries: sorted list of ((major, minor), [versions], values)."""
    out = []
    out.append("/* py_offsets_table.c - GENERATED by scripts/gen_offsets.py; do not edit.\n"
               " * Regenerate from the repository root with: %s\n" % REGEN_CMD +
               " * (by default it reads the headers under %s.*; see --help)\n" % DEFAULT_GLOB[:-2] +
               " *\n"
               " * Struct offsets of CPython 3.8 to 3.15 (64-bit release builds), one entry\n"
               " * per minor version, measured with offsetof()/sizeof() against the\n"
               " * interpreter's own headers.  Headers used:\n")
    for (maj, mnr), vers, _ in entries:
        out.append(" *   %d.%d: %s\n" % (maj, mnr, ", ".join(vers)))
    out.append(" * Needs bpf/ and user/python/ on the include path (-Ibpf -Iuser/python). */\n"
               "#include <stddef.h>\n\n"
               '#include "pyperf.h"\n'
               '#include "linetable.h"\n'
               '#include "py_offsets_table.h"\n\n'
               "struct py_offsets_entry {\n"
               "\tint major;\n"
               "\tint minor;\n"
               "\tstruct py_offsets off;\n"
               "};\n\n"
               "static const struct py_offsets_entry py_offsets_table[] = {\n")
    for (maj, mnr), _, vals in entries:
        out.append("\t{ %d, %d, {\n" % (maj, mnr))
        for name in fields:
            out.append("\t\t.%s = %s,\n" % (name, fmt_value(name, vals[name])))
        out.append("\t} },\n")
    out.append("};\n\n"
               "const struct py_offsets *py_offsets_for_version(int major, int minor)\n"
               "{\n"
               "\tfor (size_t i = 0; i < sizeof(py_offsets_table) / sizeof(py_offsets_table[0]); i++)\n"
               "\t\tif (py_offsets_table[i].major == major && py_offsets_table[i].minor == minor)\n"
               "\t\t\treturn &py_offsets_table[i].off;\n"
               "\treturn NULL;\n"
               "}\n")
    return "".join(out)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--python-include", action="append", default=[], metavar="DIR",
                    help="CPython include dir (with Python.h) or install prefix; repeatable. "
                         "Default: %s with minor %d..%d" % (DEFAULT_GLOB, MIN_MINOR, MAX_MINOR))
    ap.add_argument("-o", "--output", default=DEFAULT_OUT, help="default: %(default)s")
    ap.add_argument("--check", action="store_true",
                    help="do not write; exit 1 if OUTPUT differs from what would be generated")
    ap.add_argument("--print", action="store_true", dest="show",
                    help="print the values per version to stdout as well")
    args = ap.parse_args(argv)

    try:
        fields = parse_struct_fields(PYPERF_H)
        frame_read_max = parse_define(PYPERF_H, "PYPERF_FRAME_READ_MAX")
        incs = [resolve_include(d) for d in args.python_include] or default_includes()
        if not incs:
            raise GenError("no CPython headers found under %s; use --python-include" % DEFAULT_GLOB)
        by_minor = {}
        with tempfile.TemporaryDirectory(prefix="gen_offsets.") as work:
            for inc in incs:
                ver, vals = probe(inc, work, frame_read_max)
                known = set(vals)
                if known != set(fields):
                    raise GenError("struct py_offsets in %s and the script disagree: "
                                   "only in struct: %s; only in script: %s" %
                                   (PYPERF_H, sorted(set(fields) - known) or "-",
                                    sorted(known - set(fields)) or "-"))
                key = ver[:2]
                vs = "%d.%d.%d" % ver
                if key in by_minor:
                    prev_vers, prev = by_minor[key]
                    diff = [f for f in fields if prev[f] != vals[f]]
                    if diff:
                        raise GenError("%s and %s disagree on %s" %
                                       (prev_vers[0], vs, ", ".join(
                                           "%s (%s vs %s)" % (f, prev[f], vals[f]) for f in diff)))
                    if vs not in prev_vers:
                        prev_vers.append(vs)
                else:
                    by_minor[key] = ([vs], vals)
        entries = [(k, sorted(v[0], key=lambda s: [int(x) for x in s.split(".")]), v[1])
                   for k, v in sorted(by_minor.items())]
        text = render(entries, fields)
    except GenError as e:
        print("gen_offsets.py: error: %s" % e, file=sys.stderr)
        return 2

    if args.show:
        for (maj, mnr), vers, vals in entries:
            print("%d.%d (%s): %s" % (maj, mnr, ", ".join(vers), " ".join(
                "%s=%s" % (f, fmt_value(f, vals[f])) for f in fields)))
    if args.check:
        try:
            with open(args.output) as fh:
                old = fh.read()
        except OSError:
            old = None
        if old != text:
            print("gen_offsets.py: %s is stale; run: %s" % (args.output, REGEN_CMD), file=sys.stderr)
            return 1
        return 0
    with open(args.output, "w") as fh:
        fh.write(text)
    print("gen_offsets.py: wrote %s (%s)" % (args.output, ", ".join(
        "%d.%d" % k for k, _, _ in entries)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
