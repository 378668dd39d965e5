"""The suite must not pass vacuously: at least one supported CPython must exist."""
from conftest import SUPPORTED, UNSUPPORTED


def test_a_supported_cpython_is_present():
    assert SUPPORTED, "no CPython 3.8+ found: the end-to-end tests cannot run"


def test_report_interpreters_found():
    # Printed with -ra / -s for the log; always true once the one above passes.
    print("supported:", SUPPORTED, "unsupported:", UNSUPPORTED)
    assert all(v >= (3, 8) for _, v in SUPPORTED)
