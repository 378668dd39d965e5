"""Threads that wait and one that spins, for `dump`: the main thread sleeps in
main_wait, thread "napper" in nap_in_thread, thread "spinner" loops in spin.
Prints "ready" once all have started.  Usage: sleeper.py"""
import threading
import time


def nap_in_thread():
    time.sleep(1000)


def spin():
    x = 0
    while True:
        x += 1


def main_wait():
    time.sleep(1000)


if __name__ == "__main__":
    for name, fn in (("napper", nap_in_thread), ("spinner", spin)):
        threading.Thread(target=fn, name=name, daemon=True).start()
    time.sleep(0.2)
    print("ready", flush=True)
    main_wait()
