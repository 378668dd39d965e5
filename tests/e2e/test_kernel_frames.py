"""Samples taken in the kernel carry the kernel stack at the leaf end, each
frame NAME_[k]; --no-kernel and --python-only leave them out."""
import os

import pytest

from conftest import (is_kernel, names, parse_folded, py_leaf, run_pyperf, SUPPORTED, supported_pythons,
                      WORKLOADS)


def profile(python, tmp_path, *extra):
    out = tmp_path / "k.folded"
    r = run_pyperf(["-F", "499", "-o", str(out), *extra, "--", python,
                    os.path.join(WORKLOADS, "syscalls.py"), "1.5"])
    assert r.returncode == 0, r.stderr
    return parse_folded(out.read_text())


@supported_pythons()
def test_syscall_heavy_workload_shows_kernel_frames_at_leaf(python, tmp_path):
    stacks = profile(python[0], tmp_path)
    mine = [(f, c) for f, c in stacks if "read_random" in names(f)]
    total = sum(c for _, c in mine)
    # threads' Python stacks (not the native-only ones of start-up and exit)
    in_kernel = [(f, c) for f, c in mine if is_kernel(f[-1]) and py_leaf(f)]
    assert total > 200
    assert sum(c for _, c in in_kernel) > 0.5 * total, "most time should be in read(2)"
    for frames, _ in in_kernel:
        first_k = next(i for i, f in enumerate(frames) if is_kernel(f))
        # Python frames root side, then only kernel frames down to the leaf
        assert all(is_kernel(f) for f in frames[first_k:]), frames
        assert py_leaf(frames) == "read_random"
    assert any("vfs_read_[k]" in f or "ksys_read_[k]" in f for fr, _ in in_kernel for f in fr)


def kallsyms_text():
    with open("/proc/kallsyms") as f:
        return {p[2] for p in (line.split() for line in f) if len(p) >= 3 and p[1] in "tTwW"}


def test_kernel_frames_are_named_by_the_kernels_symbols(tmp_path):
    """Kernel frames are named by the kernel's own lookup (a BPF program
    run by the loader), not from /proc/kallsyms: every name must still be a
    text symbol there, none unnamed, and a read(2) shows its whole chain."""
    assert SUPPORTED, "no supported CPython"
    stacks = profile(SUPPORTED[-1][0], tmp_path)
    kernel = {f[:-len("_[k]")] for frames, _ in stacks for f in frames if is_kernel(f)}
    assert len(kernel) >= 5, kernel
    assert "[unknown]" not in kernel
    # a sample may land in one of our own BPF programs (on_exit, as the
    # workload's threads end): the kernel names it bpf_prog_TAG_NAME, and it
    # has left kallsyms with the profiler by the time this reads it
    kernel = {k for k in kernel if not k.startswith("bpf_prog_")}
    assert kernel <= kallsyms_text(), kernel - kallsyms_text()
    chain = ["do_syscall_64", "ksys_read", "vfs_read"]
    assert any([f[:-4] for f in frames if f[:-4] in chain] == chain
               for frames, _ in stacks), "no read(2) chain"


@pytest.mark.parametrize("flag", ["--no-kernel", "--python-only"])
def test_kernel_frames_can_be_left_out(flag, tmp_path):
    assert SUPPORTED, "no supported CPython"
    stacks = profile(SUPPORTED[-1][0], tmp_path, flag)
    assert sum(c for f, c in stacks if "read_random" in names(f)) > 200
    assert not any(is_kernel(f) for frames, _ in stacks for f in frames)
