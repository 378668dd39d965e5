"""Values of every kind in one frame's locals, for dump --locals: the values
of py-spy's own local_vars scenario (its integration test's expectations),
then containers of each kind, empty, nested, holding themselves and too
long (or too deep) to show whole; numpy scalars where
numpy imports.  The frame writes what Python shows of each (repr(); str()
of a numpy scalar, whose repr changed in numpy 2) to RESULT.json, prints
"ready" and sleeps.
Usage: local_vars.py RESULT.json"""
import json
import sys
import time

try:
    import numpy as np
except ImportError:
    np = None


def shown(value):
    if np is not None and isinstance(value, np.generic):
        return str(value)
    return repr(value)


def local_variable_lookup(arg1="foo", arg2=None, arg3=True):
    local1 = [-1234, 5678]
    local2 = ("a", "b", "c")
    local3 = 123456789123456789
    local4 = 3.1415
    local5 = {"a": False, "b": (1, 2, 3)}
    local6 = ("-" * 115, {"key": {"key": {"key": "value"}}})
    local25 = "测试1" * 500
    local26 = ""
    one = (1,)
    small_set = {1, 2, 3}
    small_frozen = frozenset({"x"})
    empty_set, empty_frozen, empty_list, empty_tuple, empty_dict = set(), frozenset(), [], (), {}
    holds_itself = [1]
    holds_itself.append(holds_itself)
    dict_holds_itself = {}
    dict_holds_itself["me"] = dict_holds_itself
    deep = [[[[[[[[1]]]]]]]]
    too_deep = [1]
    for _ in range(70):
        too_deep = [too_deep]
    too_long = list(range(100))
    nested = {"k%d" % i: [i, str(i), {i}] for i in range(3)}
    big_dict = {i: i for i in range(2000)}
    after_delete = dict(a=1, b=2)
    del after_delete["a"]
    set_after_discard = set(range(20))
    set_after_discard.discard(3)
    quotes = ["it's", 'say "hi"', b"\x00\xff"]
    if np is not None:
        np_bool, np_int8, np_int16 = np.bool_(True), np.int8(3), np.int16(42)
        np_int32, np_int64, np_uint8 = np.int32(43), np.int64(-44), np.uint8(45)
        np_uint16, np_uint32, np_uint64 = np.uint16(46), np.uint32(7), np.uint64(2 ** 63 + 5)
        np_ulonglong, np_float32, np_float64 = np.ulonglong(11), np.float32(0.3), np.float64(0.7)
    truth = {name: shown(value) for name, value in locals().items()}
    with open(sys.argv[1], "w") as f:
        json.dump(truth, f)
    print("ready", flush=True)
    time.sleep(1000)


if __name__ == "__main__":
    local_variable_lookup()
