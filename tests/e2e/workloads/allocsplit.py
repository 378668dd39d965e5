"""--mode alloc: seventy() and thirty() allocate bytearrays (from the C
library's malloc: past pymalloc's 512 bytes) of assorted sizes in a 70/30
split of bytes, and drop them soon after.  Usage: allocsplit.py SECONDS.
Prints one JSON line with the bytes each asked for."""
import json
import sys
import time

SIZES = (600, 1500, 4000, 9000, 30000)


def allocate(n, times, asked, slot):
    keep = []
    for i in range(n):
        size = SIZES[i % len(SIZES)] * times
        keep.append(bytearray(size))
        asked[slot] += size
        if len(keep) > 50:
            keep.clear()


def seventy(n, asked):
    allocate(n, 7, asked, 0)


def thirty(n, asked):
    allocate(n, 3, asked, 1)


def main():
    asked = [0, 0]
    end = time.monotonic() + float(sys.argv[1])
    while time.monotonic() < end:
        seventy(500, asked)
        thirty(500, asked)
    print(json.dumps({"seventy": asked[0], "thirty": asked[1]}), flush=True)


if __name__ == "__main__":
    main()
