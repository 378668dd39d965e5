"""Churn around a steady worker: the main thread burns CPU in steady() for
SECONDS of its own CPU time (as many samples of it on a busy machine) while
"threads" starts and ends about RATE threads a second (each does a little
work), or "procs" starts about RATE processes a second, each exiting at once
or exec'ing one of the interpreters named after RATE (so the profiler meets
new binaries while it builds their tables).
Usage: churn.py threads|procs SECONDS RATE [PYTHON...]"""
import os
import subprocess
import sys
import threading
import time

mode, seconds, rate = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
others = sys.argv[4:] or [sys.executable]
started = 0


def tiny():
    return sum(range(200))


def spawner(stop):
    global started
    gap = (10.0 if mode == "threads" else 1.0) / rate
    kids = []
    while not stop.is_set():
        t = time.monotonic()
        if mode == "threads":  # ten at a time, each living a few ms at most
            batch = [threading.Thread(target=tiny) for _ in range(10)]
            for th in batch:
                th.start()
            for th in batch:
                th.join()
            started += 9
        else:
            exe = others[started % len(others)]
            code = ("import os; os.execv(%r, [%r, '-c', 'pass'])" % (exe, exe)
                    if started % 2 else "pass")
            kids.append(subprocess.Popen([sys.executable, "-c", code]))
            kids = [k for k in kids if k.poll() is None]
        started += 1
        left = gap - (time.monotonic() - t)
        if left > 0:
            time.sleep(left)
    for k in kids:
        k.wait()


def steady():
    end = time.thread_time() + seconds
    x = 0
    while time.thread_time() < end:
        x += 1
    return x


sys.setswitchinterval(1e-4)  # the spawner gets the GIL often enough
stop = threading.Event()
sp = threading.Thread(target=spawner, args=(stop,))
sp.start()
t0 = time.monotonic()
steady()
stop.set()
sp.join()
print("started %d (%.0f/s)" % (started, started / (time.monotonic() - t0)), flush=True)
