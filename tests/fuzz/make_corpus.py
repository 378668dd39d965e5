"""make_corpus.py - (re)write the seed corpora under tests/fuzz/corpus/.

Run from the repository root with any Python 3:  python3 tests/fuzz/make_corpus.py
The seeds are small, real inputs of each parser, made here rather than
fetched: ELF files built by cc and clang from a few lines of C (with
.eh_frame, .debug_frame, a PLT, a build-id, a .AsyncioDebug section;
shared, static, stripped), line tables of stdlib functions compiled by each
installed CPython (3.8/3.9 co_lnotab, 3.10 co_linetable, 3.11+ locations),
a relocatable object as a JIT registers with GDB, the unit tests'
_Py_DebugOffsets images, lines of this machine's
/proc/self/maps, and hand-written perf maps, kallsyms lines, daemon configs
and ring-buffer stack records.  Inputs the fuzzer found that once crashed a
parser are added by hand as crash-*; this script leaves them alone.
"""
import glob
import os
import shutil
import struct
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CORPUS = os.path.join(ROOT, "tests", "fuzz", "corpus")

C_SOURCE = r"""
extern int ext(int);
int counter;
__attribute__((section(".AsyncioDebug"), used))
const unsigned long long AsyncioDebug[4] = { 1, 2, 3, 4 };
static int g(int x) { return ext(x * 3) + counter; }
int f(int x) { int a[8]; for (int i = 0; i < 8; i++) a[i] = g(x + i); return a[x & 7]; }
int _PyEval_EvalFrameDefault(int x) { if (x < 0) return -1; return f(x) + f(x + 1); }
"""

STATIC_SOURCE = r"""
int ext(int x) { return x + 1; }
""" + C_SOURCE.replace("extern int ext(int);", "int ext(int);") + r"""
void _start(void) { for (;;) _PyEval_EvalFrameDefault(3); }
"""


def put(target, name, data):
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def elf_seeds(tmp):
    """name -> ELF bytes"""
    src = os.path.join(tmp, "s.c")
    ssrc = os.path.join(tmp, "st.c")
    with open(src, "w") as f:
        f.write(C_SOURCE)
    with open(ssrc, "w") as f:
        f.write(STATIC_SOURCE)
    # one page of padding less per segment: seeds stay a few KB
    so = ["-shared", "-fPIC", "-nostdlib", "-Wl,--build-id", "-Wl,-z,noseparate-code"]
    builds = {
        # .eh_frame; gcc -O2 brings remember_state/restore_state
        "gcc-O2.so": ["cc", "-O2"] + so + [src],
        # clang's CFI, frame pointers kept
        "clang-O1-fp.so": ["clang", "-O1", "-fno-omit-frame-pointer"] + so + [src],
        # .debug_frame only
        "gcc-debug-frame.so": ["cc", "-O1", "-g1", "-fno-asynchronous-unwind-tables",
                               "-fno-unwind-tables"] + so + [src],
        # ET_EXEC, no PLT
        "gcc-static.exe": ["cc", "-O1", "-static", "-nostdlib", "-no-pie",
                           "-Wl,--build-id", "-Wl,-z,noseparate-code", ssrc],
    }
    out = {}
    for name, cmd in builds.items():
        path = os.path.join(tmp, name)
        subprocess.run(cmd + ["-o", path], check=True)
        if name == "gcc-debug-frame.so":
            # keep .debug_frame, drop the rest of the debug info (size)
            subprocess.run(["objcopy", "--remove-section=.debug_info",
                            "--remove-section=.debug_abbrev",
                            "--remove-section=.debug_line",
                            "--remove-section=.debug_str",
                            "--remove-section=.debug_aranges", path], check=True)
        with open(path, "rb") as f:
            out[name] = f.read()
    stripped = os.path.join(tmp, "stripped.so")
    shutil.copy(os.path.join(tmp, "gcc-O2.so"), stripped)
    subprocess.run(["strip", "--strip-all", stripped], check=True)
    with open(stripped, "rb") as f:
        out["gcc-O2-stripped.so"] = f.read()
    return out


def symbol_address(tmp, name, sym):
    nm = subprocess.run(["nm", os.path.join(tmp, name)], check=True,
                        capture_output=True, text=True).stdout
    for line in nm.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[2] == sym:
            return int(parts[0], 16)
    return 0x1000


LINETABLE_DUMP = r"""
import json.decoder, sys
kind = 0 if sys.version_info < (3, 10) else 1 if sys.version_info < (3, 11) else 2
for fn in (json.decoder.JSONDecoder.raw_decode, json.decoder.py_scanstring,
           json.decoder.JSONObject):
    c = fn.__code__
    t = c.co_lnotab if kind == 0 else c.co_linetable
    print(kind, c.co_firstlineno, len(c.co_code) // 2, c.co_name, t.hex())
"""


