"""py-spy's subprocesses scenario: a parent starts two multiprocessing
children that sleep from their birth, and sleeps itself.  METHOD is the
start method (fork, spawn, forkserver, or default: the version's own).
Writes {"parent": pid, "children": [pids]} to PIDS.json once both run.
Usage: sleepy_children.py METHOD PIDS.json"""
import json
import multiprocessing
import os
import sys
import time


def target():
    time.sleep(1000)


def main():
    method, out = sys.argv[1], sys.argv[2]
    ctx = multiprocessing.get_context(None if method == "default" else method)
    children = [ctx.Process(target=target, daemon=True) for _ in range(2)]
    for c in children:
        c.start()
    with open(out + ".tmp", "w") as f:
        json.dump({"parent": os.getpid(), "children": [c.pid for c in children]}, f)
    os.rename(out + ".tmp", out)
    time.sleep(1000)


if __name__ == "__main__":
    main()
