"""Construct objects of a class with a Python __init__ for SECONDS (argv[1])
of its own CPU time (so a CPU-clock profiler gets the same number of
samples however busy the machine is): CPython 3.13+ specialises the call
(CALL_ALLOC_AND_ENTER_INIT) and runs __init__ above a shim frame of its own
(_Py_InitCleanup)."""
import sys
import time


class Point:
    def __init__(self, n):
        s = 0
        for i in range(n):
            s += i
        self.s = s


def build(seconds):
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        Point(2000)


if __name__ == "__main__":
    build(float(sys.argv[1]))
