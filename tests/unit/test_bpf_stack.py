"""The BPF objects' chains of calls fit the verifier's 512 bytes of stack on
every kernel of the matrix, as scripts/bpf-stack adds them up (the build
runs it too; this shows that it sees the chains, and that it can fail).

Its sums were checked against a kernel's own: 5.10 refused the bounded-loop
object's on_mmap at "combined stack size of 3 calls is 544", the figure it
gives for that object (on_mmap:168 > unwind_native:52 >
native_step_chunk:264)."""
import os
import re
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from conftest import ROOT  # noqa: E402

TOOL = os.path.join(ROOT, "scripts", "bpf-stack")
OBJECTS = [os.path.join(ROOT, "build", o) for o in ("pyperf.bpf.o", "pyperf_compat.bpf.o")]


def run(*args):
    return subprocess.run([sys.executable, TOOL, *args], capture_output=True, text=True,
                          timeout=120)


@pytest.fixture(scope="module")
def objects():
    missing = [o for o in OBJECTS if not os.path.exists(o)]
    if missing:
        pytest.fail(f"{missing} not built: run make pyperf-bpf first")
    return OBJECTS


@pytest.mark.parametrize("obj", ["pyperf.bpf.o", "pyperf_compat.bpf.o"])
def test_every_programs_stack_chain_fits_512_bytes(objects, obj):
    path = os.path.join(ROOT, "build", obj)
    r = run("--all", path)
    assert r.returncode == 0, r.stderr
    chains = {}
    for line in r.stdout.splitlines():
        m = re.match(r".*: (\w+): (\d+) of 512 bytes: (.*)", line)
        assert m, line
        chains[m.group(1)] = (int(m.group(2)), m.group(3))
    # the sampler's deepest chain goes through the native walk, to its steps
    # or to the stack scan's (with bpf_loop, the callbacks handed to it
    # count: the scan's call_len_step is the deepest since it is one)
    total, chain = chains["on_sample"]
    steps = ("native_step_chunk",) if "compat" in obj else ("native_frame", "call_len_step")
    assert "unwind_native" in chain and any(s in chain for s in steps), chain
    assert 256 < total <= 512, chains["on_sample"]
    assert all(t <= 512 for t, _ in chains.values())


def test_a_chain_past_the_limit_fails_the_check(objects):
    r = run("--limit", "256", *objects)
    assert r.returncode == 1
    assert re.search(r"on_sample: \d+ bytes of stack .* over the verifier's 256: "
                     r"on_sample:\d+ > unwind_native", r.stderr), r.stderr


def test_a_file_that_is_not_a_bpf_object_is_one_line_of_error(tmp_path):
    bad = tmp_path / "bad.o"
    bad.write_bytes(b"not an ELF file")
    r = run(str(bad))
    assert r.returncode == 2
    assert r.stderr.strip().count("\n") == 0 and "not a 64-bit" in r.stderr, r.stderr


def test_a_chain_of_too_many_calls_fails_the_check(objects):
    """the verifier's other bound on a chain: 8 frames (MAX_CALL_FRAMES),
    callbacks included; the native walk's chain is at it"""
    assert run(*objects).returncode == 0
    r = run("--frames", "7", *objects)
    assert r.returncode == 1
    assert re.search(r"pyperf.bpf.o: on_sample: a chain of 8 calls, over the verifier's 7 "
                     r"frames: on_sample > unwind_native > .*native_frame", r.stderr), r.stderr
