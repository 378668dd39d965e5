"""Threads that are asleep before a profiler attaches: "napper" in
time.sleep (nap), "locked" on a lock that is never released (wait_lock),
"piped" in a read of a pipe nobody writes (wait_pipe), "waker" that sleeps
a second at a time and does a little work between (doze), and the main
thread asleep in main_wait.  Prints "ready" once all of them wait.
Usage: asleep_before.py"""
import os
import threading
import time


def nap():
    time.sleep(1000)


def wait_lock(lock):
    lock.acquire()


def wait_pipe(fd):
    os.read(fd, 1)


def doze():
    while True:
        time.sleep(1.0)
        sum(range(1000))


def main_wait():
    time.sleep(1000)


if __name__ == "__main__":
    held = threading.Lock()
    held.acquire()
    r, _w = os.pipe()
    for name, fn, args in (("napper", nap, ()), ("locked", wait_lock, (held,)),
                           ("piped", wait_pipe, (r,)), ("waker", doze, ())):
        threading.Thread(target=fn, name=name, args=args, daemon=True).start()
    time.sleep(0.3)
    print("ready", flush=True)
    main_wait()
