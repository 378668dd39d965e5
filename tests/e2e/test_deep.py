"""Deep recursion: 600 frames are complete down to <module>; a stack deeper
than the sampler keeps (1024 frames) keeps its leaf end and is marked
[truncated] at the root side; merged with native frames, stacks 150 and 500
Python frames deep are whole."""
import os

from conftest import (NATIVE_MARKS, PENDING, WORKLOADS, all_names, count_pending, names,
                      parse_folded, py_leaf, run_pyperf, supported_pythons)


def profile_deep(path, depth, tmp_path):
    out = tmp_path / f"d{depth}.folded"
    r = run_pyperf(["-F", "199", "-o", str(out), "--", path,
                    os.path.join(WORKLOADS, "deep.py"), str(depth), "1.5"])
    assert r.returncode == 0, r.stderr
    spins = [(names(f), c) for f, c in parse_folded(out.read_text()) if py_leaf(f) == "spin"]
    assert sum(c for _, c in spins) > 50, r.stderr
    return spins


@supported_pythons()
def test_600_frames_complete(python, tmp_path):
    for fn, count in profile_deep(python[0], 600, tmp_path):
        assert fn[0] == "<module>" and fn[1] == "main", fn[:3]
        assert fn.count("recurse") == 600
        assert "[truncated]" not in fn


@supported_pythons()
def test_deeper_than_limit_marked_truncated(python, tmp_path):
    for fn, count in profile_deep(python[0], 1500, tmp_path):
        assert fn[0] == "[truncated]", fn[:3]
        assert "<module>" not in fn
        assert len(fn) == 1 + 1024 and fn[-1] == "spin" and fn[-2] == "recurse"


@supported_pythons()
def test_merged_stacks_complete_at_depth_150_and_500(python, tmp_path):
    """With native frames merged (about three per Python call up to 3.10),
    deep stacks stay whole: every Python frame, the interpreter's start-up
    frames at the root, no native marker."""
    for depth in (150, 500):
        out = tmp_path / f"m{depth}.folded"
        r = run_pyperf(["-F", "199", "-o", str(out), "--", python[0],
                        os.path.join(WORKLOADS, "deep.py"), str(depth), "1"])
        assert r.returncode == 0, r.stderr
        spins = [(f, c) for f, c in parse_folded(out.read_text()) if py_leaf(f) == "spin"]
        assert sum(c for _, c in spins) > 30, r.stderr
        # the first samples may come before the interpreter's table is built
        assert count_pending(spins) <= 0.2 * sum(c for _, c in spins), spins[:1]
        for frames, _ in spins:
            if PENDING in frames:
                continue
            fn = all_names(frames)
            assert not any(m in fn for m in NATIVE_MARKS + ("[truncated]", "[incomplete]")), \
                (depth, [m for m in fn if m.startswith("[")])
            assert names(frames).count("recurse") == depth
            assert "Py_BytesMain" in fn[:fn.index("<module>")], fn[:12]
