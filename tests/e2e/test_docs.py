"""Documentation where users look: the top-level usage names every command;
a man page per command (build/man, made by `make man` from the command's
own --help with help2man) renders with man and holds every option of that
--help; the bash completion offers the commands and, per command, every
option its --help lists; `make install` puts the binary, the pages and the
completions (bash, zsh) in place."""
import os
import re
import subprocess

import pytest

from conftest import PYPERF, ROOT

COMMANDS = ["record", "dump", "top", "leaks", "daemon", "diff"]
BASH_COMPLETION = os.path.join(ROOT, "packaging", "completion", "pyperf-bpf.bash")
OPT_RE = re.compile(r"(?:^|[ ,])(--?[a-zA-Z][-a-zA-Z]*)")


def help_options(command):
    r = subprocess.run([PYPERF, command, "--help"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    # options as --help introduces them: a line starting (after blanks)
    # with "-X, --long ARG", the description after two blanks
    out = set()
    for line in r.stdout.splitlines():
        if re.match(r"^\s+-", line):
            out |= set(OPT_RE.findall(re.split(r"(?<=\S)\s{2,}", line.strip(), maxsplit=1)[0] + " "))
    return out


def test_top_level_usage_names_every_command():
    r = subprocess.run([PYPERF, "--help"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    usage = r.stdout.split("\n\n")[0]
    for c in ["dump", "top", "leaks", "daemon", "diff"]:
        assert f"pyperf-bpf {c}" in usage, usage
    assert "[record]" in usage, usage


@pytest.mark.parametrize("command", COMMANDS)
def test_each_command_has_a_man_page_that_renders(command):
    page = os.path.join(ROOT, "build", "man", f"pyperf-bpf-{command}.1")
    assert os.path.exists(page), f"{page} missing: `make man` (part of `make test`) makes it"
    r = subprocess.run(["man", "-l", "-P", "cat", page], capture_output=True, text=True,
                       env=dict(os.environ, MANWIDTH="100"))
    assert r.returncode == 0, r.stderr
    text = r.stdout.replace("\u2010", "-")  # man's hyphens
    assert re.search(rf"pyperf-bpf-{command}\s+-\s+\w", text), text[:500]
    missing = [o for o in help_options(command) if o not in text]
    assert not missing, (missing, text[:3000])


def complete(words):
    """what the bash completion offers for the command line `words` (the
    last one being completed)"""
    words = [PYPERF] + list(words[1:])
    script = (f"source {BASH_COMPLETION}; COMP_WORDS=({' '.join(repr(w) for w in words)}); "
              f"COMP_CWORD={len(words) - 1}; _pyperf_bpf; printf '%s\\n' \"${{COMPREPLY[@]}}\"")
    r = subprocess.run(["bash", "-c", script], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return set(r.stdout.split())


def test_bash_completion_is_registered_and_offers_the_commands():
    r = subprocess.run(["bash", "-c", f"source {BASH_COMPLETION}; complete -p pyperf-bpf"],
                       capture_output=True, text=True)
    assert r.returncode == 0 and "_pyperf_bpf" in r.stdout, (r.stdout, r.stderr)
    assert set(COMMANDS) <= complete(["pyperf-bpf", ""])
    assert complete(["pyperf-bpf", "d"]) == {"dump", "daemon", "diff"}
    assert complete(["pyperf-bpf", "--mode", ""]) >= {"cpu", "wall", "offcpu"}


@pytest.mark.parametrize("command", COMMANDS)
def test_bash_completion_offers_every_option_of_the_command(command):
    words = ["pyperf-bpf"] + ([] if command == "record" else [command]) + ["-"]
    offered = complete(words)
    missing = help_options(command) - offered
    assert not missing, (missing, sorted(offered))


def test_make_install_puts_pages_and_completions_in_place(tmp_path):
    r = subprocess.run(["make", "-s", "install", f"DESTDIR={tmp_path}", "PREFIX=/usr"], cwd=ROOT,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    want = ["usr/bin/pyperf-bpf", "usr/share/man/man1/pyperf-bpf.1",
            "usr/share/bash-completion/completions/pyperf-bpf",
            "usr/share/zsh/vendor-completions/_pyperf-bpf"]
    want += [f"usr/share/man/man1/pyperf-bpf-{c}.1" for c in COMMANDS]
    for path in want:
        assert (tmp_path / path).is_file(), path
