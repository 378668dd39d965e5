"""Spend the time in the kernel: read /dev/urandom in a loop.
Usage: syscalls.py SECONDS"""
import sys
import time


def read_random(seconds):
    end = time.monotonic() + seconds
    with open("/dev/urandom", "rb", buffering=0) as f:
        while time.monotonic() < end:
            f.read(65536)


read_random(float(sys.argv[1]))
