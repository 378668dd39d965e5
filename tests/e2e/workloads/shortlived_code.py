"""Code objects that live a few milliseconds: each round compiles a module
defining gen_N() in file <gen N>, runs it, and drops it, so its code object,
name and file are freed (and their memory reused) soon after the samples
taken in it, before or while the profiler names them.  Rounds come in two
lengths, told apart by their caller: run_short's live about 1 ms (named or
not is a race with the profiler), run_long's about 20 ms (a profiler that
names new code when it first sees it has time for that even on a loaded
machine).  About half the time goes to each, after 0.5 s of short ones
alone (a profiler attaching to a new process needs a moment before it can
name anything in it: to read where the interpreter's state is).
Usage: shortlived_code.py SECONDS"""
import sys
import time

SRC = ("def gen_{0}():\n"
       "    total = 0\n"
       "    for j in range({1}):\n"
       "        total += j * {0}\n"
       "    return total\n"
       "gen_{0}()\n")


def run_short(n):
    exec(compile(SRC.format(n, 30000), f"<gen {n}>", "exec"), {})


def run_long(n):
    exec(compile(SRC.format(n, 600000), f"<gen {n}>", "exec"), {})


def main():
    start = time.monotonic()
    end = start + float(sys.argv[1])
    n = 0
    while time.monotonic() < start + 0.5:
        run_short(n)
        n += 1
    while time.monotonic() < end:
        for _ in range(20):
            run_short(n)
            n += 1
        run_long(n)
        n += 1


main()
