"""Fork children that run a little Python and end at once with os._exit,
one after another, for SECONDS of the parent's wall clock: many exits, each
a chance for a sample taken as the child ends (while the profiler's own
exit hook runs, or just after it told the loader so).
Usage: fork_exit.py SECONDS"""
import os
import sys
import time


def spin(n):
    x = 0
    for i in range(n):
        x += i
    return x


def launch():
    pid = os.fork()
    if pid == 0:
        spin(20000)
        os._exit(0)
    os.waitpid(pid, 0)


def main():
    end = time.monotonic() + float(sys.argv[1])
    while time.monotonic() < end:
        launch()


main()
