"""An idle service: N threads (default 100) that sleep 100 ms at a time and
do a little work between sleeps.  Usage: idle_threads.py SECONDS [N]."""
import sys
import threading
import time


def worker(end):
    x = 0
    while time.monotonic() < end:
        time.sleep(0.1)
        x += sum(range(100))


def main():
    seconds = float(sys.argv[1])
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 100
    end = time.monotonic() + seconds
    threads = [threading.Thread(target=worker, args=(end,)) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


if __name__ == "__main__":
    main()
