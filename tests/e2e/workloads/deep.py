"""Recurse DEPTH frames deep, then burn CPU in the deepest one.
Usage: deep.py DEPTH SECONDS"""
import sys
import time


def spin(seconds):
    end = time.thread_time() + seconds  # of its own CPU time: as many samples under load
    x = 0
    while time.thread_time() < end:
        for i in range(1000):
            x += i
    return x


def recurse(n, seconds):
    if n <= 1:
        return spin(seconds)
    return recurse(n - 1, seconds)


def main():
    depth, seconds = int(sys.argv[1]), float(sys.argv[2])
    sys.setrecursionlimit(depth + 1000)
    recurse(depth, seconds)


if __name__ == "__main__":
    main()
