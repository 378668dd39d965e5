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
    end = time.monotonic() + float(sys.argv[2])
    while time.monotonic() < end:
        fastloop.crunch(3000000, callback)
    time.sleep(0.5)  # names are read from the live process


main()
