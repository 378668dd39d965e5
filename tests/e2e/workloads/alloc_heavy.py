"""An allocation-heavy workload for the memory modes' benchmark: builds and
drops dicts, lists and strings of mixed sizes in a loop, the churn of a
service that parses requests.  Usage: alloc_heavy.py SECONDS OUT.json; OUT
gets the rounds per second it made."""
import json
import sys
import time


def one_round(i):
    rows = [{"id": j, "name": "item-%d" % j, "tags": [j, j + 1, j + 2]} for j in range(50)]
    big = list(range(i % 2000 + 500))          # a list past pymalloc's 512 bytes
    text = ",".join(r["name"] for r in rows)
    return len(rows) + len(big) + len(text)


def main():
    seconds, out = float(sys.argv[1]), sys.argv[2]
    n = 0
    t0 = time.perf_counter()
    end = t0 + seconds
    while True:
        for _ in range(50):
            one_round(n)
            n += 1
        if time.perf_counter() >= end:
            break
    with open(out, "w") as f:
        json.dump({"rounds_per_s": n / (time.perf_counter() - t0)}, f)


if __name__ == "__main__":
    main()
