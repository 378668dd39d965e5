"""Call plt_spin (plt_loop.c, built by the test into the library given as
the first argument) for SECONDS of CPU time."""
import ctypes
import sys


def run(lib, seconds):
    lib.plt_spin(ctypes.c_double(seconds))


if __name__ == "__main__":
    lib = ctypes.CDLL(sys.argv[1])
    lib.plt_spin.argtypes = [ctypes.c_double]
    run(lib, float(sys.argv[2]))
