"""GIL contention: two CPU-bound Python threads (spin_a, spin_b) and one
thread compressing with zlib, which releases the GIL while it compresses
(zlib_worker; random data, ~20 ms a call).  Usage: gil.py SECONDS OUT.json.
Each spinning thread holds the GIL about half of the time and waits for it
the other half.  OUT gets, per spinning thread, two shares of its wall time
(/proc/thread-self/schedstat): "slept", neither on a CPU nor waiting for
one, which for a thread that never blocks otherwise is all GIL wait; and
"off_cpu", not on a CPU, which adds the time it waited for a CPU, in the GIL
hand-over or elsewhere.  Its GIL wait lies between the two.  Each of the
three threads also gets "cpu_s", its own CPU time."""
import json
import os
import sys
import threading
import time
import zlib


def schedstat():
    """(ns on a CPU, ns runnable waiting for one) of this thread"""
    with open("/proc/thread-self/schedstat") as f:
        run, wait, _ = f.read().split()
    return int(run), int(wait)


def spin(end, out, name):
    t0, (run0, wait0) = time.perf_counter(), schedstat()
    x = 0
    while time.monotonic() < end:
        x += 1
    wall = (time.perf_counter() - t0) * 1e9
    run, wait = schedstat()
    out[name] = {"slept": (wall - (run - run0) - (wait - wait0)) / wall,
                 "off_cpu": (wall - (run - run0)) / wall, "cpu_s": (run - run0) / 1e9}


def spin_a(end, out):
    spin(end, out, "spin_a")


def spin_b(end, out):
    spin(end, out, "spin_b")


def zlib_worker(end, out):
    # 256 KiB apart, farther than zlib looks back: nothing to match
    data = os.urandom(1 << 18) * 4
    run0, _ = schedstat()
    while time.monotonic() < end:
        zlib.compress(data, 9)
    out["zlib_worker"] = {"cpu_s": (schedstat()[0] - run0) / 1e9}


def main():
    end = time.monotonic() + float(sys.argv[1])
    out = {}
    threads = [threading.Thread(target=f, args=(end, out), name=f.__name__)
               for f in (spin_a, spin_b, zlib_worker)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    with open(sys.argv[2], "w") as f:
        json.dump(out, f)
    # names are read from the live process: the last stacks (the threads'
    # final schedstat calls) are new ones, and a loader slowed by a busy
    # machine once found the process gone and its code unnamed
    time.sleep(0.3)


if __name__ == "__main__":
    main()
