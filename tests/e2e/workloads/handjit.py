"""Run handjit.c's kernels (the library is argv[1]) for argv[2] seconds of
CPU time each: the one with a frame pointer under with_fp(), the other under
without_fp()."""
import ctypes
import sys


def with_fp(lib, seconds):
    assert lib.spin_fp(ctypes.c_double(seconds)) == 0


def without_fp(lib, seconds):
    assert lib.spin_nofp(ctypes.c_double(seconds)) == 0


if __name__ == "__main__":
    lib = ctypes.CDLL(sys.argv[1])
    with_fp(lib, float(sys.argv[2]))
    without_fp(lib, float(sys.argv[2]))
