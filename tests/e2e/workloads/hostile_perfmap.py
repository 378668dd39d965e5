"""JIT code (an anonymous executable page holding a counting loop) named by
/tmp/perf-PID.map, where the file is: "ok" a regular perf map naming it
hot_jit; "fifo" a named pipe (an open for reading would block); "symlink"
a symbolic link to /etc/passwd; "huge" a 1 GB sparse file; "foreign" a
regular perf map owned by another user (nobody).  call_jit()
calls the code for SECONDS; the map is removed at the end.
Usage: hostile_perfmap.py ok|fifo|symlink|huge|foreign SECONDS"""
import ctypes
import mmap
import os
import struct
import sys
import time

mode, seconds = sys.argv[1], float(sys.argv[2])
# mov rcx, 2000000; 1: dec rcx; jnz 1b; ret
code = b"\x48\xb9" + struct.pack("<Q", 2000000) + b"\x48\xff\xc9\x75\xfb\xc3"
page = mmap.mmap(-1, mmap.PAGESIZE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS,
                 prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
page.write(code)
addr = ctypes.addressof(ctypes.c_char.from_buffer(page))
jit = ctypes.CFUNCTYPE(None)(addr)
path = "/tmp/perf-%d.map" % os.getpid()
if mode in ("ok", "foreign"):
    with open(path, "w") as f:
        f.write("%x %x hot_jit\n" % (addr, len(code)))
    if mode == "foreign":
        os.chown(path, 65534, 65534)
elif mode == "fifo":
    os.mkfifo(path)
elif mode == "symlink":
    os.symlink("/etc/passwd", path)
elif mode == "huge":
    with open(path, "w") as f:
        f.write("%x %x hot_jit\n" % (addr, len(code)))
        f.truncate(1 << 30)


def call_jit():
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        jit()


try:
    print("ready", flush=True)
    call_jit()
finally:
    os.unlink(path)
