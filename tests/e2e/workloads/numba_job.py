"""A numba @njit kernel called from Python for argv[1] seconds of CPU time:
numba compiles it with LLVM's MCJIT into anonymous memory; drive() is its
Python caller."""
import sys
import time

import numpy as np
from numba import njit


@njit
def kernel(a):
    s = 0.0
    for i in range(a.shape[0]):
        s += np.sqrt(a[i] * a[i] + 1.0)
    return s


def drive(seconds):
    a = np.random.rand(200000)
    kernel(a)  # compiled here
    end = time.process_time() + seconds
    while time.process_time() < end:
        kernel(a)


if __name__ == "__main__":
    drive(float(sys.argv[1]))
