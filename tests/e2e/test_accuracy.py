"""A workload that measures its own CPU split between three leaf functions is
profiled from its first frame (`-- python split.py`); the profile must agree
with the workload's own measurement within 3 percentage points, and almost
every leaf sample must carry the full chain of callers."""
import ast
import json
import os

from conftest import (SUPPORTED, is_python, names, parse_folded, py_leaf, run_pyperf,
                      supported_pythons, WORKLOADS)


def python_leaf(frames):
    return [f for f in frames if is_python(f)][-1]

LEAVES = ("leaf_a", "leaf_b", "leaf_c")
CHAIN = ["<module>", "main", "run_schedule"]


@supported_pythons()
def test_known_split_matches_workload_measurement(python, tmp_path):
    path, _ = python
    out, truth = tmp_path / "p.folded", tmp_path / "truth.json"
    r = run_pyperf(["-F", "999", "-o", str(out), "--", path,
                    os.path.join(WORKLOADS, "split.py"), "4", str(truth)])
    assert r.returncode == 0, r.stderr
    measured = json.loads(truth.read_text())
    stacks = parse_folded(out.read_text())

    per_leaf = dict.fromkeys(LEAVES, 0)
    full_chain = dict.fromkeys(LEAVES, 0)
    for frames, count in stacks:
        fn = names(frames)
        if fn and fn[-1] in per_leaf:
            per_leaf[fn[-1]] += count
            if fn[:-1] == CHAIN:
                full_chain[fn[-1]] += count

    total = sum(per_leaf.values())
    assert total > 1000, f"too few leaf samples: {per_leaf}\n{r.stderr}"
    mtotal = sum(measured.values())
    for leaf in LEAVES:
        got = 100.0 * per_leaf[leaf] / total
        want = 100.0 * measured[leaf] / mtotal
        assert abs(got - want) <= 3.0, f"{leaf}: profile {got:.1f}% vs measured {want:.1f}%"
        assert full_chain[leaf] >= 0.95 * per_leaf[leaf], \
            f"{leaf}: only {full_chain[leaf]} of {per_leaf[leaf]} samples have {CHAIN}"


@supported_pythons()
def test_lines_point_into_the_leaf_function(python, tmp_path):
    """With lines on, leaf frames name split.py lines inside the leaf bodies;
    with --no-lines the same frames collapse to one per function."""
    path, _ = python
    # every line of the leaf functions, def line included: a frame that has not
    # run its first instruction yet reports co_firstlineno, as CPython does
    tree = ast.parse(open(os.path.join(WORKLOADS, "split.py")).read())
    leaf_lines = {line for node in tree.body
                  if isinstance(node, ast.FunctionDef) and node.name in LEAVES
                  for line in range(node.lineno, node.end_lineno + 1)}
    out, truth = tmp_path / "p.folded", tmp_path / "truth.json"
    r = run_pyperf(["-F", "499", "-o", str(out), "--", path,
                    os.path.join(WORKLOADS, "split.py"), "1.5", str(truth)])
    assert r.returncode == 0, r.stderr
    leaf_frames = [python_leaf(frames) for frames, _ in parse_folded(out.read_text())
                   if py_leaf(frames) in LEAVES]
    assert leaf_frames
    lines = {int(f.rsplit(":", 1)[1].rstrip(")")) for f in leaf_frames}
    assert lines <= leaf_lines, f"leaf lines {lines} not within {leaf_lines}"

    out2 = tmp_path / "n.folded"
    r = run_pyperf(["-F", "499", "--no-lines", "-o", str(out2), "--", path,
                    os.path.join(WORKLOADS, "split.py"), "1", str(truth)])
    assert r.returncode == 0, r.stderr
    leafs = [python_leaf(frames) for frames, _ in parse_folded(out2.read_text())
             if py_leaf(frames) in LEAVES]
    assert leafs and all(f.endswith("split.py)") for f in leafs), leafs[:3]
    assert len(set(leafs)) <= 3


def test_function_is_py_spy_s_name_for_no_lines(tmp_path):
    """py-spy's --function (one frame per function) is our --no-lines; the
    top-level usage lists every command and says that record never stops a
    process (py-spy's --nonblocking) and what py-spy's --idle is here."""
    out = tmp_path / "f.folded"
    r = run_pyperf(["-F", "499", "--function", "-o", str(out), "--", SUPPORTED[-1][0],
                    os.path.join(WORKLOADS, "split.py"), "1", str(tmp_path / "truth.json")])
    assert r.returncode == 0, r.stderr
    leafs = [python_leaf(frames) for frames, _ in parse_folded(out.read_text())
             if py_leaf(frames) in LEAVES]
    assert leafs and all(f.endswith("split.py)") for f in leafs), leafs[:3]
    usage = run_pyperf(["--help"]).stdout
    for cmd in ("dump", "top", "leaks", "daemon"):
        assert f"pyperf-bpf {cmd} " in usage, cmd
    assert "--nonblocking" in usage and "--idle is --mode wall" in usage.replace("\n", " ")


@supported_pythons()
def test_the_init_shim_frame_is_left_out(python, tmp_path):
    """A class whose __init__ is Python code, constructed in a loop: on
    3.13+ CPython runs __init__ above its _Py_InitCleanup shim frame (a code
    object named "__init__" in file "__init__"), which tracebacks do not
    show; the profile shows build() calling Point.__init__, merged."""
    out = tmp_path / "p.folded"
    r = run_pyperf(["-F", "499", "-o", str(out), "--", python[0],
                    os.path.join(WORKLOADS, "initshim.py"), "1"])
    assert r.returncode == 0, r.stderr
    stacks = parse_folded(out.read_text())
    assert not [f for f, _ in stacks if any(x.startswith("__init__ (__init__") for x in f)]
    init = [(f, c) for f, c in stacks if names(f)[-1:] == ["Point.__init__"]
            or names(f)[-1:] == ["__init__"]]
    total = sum(c for _, c in init)
    assert total > 200, r.stderr
    whole = sum(c for f, c in init if names(f)[-3:-1] == ["<module>", "build"]
                and not any(x.startswith("[unmerged") for x in f))
    assert whole >= 0.95 * total, (whole, total, init[:1])
