"""Work in subinterpreters: two threads each run crunch_sub() in an
interpreter of its own while the main thread runs crunch_main() in the main
interpreter, all for SECONDS.  3.14+ through concurrent.interpreters, 3.13
through _interpreters, 3.12 through _xxsubinterpreters.  Every part
measures its own CPU time (time.thread_time) and the whole writes
{"main": s, "subs": [s, s], "ids": [interpreter ids]} to OUT.json.
Usage: subinterpreters.py SECONDS OUT.json"""
import json
import os
import sys
import tempfile
import threading
import time

SUB = """
import time


def crunch_sub(seconds):
    t0 = time.thread_time()
    end = time.monotonic() + seconds
    x = 0
    while time.monotonic() < end:
        x += 1
    return time.thread_time() - t0


spent = crunch_sub({seconds})
with open({out!r}, "w") as f:
    f.write(repr(spent))
"""


def make_interpreter():
    """(id, run(source)) of a new interpreter"""
    try:
        from concurrent import interpreters  # 3.14+
        interp = interpreters.create()
        return interp.id, interp.exec
    except ImportError:
        pass
    try:
        import _interpreters as low  # 3.13
    except ImportError:
        import _xxsubinterpreters as low  # 3.12
    iid = low.create()
    run = getattr(low, "exec", None) or low.run_string
    return int(iid), lambda source: run(iid, source)


def crunch_main(seconds):
    t0 = time.thread_time()
    end = time.monotonic() + seconds
    x = 0
    while time.monotonic() < end:
        x += 1
    return time.thread_time() - t0


def in_subinterpreter(seconds, out, ids):
    iid, run = make_interpreter()
    ids.append(iid)
    run(SUB.format(seconds=seconds, out=out))


def main():
    seconds, out = float(sys.argv[1]), sys.argv[2]
    tmp = tempfile.mkdtemp()
    parts = [os.path.join(tmp, "sub%d" % i) for i in range(2)]
    ids = []
    threads = [threading.Thread(target=in_subinterpreter, args=(seconds, p, ids),
                                name="sub%d" % i) for i, p in enumerate(parts)]
    for t in threads:
        t.start()
    spent = crunch_main(seconds)
    for t in threads:
        t.join()
    subs = []
    for p in parts:
        with open(p) as f:
            subs.append(float(f.read()))
    with open(out, "w") as f:
        json.dump({"main": spent, "subs": subs, "ids": ids}, f)


if __name__ == "__main__":
    main()
