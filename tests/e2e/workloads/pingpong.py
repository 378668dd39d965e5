"""A context-switch-heavy workload: two threads pass a byte back and forth
through two pipes, each blocking in read() until the other writes.  Usage:
pingpong.py SECONDS OUT.json; OUT gets the round trips per second it made."""
import json
import os
import sys
import threading
import time


def ponger(rd, wr, stop):
    while not stop.is_set():
        b = os.read(rd, 1)
        if not b:
            break
        os.write(wr, b)


def pinger(rd, wr, seconds):
    n = 0
    end = time.perf_counter() + seconds
    t0 = time.perf_counter()
    while True:
        for _ in range(100):
            os.write(wr, b"x")
            os.read(rd, 1)
        n += 100
        if time.perf_counter() >= end:
            break
    return n / (time.perf_counter() - t0)


def main():
    seconds, out = float(sys.argv[1]), sys.argv[2]
    a_rd, a_wr = os.pipe()
    b_rd, b_wr = os.pipe()
    stop = threading.Event()
    t = threading.Thread(target=ponger, args=(a_rd, b_wr, stop))
    t.start()
    rate = pinger(b_rd, a_wr, seconds)
    stop.set()
    os.close(a_wr)
    t.join()
    with open(out, "w") as f:
        json.dump({"round_trips_per_s": rate}, f)


if __name__ == "__main__":
    main()
