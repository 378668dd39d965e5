"""Merged stacks on a PyTorch CPU training job (Debian's python3-torch under
/usr/bin/python3.11, the interpreter it is built for; the behaviour under
test is the unwinder's, not the Python version's): DataLoader worker
processes profiled, ATen/libtorch frames between train_step and the leaf,
the intra-op pool's threads present with native frames, and few stacks cut
short.  libtorch_cpu's table (1.4 million rows) is built when a sample first
lands in it, so a share of early samples end in [native pending]; they are
bounded apart from real cuts."""
import glob
import os
import subprocess

import pytest

from conftest import PENDING, WORKLOADS, all_names, count_pending, parse_folded, run_pyperf

PY = "/usr/bin/python3.11"
CUT = ("[native incomplete]", "[native truncated]")


def torch_python():
    if not os.access(PY, os.X_OK):
        pytest.fail(f"{PY} is missing (scripts/setup --test-deps installs Debian's python3-torch for it)")
    r = subprocess.run([PY, "-c", "import torch"], capture_output=True, text=True)
    if r.returncode:
        pytest.fail("python3-torch is missing: scripts/setup --test-deps installs it\n" + r.stderr)
    return PY


@pytest.fixture(scope="module")
def training(tmp_path_factory):
    py = torch_python()
    tmp = tmp_path_factory.mktemp("torch")
    out = tmp / "t.folded"
    # "jit": oneDNN's convolutions on, as PyTorch has them by default;
    # ONEDNN_JIT_PROFILE=4: oneDNN lists its kernels in a jitdump file,
    # $JITDUMPDIR/.debug/jit/dnnl.XXXXXX/jit-PID.dump, and in no perf map
    # (2 would write /tmp/perf-PID.map, which CPython's -X perf tests cover)
    r = run_pyperf(["-F", "499", "--threads", "-o", str(out), "--", py,
                    os.path.join(WORKLOADS, "torch_train.py"), "6", "jit"], timeout=180,
                   env=dict(os.environ, ONEDNN_JIT_PROFILE="4", JITDUMPDIR=str(tmp)))
    assert r.returncode == 0, r.stderr
    assert glob.glob(str(tmp / ".debug" / "jit" / "dnnl.*" / "jit-*.dump")), \
        "oneDNN wrote no jitdump file"
    return parse_folded(out.read_text()), r


def test_few_stacks_cut_short(training):
    stacks, r = training
    total = sum(c for _, c in stacks)
    cut = sum(c for f, c in stacks if any(m in f for m in CUT))
    assert total > 2000, r.stderr
    # oneDNN's JIT kernels have neither CFI nor frame pointers: their
    # callers are found by a scan of the stack
    assert cut <= 0.02 * total, f"{cut} of {total} stacks cut short"
    assert count_pending(stacks) <= 0.1 * total, f"{count_pending(stacks)} of {total} pending"


def test_aten_frames_under_the_training_step(training):
    stacks, _ = training
    step = under = 0
    for frames, count in stacks:
        fn = all_names(frames)
        if "train_step" not in fn or PENDING in frames:
            continue
        step += count
        below = frames[fn.index("train_step") + 1:]
        if any("(libtorch_cpu.so" in f for f in below):
            under += count
    assert step > 500, step
    assert under >= 0.5 * step, f"{under} of {step} train_step samples reach libtorch_cpu"
    # named and demangled where the library exports a name
    assert any("at::" in f or "c10::" in f for fs, _ in stacks for f in fs)


def test_worker_processes_and_pool_threads(training):
    stacks, _ = training
    procs = {f[0].split()[1] for f, _ in stacks if f[0].startswith("process ")}
    assert len(procs) >= 3, procs  # the trainer and its two DataLoader workers
    workers = {f[0] for f, _ in stacks
               if any("_worker_loop" in x for x in all_names(f))}
    assert len(workers) >= 2, workers
    # threads without Python frames: the intra-op pool (OpenMP) runs ATen
    native_only = [(f, c) for f, c in stacks
                   if not any(x.startswith("<module>") or x.startswith("_bootstrap")
                              for x in all_names(f))
                   and any("(libgomp" in x for x in f) and any("(libtorch_cpu.so" in x for x in f)]
    assert sum(c for _, c in native_only) > 50, native_only[:1]


def test_onednn_jit_kernels_are_named_and_left(training):
    """oneDNN compiles its convolution kernels into anonymous executable
    memory, with neither CFI nor frame pointers: they are named from the
    jitdump file oneDNN writes when asked (ONEDNN_JIT_PROFILE=4), e.g.
    "jit_avx512_common_conv_fwd_kernel ([jit])", and the scan of the stack
    finds their callers: Conv2d's forward (and the backward pass) above
    them in the main thread, the OpenMP pool's threads' own native frames
    (libgomp, oneDNN) below them."""
    stacks, _ = training
    jit = [(f, c) for f, c in stacks if any(x.endswith(" ([jit])") for x in f)]
    assert sum(c for _, c in jit) > 50, "no named JIT frames"
    named = sum(c for f, c in jit if any("kernel" in x for x in f if x.endswith(" ([jit])")))
    assert named >= 0.8 * sum(c for _, c in jit), named
    # (code mapped since the loader last read the mappings is pending)
    unknown = [f for f, _ in stacks if "[unknown]" in f and PENDING not in f]
    assert not unknown, unknown[:1]
    # the kernel is the leaf end; what the scan found is marked, then named
    scanned = [(f, c) for f, c in jit if "[stack scan]" in f]
    assert sum(c for _, c in scanned) >= 0.8 * sum(c for _, c in jit), scanned[:1]
    conv = sum(c for f, c in scanned if "Conv2d._conv_forward" in all_names(f))
    assert conv > 10, conv
    pool = [(f, c) for f, c in scanned if not any(x.startswith("<module>") for x in all_names(f))
            and any("(libgomp" in x for x in f) and any("(libdnnl" in x for x in f)]
    assert sum(c for _, c in pool) > 20, pool[:1]
