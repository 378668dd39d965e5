"""Run handjit.c's kernels (the library is argv[1]) for argv[2] seconds of
CPU time each: the one with a frame pointer under with_fp(), the other under
without_fp(); argv[3] names one of the two to run it alone."""
import ctypes
import sys


def with_fp(lib, seconds):
    assert lib.spin_fp(ctypes.c_double(seconds)) == 0


def without_fp(lib, seconds):
    assert lib.spin_nofp(ctypes.c_double(seconds)) == 0


if __name__ == "__main__":
    lib = ctypes.CDLL(sys.argv[1])
    # argv[3], if given: that one only
    if sys.argv[3:] in ([], ["with_fp"]):
        with_fp(lib, float(sys.argv[2]))
    if sys.argv[3:] in ([], ["without_fp"]):
        without_fp(lib, float(sys.argv[2]))
