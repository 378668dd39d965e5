"""Python calls libc's qsort through ctypes, and qsort calls back into a
Python comparator: Python -> native -> Python on one stack.
Usage: qsort_cb.py SECONDS"""
import ctypes
import random
import sys
import time

libc = ctypes.CDLL(None)
CMP = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int))


def compare(a, b):
    x, y = a[0], b[0]
    for _ in range(20):  # some work of its own, so samples land here
        x, y = y, x
    return (x > y) - (x < y)


def sort_many(seconds):
    cmp = CMP(compare)
    values = [random.randrange(1 << 20) for _ in range(2000)]
    arr = (ctypes.c_int * len(values))(*values)
    end = time.thread_time() + seconds  # of its own CPU time: as many samples under load
    while time.thread_time() < end:
        random.shuffle(values)
        arr[:] = values
        libc.qsort(arr, len(arr), ctypes.sizeof(ctypes.c_int), cmp)


if __name__ == "__main__":
    sort_many(float(sys.argv[1]))
