"""Spend the time in the kernel: read /dev/urandom in a loop for SECONDS of
its own CPU time (user and system: as many samples on a busy machine).
Usage: syscalls.py SECONDS"""
import sys
import time


def read_random(seconds):
    end = time.thread_time() + seconds
    with open("/dev/urandom", "rb", buffering=0) as f:
        while time.thread_time() < end:
            f.read(65536)


read_random(float(sys.argv[1]))
