"""--mode faults: toucher() takes a fresh bytearray of MB mebibytes (calloc:
untouched zero pages) and writes one byte in each page, so each page is
faulted in while toucher() runs; busy() meanwhile computes with small
objects, which pymalloc serves from arenas it already has.
Usage: faults.py [MB [TIMES [LINGER [wait]]]]: toucher runs TIMES times
(default once), each time on a fresh bytearray (the one before is freed:
glibc gives such big blocks back to the kernel); with "wait", warm()
faults 4 MiB in the same way, then it prints "warm" and reads a line before
going on.  Prints one JSON line: the bytes toucher touched and each
function's lines (first, last), then lives on for LINGER seconds (default
half a second): the profiler reads its stacks' names from the live process,
and the whole run takes a few tenths of a second, which a loaded CI machine
can take to name them."""
import json
import sys
import time


def busy(n):
    total = 0
    for i in range(n):
        total += len([i, i + 1, i + 2])
    return total


def warm(mb):
    """toucher's work before toucher: faults under main while the process
    lives, so that main and this file are named then"""
    b = bytearray(mb << 20)
    for i in range(0, len(b), 4096):
        b[i] = 1
    return len(b)


def toucher(mb):
    b = bytearray(mb << 20)
    for i in range(0, len(b), 4096):
        b[i] = 1
    return len(b)


def lines_of_all():
    """(first, last) line of each function of this file, by name: its def
    line to the last its code runs (once the work is done: its import and
    compiling are not part of it)"""
    import dis
    with open(__file__) as f:
        src = f.read()
    out = {"<module>": (1, src.count("\n") + 1)}
    todo = [compile(src, __file__, "exec")]
    while todo:
        for k in todo.pop().co_consts:
            if hasattr(k, "co_code"):
                todo.append(k)
                lo, hi = out.get(k.co_name, (k.co_firstlineno, k.co_firstlineno))
                lines = [ln for _, ln in dis.findlinestarts(k) if ln]
                out[k.co_name] = (min(lo, k.co_firstlineno), max([hi] + lines))
    return out


def main():
    mb = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    times = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    linger = float(sys.argv[3]) if len(sys.argv) > 3 else 0.5
    busy(300000)
    if sys.argv[4:5] == ["wait"]:
        warm(4)
        print("warm", flush=True)
        sys.stdin.readline()
    touched = sum(toucher(mb) for _ in range(times))
    busy(300000)
    print(json.dumps({"touched_bytes": touched, "lines": lines_of_all()}), flush=True)
    time.sleep(linger)


if __name__ == "__main__":
    main()
