"""Collections and imports to be timed by the interpreter's own markers
(gc__start/gc__done, import__find__load__start/done), with the ground truth
beside them.  Usage: gc_imports.py OUT.json SLOWDIR

Collections: a gc.callbacks callback, registered first thing, counts the
'start' of every collection per generation; gc.get_stats() says how many
collections came before it (start-up's, which a profiler may or may not have
seen).  Then 0.3 s of CPU without allocations and 0.7 s of sleep (a
profiler attaches its probes when it first samples the process), then about
1.5 s of CPU making cyclic garbage at an irregular threshold, with three
gc.collect() in the middle (generation 2).  Imports: SLOWDIR/quickmod.py
(x = 1), then SLOWDIR/slowmod.py (its body sleeps 0.4 s), both written by
the test, then a few standard modules that were not imported yet.

OUT gets {"callbacks": {generation: starts seen by the callback},
"base": [collections per generation before the callback],
"final": [collections per generation at the end], "imported": [the
standard modules imported here, in order], "import_ms": {module: the wall
time of its import statement here, which holds the markers' find-and-load},
"pid": this process}.  The
collector is disabled before those are read, and the process ends with
os._exit: finalization would run collections the callback does not see."""
import gc
import itertools
import json
import os
import sys
import time

base = [s["collections"] for s in gc.get_stats()]
starts = {"0": 0, "1": 0, "2": 0}


def on_gc(phase, info):
    if phase == "start":
        g = str(info["generation"])
        starts[g] = starts.get(g, 0) + 1


gc.callbacks.append(on_gc)

STDLIB = ["decimal", "fractions", "ipaddress"]


def make_cycles(n):
    for _ in range(n):
        a = {}
        b = [a, {"a": a}]
        a["b"] = b


def churn(seconds):
    # a small linear congruential generator, not `random`: importing it
    # would add an import (and its collections) of its own
    seed = 12345
    end = time.thread_time() + seconds
    middle = time.thread_time() + seconds / 2
    collected = False
    while time.thread_time() < end:
        seed = (seed * 1103515245 + 12345) & 0x7fffffff
        # irregular intervals between collections
        gc.set_threshold(5000 + seed % 15001, 10, 10)
        make_cycles(500)
        if not collected and time.thread_time() >= middle:
            for _ in range(3):
                gc.collect()
            collected = True


def main():
    out, slowdir = sys.argv[1], sys.argv[2]
    # a profiler attaches its probes when it first samples the process:
    # some CPU time without allocating (no collection), then a pause
    end = time.thread_time() + 0.3
    while time.thread_time() < end:
        for _ in itertools.repeat(None, 10000):
            pass
    time.sleep(0.7)
    churn(1.5)
    sys.path.insert(0, slowdir)
    import_ms = {}
    imported = []
    for name in ["quickmod", "slowmod"] + STDLIB:
        if name not in sys.modules:
            t = time.perf_counter()
            __import__(name)
            import_ms[name] = (time.perf_counter() - t) * 1000
            if name in STDLIB:
                imported.append(name)
    gc.disable()  # no collection after the counts are read
    final = [s["collections"] for s in gc.get_stats()]
    with open(out, "w") as f:
        json.dump({"callbacks": dict(starts), "base": base, "final": final,
                   "imported": imported, "import_ms": import_ms, "pid": os.getpid()}, f)
        f.flush()
    sys.stdout.flush()
    sys.stderr.flush()
    time.sleep(0.5)  # names are read from the live process
    os._exit(0)


if __name__ == "__main__":
    main()
