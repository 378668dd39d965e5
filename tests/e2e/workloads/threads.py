"""Three threads: py-spin runs pure Python, c-work compresses with zlib (the
GIL released inside zlib), sleeper sleeps.  Each names its OS thread as its Python thread is named
(the profile shows the Python name where there is one) and the process
writes {role: native thread id}.  Usage: threads.py SECONDS RESULT.json"""
import ctypes
import json
import os
import sys
import threading
import time
import zlib

stop = threading.Event()
ids = {}


def name_os_thread(name):
    libc = ctypes.CDLL(None)
    libc.prctl(15, name.encode(), 0, 0, 0)  # PR_SET_NAME


def py_spin():
    name_os_thread("py-spin")
    ids["py_spin"] = threading.get_native_id()
    x = 0
    while not stop.is_set():
        for i in range(10000):
            x += i


def c_work():
    name_os_thread("c-work")
    ids["c_work"] = threading.get_native_id()
    data = os.urandom(1 << 20) * 4
    while not stop.is_set():
        zlib.compress(data, 6)


def sleeper():
    name_os_thread("sleeper")
    ids["sleeper"] = threading.get_native_id()
    stop.wait(3600)


def main():
    seconds, out = float(sys.argv[1]), sys.argv[2]
    threads = [threading.Thread(target=f, name=f.__name__.replace("_", "-"))
               for f in (py_spin, c_work, sleeper)]
    for t in threads:
        t.start()
    time.sleep(seconds)
    stop.set()
    for t in threads:
        t.join()
    with open(out, "w") as f:
        json.dump(ids, f)


if __name__ == "__main__":
    main()
