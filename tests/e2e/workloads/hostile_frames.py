"""A thread whose frame chain is broken while it runs: burn() points the
link to its caller at its own frame ("cycle") or at an unmapped address
("unmapped"), burns CPU for SECONDS without calling anything that follows
the chain, then mends the link and returns.  3.8-3.10 link frame objects
(f_back, right after the object's variable-size header); 3.11+ link
interpreter frames (`previous`, found by looking in the running frame for
its caller's address).
Usage: hostile_frames.py cycle|unmapped SECONDS"""
import ctypes
import sys
import time

mode, seconds = sys.argv[1], float(sys.argv[2])
WORD = ctypes.sizeof(ctypes.c_void_p)


def word(addr):
    return ctypes.c_uint64.from_address(addr)


def link_of(frame):
    """the address of the word linking frame to its caller"""
    if sys.version_info < (3, 11):
        return id(frame) + 3 * WORD  # f_back after ob_refcnt, ob_type, ob_size
    mine = word(id(frame) + 3 * WORD).value  # f_frame after the header and f_back
    caller = word(id(frame.f_back) + 3 * WORD).value
    for i in range(16):
        if word(mine + i * WORD).value == caller:
            return mine + i * WORD
    raise SystemExit("hostile_frames.py: no link to the caller found")


def burn():
    me = sys._getframe()
    link = link_of(me)
    saved = word(link).value
    word(link).value = (link - (link - id(me) if sys.version_info < (3, 11) else 0)
                        if mode == "cycle" else 0x10)
    if sys.version_info >= (3, 11) and mode == "cycle":
        word(link).value = word(id(me) + 3 * WORD).value  # its own interpreter frame
    end = time.monotonic() + seconds
    x = 0
    while x >= 0:  # ints only: no garbage collection walks the chain
        x += 1
        if x % 100000 == 0 and time.monotonic() > end:
            break
    word(link).value = saved
    return x


def caller():
    return burn()


print("ready", flush=True)
caller()
print("done", flush=True)
