"""spin() runs for SECONDS with a line table of random bytes (co_linetable,
co_lnotab before 3.10) in place of its own: a code object whose line table
says nothing true.
Usage: hostile_lines.py SECONDS"""
import random
import sys
import time


def spin(seconds):
    end = time.monotonic() + seconds
    x = 0
    while time.monotonic() < end:
        x += 1
    return x


code = spin.__code__
table = code.co_linetable if sys.version_info >= (3, 10) else code.co_lnotab
garbage = bytes(random.Random(7).randrange(256) for _ in range(len(table) * 3))
if sys.version_info >= (3, 10):
    spin.__code__ = code.replace(co_linetable=garbage)
else:
    spin.__code__ = code.replace(co_lnotab=garbage)
print("ready", flush=True)
spin(float(sys.argv[1]))
