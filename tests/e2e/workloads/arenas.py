"""--mode alloc: small() keeps a million small objects (tuples of an int and
a float), which pymalloc serves from the arenas it maps for them (mmap, not
malloc); prints one JSON line with the bytes those objects take
(sys.getsizeof)."""
import json
import sys

KEEP = []


def small(n):
    for i in range(n):
        KEEP.append((i + 1000, i + 1.5))


def main():
    small(1000000)
    held = sum(sys.getsizeof(t) + sys.getsizeof(t[0]) + sys.getsizeof(t[1]) for t in KEEP)
    print(json.dumps({"small": held}), flush=True)


if __name__ == "__main__":
    main()
