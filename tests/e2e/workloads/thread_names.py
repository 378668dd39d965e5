"""Threads with Python names the OS does not have: one renamed while it
runs, one whose name is long and not ASCII; all spin.  Writes {native thread
id: its Python name at the end} as JSON.
Usage: thread_names.py SECONDS RESULT.json"""
import json
import sys
import threading
import time


def spin(seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


def main():
    seconds, out = float(sys.argv[1]), sys.argv[2]
    threads = [threading.Thread(target=spin, args=(seconds,), name="CustomThreadName"),
               threading.Thread(target=spin, args=(seconds,),
                                name="Ünïcode worker with a name longer than 15 bytes")]
    for t in threads:
        t.start()
    time.sleep(seconds / 3)
    threads[0].name = "Renamed while running"
    spin(seconds / 3)
    ids = {t.native_id: t.name for t in threads}
    ids[threading.get_native_id()] = threading.current_thread().name
    for t in threads:
        t.join()
    with open(out, "w") as f:
        json.dump(ids, f)


if __name__ == "__main__":
    main()
