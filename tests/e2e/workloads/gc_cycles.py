"""Make cyclic garbage while many objects stay alive, so that the cyclic
collector runs often and each collection of the older generations has much
to traverse; measure the collector's own time with gc.callbacks, in CPU
time of the thread (the samples count CPU time: a wall clock would also
count the time the process waited for a CPU on a busy machine).
Usage: gc_cycles.py SECONDS OUT.json [acyclic]
(acyclic: the same churn with the collector disabled and no cycles made)
OUT gets {"gc_s": time in collections, "churn_s": time in churn(),
"collections": {generation: count}}, all of it inside churn()."""
import gc
import json
import random
import sys
import time

state = {"on": False, "t0": 0.0, "gc_s": 0.0, "collections": {}}


def on_gc(phase, info):
    if not state["on"]:
        return
    if phase == "start":
        state["t0"] = time.thread_time()
    else:
        state["gc_s"] += time.thread_time() - state["t0"]
        g = str(info["generation"])
        state["collections"][g] = state["collections"].get(g, 0) + 1


def make_cycles(n, cyclic):
    for _ in range(n):
        a = {}
        b = [a]
        if cyclic:
            a["b"] = b


def churn(seconds, cyclic):
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        # collections at irregular intervals: at a fixed threshold they
        # come every ~2 ms, in step with a 499 Hz sampler on some versions,
        # and the samples would see one phase of the cycle more than others
        gc.set_threshold(random.randint(8000, 32000), 10, 10)
        make_cycles(2000, cyclic)


def main():
    seconds, out = float(sys.argv[1]), sys.argv[2]
    cyclic = sys.argv[3:] != ["acyclic"]
    if not cyclic:
        gc.disable()
    # live containers: each collection of the older generations walks them
    keep = [[i] for i in range(400000)]
    # fewer, longer collections: the callbacks' own cost (a Python call and
    # an info dict at each end of every collection, inside the collection
    # but outside its clock) stays small against what they measure
    gc.set_threshold(20000, 10, 10)
    gc.callbacks.append(on_gc)
    state["on"] = True
    t0 = time.thread_time()
    churn(seconds, cyclic)
    churn_s = time.thread_time() - t0
    state["on"] = False
    with open(out, "w") as f:
        json.dump({"gc_s": state["gc_s"], "churn_s": churn_s,
                   "collections": state["collections"], "kept": len(keep)}, f)
    time.sleep(0.5)  # names are read from the live process


if __name__ == "__main__":
    main()
