"""--mode faults: toucher() takes a fresh bytearray of MB mebibytes (calloc:
untouched zero pages) and writes one byte in each page, so each page is
faulted in while toucher() runs; busy() meanwhile computes with small
objects, which pymalloc serves from arenas it already has.
Usage: faults.py [MB [TIMES]]: toucher runs TIMES times (default once), each
time on a fresh bytearray (the one before is freed: glibc gives such big
blocks back to the kernel).  Prints one JSON line: the bytes toucher touched,
then lives on for half a second: the profiler reads its stacks' names from
the live process, and the whole run takes a few tenths of a second, which a
loaded CI machine can take to name them."""
import json
import sys
import time


def busy(n):
    total = 0
    for i in range(n):
        total += len([i, i + 1, i + 2])
    return total


def toucher(mb):
    b = bytearray(mb << 20)
    for i in range(0, len(b), 4096):
        b[i] = 1
    return len(b)


def main():
    mb = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    times = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    busy(300000)
    touched = sum(toucher(mb) for _ in range(times))
    busy(300000)
    print(json.dumps({"touched_bytes": touched}), flush=True)
    time.sleep(0.5)


if __name__ == "__main__":
    main()
