"""A command that ends its own way when asked to stop, and says so in
MARK_FILE: "int" if SIGINT (Ctrl-C) reached it (exit 3), "term" for SIGTERM
(exit 4).  With IGNORE, it ignores the signals named there (e.g. "int" or
"int,term") and burns CPU until killed.
Usage: stubborn.py MARK_FILE [IGNORE]"""
import signal
import sys
import time

mark = sys.argv[1]
ignore = sys.argv[2].split(",") if len(sys.argv) > 2 else []


def leave(what, code):
    def handler(sig, frame):
        with open(mark, "w") as f:
            f.write(what)
        sys.exit(code)
    return handler


signal.signal(signal.SIGINT, signal.SIG_IGN if "int" in ignore else leave("int", 3))
signal.signal(signal.SIGTERM, signal.SIG_IGN if "term" in ignore else leave("term", 4))


def burn():
    end = time.monotonic() + 60
    while time.monotonic() < end:
        pass


print("ready", flush=True)
burn()
