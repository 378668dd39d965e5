"""A native thread that calls into Python after running native code only:
late_attach_spin for NATIVE_S seconds of its CPU time, then the Python
function late_python_work for PYTHON_S.  Usage: late_attach.py LIB.so
NATIVE_S PYTHON_S OUT.json; OUT gets the CPU seconds each phase took."""
import ctypes
import json
import sys
import time

CALLBACK = ctypes.CFUNCTYPE(None)


def late_python_work(seconds):
    end = time.thread_time() + seconds
    n = 0
    while time.thread_time() < end:
        for i in range(1000):
            n += i
    return n


def main():
    lib = ctypes.CDLL(sys.argv[1])
    native_s, python_s = float(sys.argv[2]), float(sys.argv[3])
    spent = {}

    def hook():
        t0 = time.thread_time()
        late_python_work(python_s)
        spent["python_cpu_s"] = time.thread_time() - t0

    cb = CALLBACK(hook)
    lib.late_attach_run.argtypes = [CALLBACK, ctypes.c_double]
    if lib.late_attach_run(cb, native_s):
        sys.exit("late_attach: pthread_create failed")
    with open(sys.argv[4], "w") as f:
        json.dump(spent, f)


if __name__ == "__main__":
    main()
