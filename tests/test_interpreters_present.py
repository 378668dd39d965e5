"""The suite must not pass vacuously: at least one supported CPython must
exist, and every interpreter found where the suite looks must run."""
from conftest import SUPPORTED, UNSUPPORTED, _candidates, _describe


def test_a_supported_cpython_is_present():
    assert SUPPORTED, "no CPython 3.8+ found: the end-to-end tests cannot run"


def test_every_interpreter_found_runs():
    """An interpreter the suite finds but cannot run (a broken pyenv build, a
    sid interpreter whose libraries moved) would silently drop out of every
    parametrized test: it fails here instead."""
    print("supported:", SUPPORTED, "unsupported:", UNSUPPORTED)
    broken = [p for p in _candidates() if _describe(p) is None]
    assert not broken, f"found but not runnable as CPython: {broken}"
    assert len(SUPPORTED) + len(UNSUPPORTED) == len(_candidates())
