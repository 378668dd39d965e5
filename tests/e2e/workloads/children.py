"""A parent that starts two child processes which burn CPU in child_work.
Usage: children.py SECONDS"""
import multiprocessing
import sys
import time


def child_work(seconds):
    end = time.monotonic() + seconds
    x = 0
    while time.monotonic() < end:
        x += 1


def main():
    seconds = float(sys.argv[1])
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=child_work, args=(seconds,)) for _ in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()


if __name__ == "__main__":
    main()
