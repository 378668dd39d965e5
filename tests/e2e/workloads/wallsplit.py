"""Ground truth for --mode wall and offcpu: the main thread's wall time, as it
measures it with perf_counter, splits into CPU work (about 40 %), time.sleep
(30 %), a blocking read on a pipe fed by another process (20 %) and waiting
for a threading.Lock another thread holds (10 %); a second thread only
sleeps.  Usage: wallsplit.py SECONDS OUT.json; OUT gets each part's share of
main_loop's time, the sleeping thread's own lifetime in seconds, and how
long cpu_work waited for a CPU (its wall time less its thread time: off-CPU
time too, which a loaded machine makes large).
Written for every CPython from 3.6 (no walrus, no f-string `=`)."""
import json
import os
import subprocess
import sys
import threading
import time

ROUND = 0.1  # seconds: 40 ms CPU, 30 ms sleep, 20 ms pipe, 10 ms lock

FEEDER = ("import os, time\n"
          "while True:\n"
          "    b = os.read(0, 1)\n"
          "    if not b:\n"
          "        break\n"
          "    time.sleep(0.02)\n"
          "    os.write(1, b)\n")


def cpu_work(seconds):
    end = time.perf_counter() + seconds
    x = 0
    while time.perf_counter() < end:
        x += 1
    return x


def sleeper(seconds):
    time.sleep(seconds)


def pipe_reader(feeder):
    os.write(feeder.stdin.fileno(), b"r")
    os.read(feeder.stdout.fileno(), 1)


def lock_waiter(lock, go, held):
    go.set()
    held.wait()
    lock.acquire()
    lock.release()


def holder(lock, go, held, done):
    while not done.is_set():
        if not go.wait(0.5):
            continue
        go.clear()
        with lock:
            held.set()
            time.sleep(ROUND * 0.1)
        held.clear()


def only_sleeps(done, out):
    t0 = time.perf_counter()
    while not done.is_set():
        time.sleep(0.05)
    out["sleeper_s"] = time.perf_counter() - t0


# 3.7+; before, no waiting is measured
thread_time = getattr(time, "thread_time", lambda: time.perf_counter())


def main_loop(seconds, feeder, lock, go, held, out):
    spent = {"cpu": 0.0, "sleep": 0.0, "pipe": 0.0, "lock": 0.0}
    waited = 0.0  # of cpu_work's wall time, what it did not run (preempted)
    t_start = time.perf_counter()
    while time.perf_counter() - t_start < seconds:
        t0 = time.perf_counter()
        c0 = thread_time()
        cpu_work(ROUND * 0.4)
        waited += max(0.0, (time.perf_counter() - t0) - (thread_time() - c0))
        t1 = time.perf_counter()
        sleeper(ROUND * 0.3)
        t2 = time.perf_counter()
        pipe_reader(feeder)
        t3 = time.perf_counter()
        lock_waiter(lock, go, held)
        t4 = time.perf_counter()
        spent["cpu"] += t1 - t0
        spent["sleep"] += t2 - t1
        spent["pipe"] += t3 - t2
        spent["lock"] += t4 - t3
    total = time.perf_counter() - t_start
    out["cpu_waited_s"] = waited
    return dict((k, v / total) for k, v in spent.items()), total


def main():
    seconds, out_path = float(sys.argv[1]), sys.argv[2]
    feeder = subprocess.Popen([sys.executable, "-c", FEEDER], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, bufsize=0)
    lock, go, held, done = threading.Lock(), threading.Event(), threading.Event(), threading.Event()
    out = {}
    threads = [threading.Thread(target=holder, args=(lock, go, held, done)),
               threading.Thread(target=only_sleeps, args=(done, out))]
    for t in threads:
        t.start()
    shares, total = main_loop(seconds, feeder, lock, go, held, out)
    done.set()
    for t in threads:
        t.join()
    feeder.stdin.close()
    feeder.wait()
    out.update(shares=shares, main_s=total)
    with open(out_path, "w") as f:
        json.dump(out, f)


if __name__ == "__main__":
    main()
