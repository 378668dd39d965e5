"""Known time split: leaf_a, leaf_b and leaf_c get about 60, 30 and 10 % of the
CPU, in jittered slices, for SECONDS of its own CPU time (so the samples a
CPU-clock profiler takes do not fall with the machine's load), and the
process measures its own split with time.thread_time().  With WORK.json it
also writes how much it got done
({"iterations": N, "seconds": wall time}: a profiler's slowdown of it).
SECONDS written as "1wall" are of the wall clock instead (a process that
must end in a known time).
Usage: split.py SECONDS RESULT.json [WORK.json]"""
import json
import random
import sys
import time


def leaf_a(n):
    x = 0
    for i in range(n):
        x += i
    return x


def leaf_b(n):
    x = 0
    for i in range(n):
        x += i
    return x


def leaf_c(n):
    x = 0
    for i in range(n):
        x += i
    return x


def calibrate():
    n = 10000
    t0 = time.thread_time()
    leaf_a(n)
    return max(1, int(n / max(time.thread_time() - t0, 1e-6) / 1000))  # iterations per ms


def run_schedule(seconds, per_ms, work, clock=time.thread_time):
    spent = {"leaf_a": 0.0, "leaf_b": 0.0, "leaf_c": 0.0}
    plan = [(leaf_a, 6.0), (leaf_b, 3.0), (leaf_c, 1.0)]
    rnd = random.Random(7)
    # SECONDS of its own CPU time: a CPU-clock profiler gets as many samples
    # however busy the machine is (it takes longer, in wall time, there)
    end = clock() + seconds
    while clock() < end:
        for fn, ms in plan:
            n = int(per_ms * ms * rnd.uniform(0.5, 1.5))
            t0 = time.thread_time()
            fn(n)
            spent[fn.__name__] += time.thread_time() - t0
            work["iterations"] += n
    return spent


def main():
    wall = sys.argv[1].endswith("wall")
    seconds, out = float(sys.argv[1][:-4] if wall else sys.argv[1]), sys.argv[2]
    per_ms = calibrate()
    print("ready", flush=True)
    work = {"iterations": 0}
    t0 = time.monotonic()
    spent = run_schedule(seconds, per_ms, work, time.monotonic if wall else time.thread_time)
    work["seconds"] = time.monotonic() - t0
    with open(out, "w") as f:
        json.dump(spent, f)
    if len(sys.argv) > 3:
        with open(sys.argv[3], "w") as f:
            json.dump(work, f)


if __name__ == "__main__":
    main()
