"""Code objects that live a few milliseconds: each round compiles a module
defining gen_N() in file <gen N>, runs it, and drops it, so its code object,
name and file are freed (and their memory reused) soon after the samples
taken in it, before or while the profiler names them.
Usage: shortlived_code.py SECONDS"""
import sys
import time

SRC = ("def gen_{0}():\n"
       "    total = 0\n"
       "    for j in range(30000):\n"
       "        total += j * {0}\n"
       "    return total\n"
       "gen_{0}()\n")


def main():
    end = time.monotonic() + float(sys.argv[1])
    n = 0
    while time.monotonic() < end:
        exec(compile(SRC.format(n), f"<gen {n}>", "exec"), {})
        n += 1


main()
