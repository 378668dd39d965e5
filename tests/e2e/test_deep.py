"""Deep recursion: 600 frames are complete down to <module>; a stack deeper
than the sampler keeps (1024 frames) keeps its leaf end and is marked
[truncated] at the root side."""
import os

from conftest import WORKLOADS, names, parse_folded, run_pyperf, supported_pythons, py_leaf


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
