"""Call dbg_spin (dbgspin.c, built by the test into the library given as
the first argument) for SECONDS of CPU time; print the DEBUGINFOD_URLS this
process was given."""
import ctypes
import os
import sys

if __name__ == "__main__":
    print(os.environ.get("DEBUGINFOD_URLS", ""), flush=True)
    lib = ctypes.CDLL(sys.argv[1])
    lib.dbg_spin.argtypes = [ctypes.c_double]
    lib.dbg_spin(float(sys.argv[2]))
