"""Runs first_program for SECONDS, then execs the interpreter on split.py, in
the same process: the daemon must keep the two programs apart.
Usage: exec_chain.py SECONDS SPLIT_SECONDS RESULT.json (the environment variable
NEXT_SERVICE becomes PYPERF_SERVICE of the second program)."""
import os
import sys
import time


def first_program(seconds):
    end = time.monotonic() + seconds
    x = 0
    while time.monotonic() < end:
        x += 1


if __name__ == "__main__":
    print("ready", flush=True)
    first_program(float(sys.argv[1]))
    env = dict(os.environ, PYPERF_SERVICE=os.environ.get("NEXT_SERVICE", "second"))
    split = os.path.join(os.path.dirname(os.path.abspath(__file__)), "split.py")
    os.execve(sys.executable, [sys.executable, split, sys.argv[2], sys.argv[3]], env)
