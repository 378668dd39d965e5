"""Three functions that burn CPU in turns: slow() FACTOR times as long as
fast() and steady() each round.  Usage: slowfast.py SECONDS FACTOR OUT.json
OUT gets the CPU time spent in each and the process's CPU time in all,
measured with the thread's own clock."""
import json
import sys
import time


def burn(seconds):
    end = time.thread_time() + seconds
    x = 0
    while time.thread_time() < end:
        for i in range(500):
            x += i
    return x


def slow(unit):
    burn(unit)


def fast(unit):
    burn(unit)


def steady(unit):
    burn(unit)


def main():
    seconds, factor, out = float(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
    spent = {"slow": 0.0, "fast": 0.0, "steady": 0.0}
    unit = 0.02
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        t = time.thread_time()
        slow(unit * factor)
        spent["slow"] += time.thread_time() - t
        t = time.thread_time()
        fast(unit)
        spent["fast"] += time.thread_time() - t
        t = time.thread_time()
        steady(unit)
        spent["steady"] += time.thread_time() - t
    spent["process"] = time.process_time()
    with open(out, "w") as f:
        json.dump(spent, f)
    time.sleep(0.5)  # names are read from the live process


if __name__ == "__main__":
    main()
