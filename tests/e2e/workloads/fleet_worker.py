"""A mostly idle service process for the fleet benchmark: it works about
1 ms of Python (handle -> parse -> score, three frames) then sleeps 500 ms,
so that hundreds of them share two CPUs.  It joins the cgroup given (a
container's, as docker's cgroupfs driver names it) before it starts.
Usage: fleet_worker.py SECONDS [CGROUP_PROCS_FILE]"""
import os
import sys
import time


def score(words):
    return sum(len(w) * 7 % 13 for w in words)


def parse(n):
    return score(("w%d" % i for i in range(n)))


def handle():
    t = time.thread_time()
    while time.thread_time() - t < 0.001:
        parse(50)


def main():
    if len(sys.argv) > 2:
        with open(sys.argv[2], "w") as f:
            f.write(str(os.getpid()))
    end = time.monotonic() + float(sys.argv[1])
    while time.monotonic() < end:
        handle()
        time.sleep(0.5)


if __name__ == "__main__":
    main()
