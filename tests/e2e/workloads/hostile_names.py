"""A function whose name is NAME_MB megabytes, compiled from a file name of
PATH_KB kilobytes, burns CPU for SECONDS under a caller, outer().
Usage: hostile_names.py SECONDS NAME_MB PATH_KB"""
import sys
import time

seconds, name_mb, path_kb = float(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
name = "f" * (name_mb << 20)
path = "/" + "p" * ((path_kb << 10) - 1)
src = ("def %s(seconds):\n"
       "    end = time.monotonic() + seconds\n"
       "    while time.monotonic() < end:\n"
       "        pass\n") % name
ns = {"time": time}
exec(compile(src, path, "exec"), ns)
long_named = ns[name]
del src, name


def outer():
    long_named(seconds)


print("ready", flush=True)
outer()
