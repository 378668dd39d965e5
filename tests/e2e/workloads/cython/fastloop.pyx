# A loop in C that calls back into Python, and a cdef function of its own
# (tests/e2e/test_cython.py: each sample's Cython frames and lines).


cdef long mix(long x, int rounds):
    cdef long h = x
    cdef int r
    for r in range(rounds):
        h = (h * 1103515245 + 12345) % 2147483648
    return h


def crunch(int n, cb):
    cdef long total = 0
    cdef int i
    for i in range(n):
        total += i * i % 7
        if i % 1000000 == 0:
            cb(i)
            total += mix(i, 30000)
    total += mix(total, 30000)
    return total
