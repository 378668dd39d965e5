"""The report is about the user's code: in a merged recording the native
frames that only call into the outermost Python frame (the interpreter's
start-up chain, _start ... PyEval_EvalCode) are left out of its tables, so
each table opens with a function of the workload; --startup-frames keeps
them, and the folded output always has them.  One interpreter with
symbols (the newest pyenv one): the chain's names do not depend on the
version."""
import re

from conftest import SUPPORTED, func_name, record_workload

ROW_RE = re.compile(r"^\s+[\d.]+%\s+([\d.]+)%\s+\S+\s+\S+\s+(.*)$")
CHAIN = ("_start", "Py_BytesMain", "Py_RunMain", "PyEval_EvalCode")


def tables(text):
    """{title: [(function label, %total) in order]} of the report's tables"""
    out, title = {}, None
    for line in text.splitlines():
        if line.startswith("Top functions by"):
            title = line
            out[title] = []
        elif title and ROW_RE.match(line):
            m = ROW_RE.match(line)
            out[title].append((m.group(2), float(m.group(1))))
        elif not line.strip():
            title = None
    return out


def newest_pyenv():
    return [p for p in SUPPORTED if "/.pyenv/" in p[0]][-1][0]


# bytecode only, no allocation: its own time is its own, not the allocator's
LOOP = """import itertools, time
def spin(seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for _ in itertools.repeat(None, 20000):
            pass
def main():
    spin(1.5)
main()
"""


def test_report_tables_open_with_the_workloads_functions(tmp_path):
    py = newest_pyenv()
    script = tmp_path / "loop.py"
    script.write_text(LOOP)
    stacks, (report,), r = record_workload(py, tmp_path, str(script), hz=499, also=(".txt",))
    t = tables(report.read_text())
    assert len(t) == 2, report.read_text()
    workload = ("spin", "main", "<module>")
    for title, rows in t.items():
        assert rows and func_name(rows[0][0]) in workload, (title, rows[:5])
        # what is left of the chain: samples of the interpreter's start-up,
        # before any Python frame ran (all 99 % of the samples before)
        assert all(total < 20 for label, total in rows if func_name(label) in CHAIN), rows
    # the flame graph's input keeps the chain
    assert any("Py_BytesMain" in map(func_name, f) for f, _ in stacks)
    _, (report,), _ = record_workload(py, tmp_path, str(script), hz=499, also=(".txt",),
                                      extra=["--startup-frames"])
    total = tables(report.read_text())["Top functions by total time"]
    assert any(func_name(label) == "Py_BytesMain" and share > 90 for label, share in total), total
