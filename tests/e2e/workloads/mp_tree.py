"""A process tree as multiprocessing makes them: two workers from each
start method given (fork, spawn, forkserver), each spinning until stopped,
and the parent joining them.  Writes every pid it knows of (its own, the
workers', the forkserver's) to the file argv[1], one per line, then
'ready'."""
import multiprocessing as mp
import os
import sys
import time


def spin(path):
    with open(path, "a") as f:
        f.write(f"{os.getpid()}\n")
    while True:
        sum(range(10000))


def main(path, methods):
    with open(path, "w") as f:
        f.write(f"{os.getpid()}\n")
    procs = []
    for m in methods:
        ctx = mp.get_context(m)
        for _ in range(2):
            p = ctx.Process(target=spin, args=(path,))
            p.start()
            procs.append(p)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with open(path) as f:
            if len(f.read().split()) >= 1 + len(procs):
                break
        time.sleep(0.05)
    with open(path, "a") as f:
        if "forkserver" in methods:
            from multiprocessing import forkserver
            pid = getattr(forkserver._forkserver, "_forkserver_pid", None)
            if pid:
                f.write(f"{pid}\n")
        f.write("ready\n")
    for p in procs:
        p.join()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2].split(","))
