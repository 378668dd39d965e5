"""Run fastloop.crunch (a Cython extension built by the test into the
directory given) for SECONDS, its callback a Python loop.
Usage: cython_run.py DIR SECONDS"""
import sys
import time

sys.path.insert(0, sys.argv[1])
import fastloop  # noqa: E402


def callback(i):
    s = 0
    for k in range(20000):
        s += k
    return s


def main():
    # of its own CPU time: as many samples however busy the machine is
    end = time.thread_time() + float(sys.argv[2])
    while time.thread_time() < end:
        fastloop.crunch(3000000, callback)
    time.sleep(0.5)  # names are read from the live process


main()
