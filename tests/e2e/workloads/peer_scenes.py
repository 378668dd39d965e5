"""Scenes for the peer tests' dumps, one per thread: the main thread
recurses five calls deep, then sleeps; a thread named in Cyrillic sleeps in
a function with a Cyrillic name; one sleeps in a function with accents in
its name; one spins; one sleeps in a function with arguments and locals of every
kind dump --locals shows.  Prints "ready" once all have started.  The tests run
it from a file whose name is not ASCII either."""
import threading
import time


def функция():
    time.sleep(1000)


def café_crème():
    time.sleep(1000)


def spin():
    x = 0
    while True:
        x += 1


class Scene:
    pass


def with_locals(count, name, ratio=2.5, *rest, flag=True, **kw):
    big = 2 ** 70
    neg = -12345
    half = 0.5
    text = "it's \"quoted\"\nнить"
    data = b"\x00ab\xff"
    items = [1, 2, 3]
    nothing = None
    obj = Scene()

    def inner():
        return count  # count lives in a cell

    time.sleep(1000)


def deep(n):
    if n:
        return deep(n - 1)
    time.sleep(1000)


if __name__ == "__main__":
    for name, fn in (("поток", функция), ("crème", café_crème), ("spinner", spin)):
        threading.Thread(target=fn, name=name, daemon=True).start()
    threading.Thread(target=with_locals, args=(7, "w", 1.25, 5, 6),
                     kwargs={"flag": False, "extra": 1}, name="locals", daemon=True).start()
    time.sleep(0.3)
    print("ready", flush=True)
    deep(5)
