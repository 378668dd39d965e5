"""linetable_dump.py - print line-table ground truth from the running CPython
(3.8 to 3.13) for tests/unit/linetable_check.c.

How it works: the sources of a few stdlib modules plus a generated snippet
(nested functions, closures, comprehensions, generators, lambdas, async code,
class bodies, try/with/loops, long lines, big line jumps both ways, and
version-gated match / except* blocks) are compiled, and every code object
reachable through co_consts is printed as

    C <kind> <co_firstlineno> <table hex, or -> <name>@<file>
    O <byte offset> <truth> <capi>          (one per offset)

kind is 0 (co_lnotab, 3.8/3.9), 1 (co_linetable, 3.10) or 2 (co_linetable,
3.11+); a line of -1 means "no line"; "?" means "not known".

truth is Python's own view of each instruction's line:
  3.10+     the co_lines() range covering the offset (None -> -1); every even
            offset inside every range is printed, so on 3.11+ the CACHE
            entries after an instruction are checked too;
  3.8/3.9   dis.findlinestarts() propagated forward: the line of the last line
            start at or before the offset.
capi is what the interpreter's own C function PyCode_Addr2Line answers, called
through ctypes ("?" when ctypes cannot reach it).  A negative offset and the
first offset past the code are printed with truth "?" and only the C answer
(the latter skipped on debug builds, where CPython asserts on it).

Usage: python3.X tests/unit/linetable_dump.py | build/tests/linetable_check
"""
import dis
import importlib.util
import sys
import sysconfig

MODULES = ["argparse", "json.decoder", "collections", "typing", "dataclasses",
           "difflib", "textwrap", "asyncio.tasks", "_pydecimal",
           "email._header_value_parser"]

LONG_BODY = "".join("        v = v + %d\n" % i for i in range(300))
BLANKS = "\n" * 300

SNIPPET = '''
import functools

def deco(f):
    return f

@deco
@functools.lru_cache(maxsize=None)
def outer(a, b=2, *args, **kw):
    x = [i * a for i in range(b) if i]
    s = {i for i in x}
    d = {k: v for k, v in kw.items()}
    g = (y + 1 for y in x)
    def inner(q):
        nonlocal a
        a += q
        return lambda z: z + a + q
    return inner, x, s, d, g

def gen(n):
    for i in range(n):
        yield i
    yield from range(n)
    return n

async def agen(items):
    async for i in items:
        yield i

async def coro(lock, items):
    async with lock:
        await lock.acquire()
    return [i async for i in items]

class K:
    attr = 1
    def method(self, a,
               b):
        try:
            r = a / b
        except ZeroDivisionError as e:
            r = e
        except (TypeError,
                ValueError):
            raise
        else:
            r += 1
        finally:
            a = None
        return r

    @property
    def prop(self):
        return (lambda:
                self.attr)()

def loops(n):
    v = 0
    while n:
        n -= 1
        if n % 2:
            continue
        v += n
    else:
        v = -v
    for i in range(n):
        if i > 3:
            break
    else:
        v = 0
    return v

def call_back(f, a, b):
    return f(
        a,
        b,
    ) + f(a,
          b)

def long_line(a):
    x = a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a
    return x

def gaps(a):
    x = a
''' + BLANKS + '''    y = (a,
''' + BLANKS + '''         a)
    return x + y[0]

def long_with(cm, v):
    with cm:
''' + LONG_BODY + '''    for i in cm:
''' + LONG_BODY + '''    return v
'''

GATED = {
    (3, 10): '''
def matcher(v):
    match v:
        case [a, b, *rest]:
            return a
        case {"k": k}:
            return k
        case int(x) if x > 3:
            return x
        case _:
            return None
''',
    (3, 11): '''
def groups():
    try:
        raise ExceptionGroup("g", [ValueError(1)])
    except* ValueError as e:
        r = e
    except* TypeError:
        r = None
    return r
''',
    (3, 12): '''
type Alias[T] = list[T]
def generic[T](x: T) -> T:
    return x
''',
}


def kind():
    if sys.version_info < (3, 10):
        return 0
    return 1 if sys.version_info < (3, 11) else 2


def table(co):
    return co.co_lnotab if sys.version_info < (3, 10) else co.co_linetable


def c_addr2line():
    """PyCode_Addr2Line through ctypes, or None."""
    try:
        import ctypes
        f = ctypes.pythonapi.PyCode_Addr2Line
    except (ImportError, AttributeError, OSError):
        return None
    f.argtypes = [ctypes.py_object, ctypes.c_int]
    f.restype = ctypes.c_int
    return f


def truth_co_lines(co):
    out = {}
    for start, end, line in co.co_lines():
        for off in range(start, end, 2):
            out[off] = -1 if line is None else line
    return out


def truth_linestarts(co):
    starts = sorted(dis.findlinestarts(co))
    out, i, line = {}, 0, None
    for off in range(0, len(co.co_code), 2):
        while i < len(starts) and starts[i][0] <= off:
            line = starts[i][1]
            i += 1
        if line is not None:
            out[off] = line
    return out


def walk(co):
    yield co
    for c in co.co_consts:
        if hasattr(c, "co_code"):
            for sub in walk(c):
                yield sub


def sources():
    for name in MODULES:
        spec = importlib.util.find_spec(name)
        if spec is None or not spec.origin or not spec.origin.endswith(".py"):
            continue
        with open(spec.origin, "rb") as f:
            yield f.read(), spec.origin
    yield SNIPPET, "<snippet>"
    for ver, src in sorted(GATED.items()):
        if sys.version_info >= ver:
            yield src, "<snippet-%d.%d>" % ver


def dump_code(co, capi, debug, w):
    truth = truth_co_lines(co) if sys.version_info >= (3, 10) else truth_linestarts(co)
    hexed = table(co).hex() or "-"
    w("C %d %d %s %s@%s\n" % (kind(), co.co_firstlineno, hexed, co.co_name, co.co_filename))
    offsets = sorted(truth)
    extra = [-2] if capi else []
    if capi and not debug:
        extra.append(len(co.co_code))
    for off in extra + offsets:
        t = truth.get(off, "?")
        c = capi(co, off) if capi else "?"
        w("O %d %s %s\n" % (off, t, c))


def main():
    capi = c_addr2line()
    debug = bool(sysconfig.get_config_var("Py_DEBUG"))
    w = sys.stdout.write
    w("# linetable_dump %s %s capi=%s\n" % (sys.version.split()[0], sys.executable,
                                           "yes" if capi else "no"))
    for src, filename in sources():
        for co in walk(compile(src, filename, "exec")):
            dump_code(co, capi, debug, w)


if __name__ == "__main__":
    main()
