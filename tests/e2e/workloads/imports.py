"""Module bodies that run once: N modules written to a directory, each
spinning SPIN ms in its body (then defining a function, which keeps the
module's file name string alive), imported one after the other; a module's
code object is freed as soon as its body has run.  Usage: imports.py DIR N SPIN"""
import os
import sys


def main():
    where, n, spin = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    os.makedirs(where, exist_ok=True)
    for i in range(n):
        with open(os.path.join(where, f"body_{i}.py"), "w") as f:
            f.write("import time\n"
                    f"end = time.monotonic() + {spin / 1000}\n"
                    "while time.monotonic() < end:\n"
                    "    pass\n"
                    "def kept():\n"
                    "    pass\n")
    sys.path.insert(0, where)
    for i in range(n):
        __import__(f"body_{i}")


if __name__ == "__main__":
    main()
