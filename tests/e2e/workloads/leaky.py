"""`leaks`: leaker() keeps 1 KiB bytes objects in a global list, churner()
allocates and frees as many bytes, grower() grows a numpy array (a bytearray
where numpy is not installed) that it keeps.  All three allocate from the C
library's malloc (past pymalloc's 512 bytes).
Usage: leaky.py SECONDS: prints "ready", waits for a line on stdin, runs the
three in turn for SECONDS, prints one JSON line with the bytes leaker and
grower still hold (sys.getsizeof, or the array's own size), then sleeps
until killed."""
import json
import sys
import time

try:
    import numpy
except ImportError:
    numpy = None

KEPT = []


def leaker(n):
    for _ in range(n):
        KEPT.append(bytes(1024))


def churner(n):
    for _ in range(n):
        b = bytes(1024)
        del b


def grower(held):
    if numpy is not None:
        return numpy.concatenate((held, numpy.ones(2048)))
    held += bytes(16384)
    return held


def main():
    seconds = float(sys.argv[1])
    held = numpy.zeros(0) if numpy is not None else bytearray()
    print("ready", flush=True)
    sys.stdin.readline()
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        leaker(200)
        churner(200)
        held = grower(held)
    grown = held.nbytes if numpy is not None else sys.getsizeof(held)
    print(json.dumps({"leaker": sum(sys.getsizeof(b) for b in KEPT), "grower": grown,
                      "numpy": numpy is not None}), flush=True)
    time.sleep(600)


if __name__ == "__main__":
    main()
