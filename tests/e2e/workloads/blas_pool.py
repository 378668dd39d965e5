"""numpy matrix products in a Python thread, with OpenBLAS's own worker
thread(s) doing part of each product (OPENBLAS_NUM_THREADS=2).  Writes
{"pid", "caller": native id of the Python thread} to OUT, runs SECONDS.
Usage: blas_pool.py SECONDS OUT"""
import json
import sys
import threading
import time

import numpy as np


def products(stop):
    a = np.random.rand(300, 300)
    b = np.random.rand(300, 300)
    while not stop.is_set():
        a.dot(b)


def main():
    seconds, out = float(sys.argv[1]), sys.argv[2]
    stop = threading.Event()
    t = threading.Thread(target=products, args=(stop,), name="products")
    t.start()
    time.sleep(0.2)
    with open(out, "w") as fh:
        json.dump({"pid": threading.main_thread().native_id, "caller": t.native_id}, fh)
    time.sleep(seconds)
    stop.set()
    t.join()


main()
