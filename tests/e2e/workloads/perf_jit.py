"""Run with -X perf_jit (CPython 3.13+): every Python function gets a
trampoline, listed in the jitdump file CPython maps (/tmp/jit-PID.dump).
CPython writes that file through stdio, 4 KB at a time, so a record reaches
the file only once enough follow it: hot() is called first, then 200
functions made here once each; then hot() runs for SECONDS (argv[1])."""
import sys
import time


def hot(n):
    s = 0
    for i in range(n):
        s += i * i
    return s


def main(seconds):
    hot(1)
    for i in range(200):
        ns = {}
        exec(f"def filler_{i}():\n    return {i}\n", ns)
        ns[f"filler_{i}"]()
    end = time.thread_time() + seconds  # of its own CPU time: as many samples under load
    while time.thread_time() < end:
        hot(10000)


if __name__ == "__main__":
    main(float(sys.argv[1]))
