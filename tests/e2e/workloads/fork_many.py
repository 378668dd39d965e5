"""A parent that forks N children one after another, at most three alive at
once; each burns SECONDS of its own CPU time in child_work and ends.
Usage: fork_many.py N SECONDS PIDS_JSON (the children's pids, written at
the end)."""
import json
import os
import sys
import time


def child_work(seconds):
    end = time.process_time() + seconds
    x = 0
    while time.process_time() < end:
        x += 1


def main():
    n, seconds, out = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
    pids, alive = [], set()
    for _ in range(n):
        while len(alive) >= 3:
            alive.discard(os.wait()[0])
        pid = os.fork()
        if pid == 0:
            child_work(seconds)
            os._exit(0)
        pids.append(pid)
        alive.add(pid)
    while alive:
        alive.discard(os.wait()[0])
    with open(out, "w") as f:
        json.dump(pids, f)


if __name__ == "__main__":
    main()
