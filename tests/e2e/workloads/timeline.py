"""A run whose phases the timeline must place where this program's own clock
(time.monotonic(), CLOCK_MONOTONIC) puts them: burn CPU, sleep, make cyclic
garbage and collect it (gc.callbacks times every collection), import a module
that takes ~150 ms to load, burn again.  Usage: timeline.py RESULT.json;
RESULT gets {"marks": {phase_start/phase_end: seconds}, "gcs": [[start,
stop, generation]]}."""
import gc
import json
import os
import sys
import tempfile
import time


def burn(seconds):
    end = time.monotonic() + seconds
    x = 0
    while time.monotonic() < end:
        x += 1
    return x


def garbage(n):
    for _ in range(n):
        a = []
        a.append(a)


marks = {}
burn(0.4)
marks["sleep_start"] = time.monotonic()
time.sleep(0.3)
marks["sleep_end"] = time.monotonic()
burn(0.2)
gcs, started = [], {}


def on_gc(phase, info):
    if phase == "start":
        started["t"] = time.monotonic()
    else:
        gcs.append([started.pop("t", None), time.monotonic(), info["generation"]])


gc.callbacks.append(on_gc)
marks["gc_start"] = time.monotonic()
garbage(200000)
gc.collect()
marks["gc_end"] = time.monotonic()
gc.callbacks.remove(on_gc)
d = tempfile.mkdtemp()
with open(os.path.join(d, "slow_module.py"), "w") as f:
    f.write("import time\ntime.sleep(0.15)\n")
sys.path.insert(0, d)
marks["import_start"] = time.monotonic()
import slow_module  # noqa: E402,F401
marks["import_end"] = time.monotonic()
burn(0.3)
with open(sys.argv[1], "w") as f:
    json.dump({"marks": marks, "gcs": gcs}, f)