def pythons():
    found = {}
    for pat in ["/root/.pyenv/versions/3.*/bin/python3.*", "/usr/bin/python3.*",
                "/opt/pyperf-sid/usr/bin/python3.*"]:
        for p in sorted(glob.glob(pat)):
            base = os.path.basename(p)
            ver = base[len("python"):]
            if ver.count(".") == 1 and ver.replace(".", "").isdigit() and os.access(p, os.X_OK):
                found.setdefault(ver, p)
    return found


def linetable_seeds():
    for ver, py in sorted(pythons().items()):
        if tuple(map(int, ver.split("."))) < (3, 8):
            continue
        r = subprocess.run([py, "-c", LINETABLE_DUMP], capture_output=True, text=True)
        if r.returncode:
            continue
        for line in r.stdout.splitlines():
            kind, first, ninstr, name, hexs = line.split()
            off = (int(ninstr) // 2) * 2
            head = struct.pack("<BhH", int(kind), int(first), off)
            put("linetable", "py%s-%s" % (ver, name), head + bytes.fromhex(hexs))


def pyread_seeds():
    def seed(minor, kind, ascii, length, chars):
        state = kind << 2 | 1 << 5 | ascii << 6
        return struct.pack("<BIQ", minor - 8, state, length) + chars
    put("pyread_str", "ascii-3.12", seed(12, 1, 1, 5, b"hello"))
    put("pyread_str", "latin1-3.8", seed(8, 1, 0, 2, b"c\xe9"))
    put("pyread_str", "ucs2-3.11", seed(11, 2, 0, 3, struct.pack("<3H", 0x3b1, 0xdc80, 0x3b2)))
    put("pyread_str", "ucs4-3.14", seed(14, 4, 0, 2, struct.pack("<2I", 0x1f600, 0x78)))
    put("pyread_str", "long-cut-3.13", seed(13, 1, 1, 5000, b"x" * 5000))


def procmaps_seeds():
    with open("/proc/self/maps", "rb") as f:
        lines = f.read().splitlines(keepends=True)
    put("procmaps", "self", b"".join(lines[:12]))
    put("procmaps", "odd-paths",
        b"7f0000000000-7f0000001000 r-xp 00001000 08:01 1234     /usr/lib/lib python.so (deleted)\n"
        b"7f0000001000-7f0000002000 rw-p 00000000 00:00 0 \n"
        b"7f0000002000-7f0000003000 r--p 00000000 08:01 99   /tmp/new\\012line\n"
        b"7ffc00000000-7ffc00021000 rw-p 00000000 00:00 0                          [stack]")


def gdbjit_seeds(tmp):
    """A relocatable object, as LLVM's MCJIT registers them (beside the
    linked ELF seeds)."""
    src, obj = os.path.join(tmp, "j.c"), os.path.join(tmp, "j.o")
    with open(src, "w") as f:
        f.write(C_SOURCE)
    subprocess.run(["cc", "-O1", "-c", src, "-o", obj], check=True)
    with open(obj, "rb") as f:
        put("gdbjit", "relocatable", f.read())


def perfmap_seeds():
    put("perfmap", "cpython-trampolines",
        b"7f3a4c000000 b py::<module>:/srv/app.py\n"
        b"7f3a4c00000b b py::handle:/srv/app.py\n"
        b"7f3a4c000016 b py::wait:/usr/lib/python3.12/threading.py\n")
    put("perfmap", "jit-mixed",
        b"0x7f0000001000 0x40 LazyCompile:*foo bar.js:1\r\n"
        b"7F0000001040 20 Builtin:\tname with tab\n"
        b"ffffffffffffffff 10 wraps\n"
        b"garbage line\n"
        b"1000 0 empty\n"
        b"2000 10 last-without-newline")


def ksyms_seeds():
    text = (b"ffffffff81000000 T _stext\n"
            b"ffffffff81001000 t do_one_initcall\n"
            b"ffffffff81002000 D some_data\n"
            b"ffffffff81003000 W weak_fn\n"
            b"ffffffffc0a01000 t ext4_file_read_iter\t[ext4]\n"
            b"0000000000000000 A fixed_percpu_data\n")
    addrs = [0xffffffff81000010, 0xffffffff81002800, 0xffffffffc0a01234]
    put("ksyms", "kallsyms", struct.pack("<B", len(addrs)) +
        b"".join(struct.pack("<Q", a) for a in addrs) + text)
    put("ksyms", "below-first", struct.pack("<BQ", 1, 0x1000) + text)


def sampler_seeds(tmp):
    prog = os.path.join(tmp, "sizes")
    src = os.path.join(tmp, "sizes.c")
    with open(src, "w") as f:
        f.write('#include <stdio.h>\n#include "pyperf.h"\nint main(void)\n'
                '{ printf("%zu %zu\\n", (size_t)EV_WIRE_HEAD, sizeof(struct py_frame)); }\n')
    subprocess.run(["cc", "-I" + os.path.join(ROOT, "bpf"), src, "-o", prog], check=True)
    head, fsize = map(int, subprocess.run([prog], capture_output=True, text=True,
                                          check=True).stdout.split())
    assert fsize == 16

    def record(nframes, nnative, nkernel):
        h = struct.pack("<IIIIQIIIIQQII16s", 1, 4242, 4243, nframes, 0x1234567890abcdef, 7,
                        0, nnative, nkernel, 0, 0, 0, 0, b"python3")
        assert len(h) == head, (len(h), head)
        frames = b"".join(struct.pack("<QII", 0x7f0000100000 + 0x100 * i, 2 * i | (1 << 31 if i == 0 else 0), 0xabc + i)
                          for i in range(nframes))
        native = b"".join(struct.pack("<Q", 0x555500001000 + 0x10 * i) for i in range(nnative))
        kernel = b"".join(struct.pack("<Q", 0xffffffff81000000 + 0x10 * i) for i in range(nkernel))
        return h + frames + native + kernel
    put("sampler_stack", "python-only", record(3, 0, 0))
    put("sampler_stack", "merged", record(4, 6, 0))
    put("sampler_stack", "offcpu-kernel", record(2, 3, 5))
    put("sampler_stack", "short", record(3, 0, 0)[:-8])


def daemon_config_seeds():
    put("daemon_config", "full",
        b"# pyperf-bpf daemon\n"
        b"frequency = 49\n"
        b"mode = cpu\n"
        b"interval = 30.5\n"
        b"match = ^(gunicorn|celery)\n"
        b"cgroup = /system.slice/app.service\n"
        b"dir = /var/lib/pyperf-bpf/profiles\n"
        b"keep = 100\n"
        b"keep-bytes = 512M\n"
        b"push = https://pprof.example.com/upload\n"
        b"spool-bytes = 64M\n"
        b"unwind-bytes = 1G\n"
        b"app-env = SERVICE\n"
        b"log = /var/log/pyperf-bpf.log\n"
        b"stats = true\n"
        b"no-kernel = no\n"
        b"python-only = 0\n"
        b"gil = false\n"
        b"async = yes\n")
    put("daemon_config", "faults", b"mode = faults\nfault-interval = 64K\n  \t\n")
    put("daemon_config", "bad-line", b"frequency = 99999\n")


def jitdump_seeds(tmp):
    """jitdump files: one built here (loads, a move, records skipped, a
    record cut short) and, where CPython 3.13 is installed, one its
    -X perf_jit wrote."""
    def rec(kind, body):
        return struct.pack("<IIQ", kind, 16 + len(body), 1) + body

    def load(addr, size, name):
        return rec(0, struct.pack("<IIQQQQ", 1, 1, addr, addr, size, 3) + name + b"\0" +
                   b"\xc3" * size)

    head = struct.pack("<IIIIIIQQ", 0x4A695444, 1, 40, 62, 0, 1, 0, 0)
    body = (load(0x7f0000001000, 0x20, b"jit_avx512_kernel") + rec(2, b"\0" * 24) +
            load(0x7f0000002000, 0x10, b"py::handle:/srv/app.py") +
            rec(1, struct.pack("<IIQQQQQ", 1, 1, 0, 0x7f0000001000, 0x7f0000003000, 0x20, 3)) +
            rec(4, b"\0" * 32) + rec(3, b""))
    put("jitdump", "built", head + body)
    put("jitdump", "cut-short", head + body[:-40])
    py = "/root/.pyenv/versions/3.13.0/bin/python3.13"
    if os.access(py, os.X_OK):
        r = subprocess.run([py, "-X", "perf_jit", "-c",
                            "import os; print(os.getpid())\ndef f(): pass\nf()"],
                           capture_output=True, text=True, cwd=tmp, check=True)
        dump = "/tmp/jit-%s.dump" % r.stdout.strip()
        with open(dump, "rb") as f:
            put("jitdump", "cpython-3.13-perf-jit", f.read()[:16384])
        os.unlink(dump)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        elves = elf_seeds(tmp)
        for name, data in elves.items():
            put("unwind_table", name, data)
            put("elfsym", name, data)
            put("gdbjit", name, data)
            addr = symbol_address(tmp, "gcc-O2.so" if "stripped" in name else name, "f")
            put("nsym", name, struct.pack("<Q", addr + 4) + data)
        sampler_seeds(tmp)
        gdbjit_seeds(tmp)
        jitdump_seeds(tmp)
    for f in glob.glob(os.path.join(ROOT, "tests", "unit", "data", "debug_offsets_*.bin")):
        with open(f, "rb") as src:
            put("debug_offsets", os.path.basename(f), src.read())
    linetable_seeds()
    pyread_seeds()
    procmaps_seeds()
    perfmap_seeds()
    ksyms_seeds()
    daemon_config_seeds()


if __name__ == "__main__":
    sys.exit(main())
