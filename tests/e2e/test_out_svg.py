"""The flame graph SVG: well-formed XML with the folded output's frames and
totals, icicle layout, and interactive in a real browser: headless Chromium,
driven over the W3C WebDriver protocol (chromedriver), finds a function with
the search and shows its share, zooms on a click and resets."""
import json
import shutil
import socket
import subprocess
import time
import urllib.request
import xml.etree.ElementTree as ET

import pytest

from conftest import SUPPORTED, record_workload

SVG_NS = "{http://www.w3.org/2000/svg}"
ELEMENT = "element-6066-11e4-a52e-4f735466cecf"


def record(tmp_path, *extra):
    assert SUPPORTED, "no supported CPython"
    stacks, (svg,), _ = record_workload(SUPPORTED[-1][0], tmp_path, "split.py", "2",
                                        str(tmp_path / "t.json"), hz=499, also=[".svg"],
                                        extra=extra)
    return stacks, svg


def frames_of(svg):
    root = ET.parse(svg).getroot()             # well-formed XML, or this raises
    return [g for g in root.iter(SVG_NS + "g") if g.get("class") == "f"]


def test_svg_holds_the_folded_frames_and_totals(tmp_path):
    folded, svg = record(tmp_path)
    gs = frames_of(svg)
    total = sum(c for _, c in folded)
    root = [g for g in gs if g.get("data-depth") == "0"]
    assert len(root) == 1 and root[0].get("data-name") == "all"
    assert int(root[0].get("data-samples")) == total > 500
    # every frame with at least 1 % of the samples is drawn, with its exact count
    per_path = {}
    for stack, count in folded:
        for i in range(len(stack)):
            per_path[tuple(stack[:i + 1])] = per_path.get(tuple(stack[:i + 1]), 0) + count
    drawn = {}
    for g in gs:
        key = (int(g.get("data-depth")), g.get("data-name"), int(g.get("data-x")))
        drawn[key] = int(g.get("data-samples"))
    for path, count in per_path.items():
        if count >= total / 100:
            assert any(k[0] == len(path) and k[1] == path[-1] and v == count
                       for k, v in drawn.items()), path
    kinds = {g.get("data-kind") for g in gs}
    assert {"python", "native", "mark"} <= kinds, kinds
    title = next(ET.parse(svg).getroot().iter(SVG_NS + "text")).text
    assert "split.py" in title


def test_icicle_puts_the_root_on_top(tmp_path):
    _, svg = record(tmp_path, "--icicle")
    gs = frames_of(svg)
    y = {int(g.get("data-depth")): float(g.find(SVG_NS + "rect").get("y")) for g in gs}
    assert y[0] < y[1] < y[5]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class WebDriver:
    """Just enough of the W3C WebDriver protocol."""

    def __init__(self, port):
        self.base = f"http://127.0.0.1:{port}"
        caps = {"capabilities": {"alwaysMatch": {"browserName": "chrome", "goog:chromeOptions": {
            "binary": shutil.which("chromium"),
            "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1400,1000"]}}}}
        self.sid = self.call("POST", "/session", caps)["sessionId"]

    def call(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.base + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=60) as r:
            return json.loads(r.read())["value"]

    def s(self, method, path, body=None):
        return self.call(method, f"/session/{self.sid}{path}", body)

    def js(self, script, *args):
        return self.s("POST", "/execute/sync", {"script": script, "args": list(args)})

    def find(self, css):
        return self.s("POST", "/element", {"using": "css selector", "value": css})[ELEMENT]

    def click(self, css):
        self.s("POST", f"/element/{self.find(css)}/click", {})

    def hover(self, css):
        self.s("POST", "/actions", {"actions": [{"type": "pointer", "id": "mouse", "actions": [
            {"type": "pointerMove", "duration": 0, "origin": {ELEMENT: self.find(css)}, "x": 0, "y": 0}]}]})

    def quit(self):
        self.s("DELETE", "")


@pytest.fixture
def browser():
    for tool in ("chromium", "chromedriver"):
        if not shutil.which(tool):
            pytest.fail(f"{tool} is missing: scripts/setup --test-deps installs Debian's "
                        "chromium and chromium-driver")
    port = free_port()
    drv = subprocess.Popen(["chromedriver", f"--port={port}"], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    wd = None
    try:
        for _ in range(100):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/status", timeout=2)
                break
            except OSError:
                time.sleep(0.1)
        wd = WebDriver(port)
        yield wd
    finally:
        if wd:
            try:
                wd.quit()
            except OSError:
                pass
        drv.terminate()
        drv.wait(timeout=30)


def test_svg_search_zoom_and_reset_in_chromium(tmp_path, browser):
    folded, svg = record(tmp_path)
    total = sum(c for _, c in folded)
    with_a = sum(c for stack, c in folded if any("leaf_a" in f for f in stack))
    browser.s("POST", "/url", {"url": f"file://{svg}#s=leaf_a"})
    # the search from the URL ran: frames highlighted, the share shown
    share = float(browser.js("return document.getElementById('matched').getAttribute('data-share')"))
    assert abs(share - 100.0 * with_a / total) < 0.01, (share, with_a, total)
    assert browser.js("return document.getElementById('matched').textContent").startswith("Matched: ")
    hits = browser.js("return Array.from(document.querySelectorAll('g.f[data-match=\"1\"]'))"
                      ".map(g => g.getAttribute('data-name'))")
    assert hits and all("leaf_a" in h for h in hits)
    # and from the page's search function
    assert browser.js("return search('leaf_c')") == sum(c for s, c in folded if any("leaf_c" in f for f in s))
    # and from the Search control, which asks with a prompt
    browser.click("#search")
    browser.s("POST", "/alert/text", {"text": "run_schedule"})
    browser.s("POST", "/alert/accept", {})
    share = float(browser.js("return document.getElementById('matched').getAttribute('data-share')"))
    in_rs = sum(c for s, c in folded if any("run_schedule" in f for f in s))
    assert abs(share - 100.0 * in_rs / total) < 0.01

    # hover: the details line
    browser.js("""var v = Array.from(document.querySelectorAll('g.f'))
        .filter(g => g.getAttribute('data-name').startsWith('leaf_b'));
        v.sort((a, b) => b.getAttribute('data-samples') - a.getAttribute('data-samples'));
        v[0].id = 'target'; return v.length""")
    browser.hover("#target rect")
    assert browser.js("return document.getElementById('details').textContent").startswith("leaf_b")

    # click: the frame spans the width, a frame beside it is hidden
    before = float(browser.js("return document.querySelector('#target rect').getAttribute('width')"))
    browser.click("#target rect")
    after = float(browser.js("return document.querySelector('#target rect').getAttribute('width')"))
    assert before < 1000 and after == pytest.approx(1180, abs=0.5), (before, after)
    hidden = browser.js("return Array.from(document.querySelectorAll('g.f'))"
                        ".filter(g => g.getAttribute('data-name').startsWith('leaf_a'))"
                        ".map(g => getComputedStyle(g).display)")
    assert hidden and all(d == "none" for d in hidden), hidden
    root = browser.js("return getComputedStyle(document.querySelector('g.f[data-depth=\"0\"]')).display")
    assert root != "none"                        # ancestors stay
    browser.click("#unzoom")
    again = float(browser.js("return document.querySelector('#target rect').getAttribute('width')"))
    assert again == pytest.approx(before, abs=0.01)
    assert browser.js("return Array.from(document.querySelectorAll('g.f'))"
                      ".every(g => getComputedStyle(g).display != 'none')")


@pytest.mark.parametrize("icicle", [False, True], ids=["flame", "icicle"])
def test_svg_first_screen_shows_the_root(tmp_path, browser, icicle):
    """a graph taller than the window (a 120-frame recursion) opens with its
    root in view: a flame graph scrolled to its bottom, an icicle at its top;
    and the image is no taller than what is drawn (no empty band)"""
    stacks, (svg,), _ = record_workload(SUPPORTED[-1][0], tmp_path, "deep.py", "120", "1.5",
                                        hz=499, also=[".svg"],
                                        extra=["--icicle"] if icicle else [])
    frames = frames_of(svg)
    root_el = ET.parse(svg).getroot()
    height = float(root_el.get("height"))
    ys = [float(g.find(SVG_NS + "rect").get("y")) for g in frames]
    # drawn frames reach within two rows of each end of the frame area
    assert min(ys) < 100 and max(ys) > height - 100, (min(ys), max(ys), height)
    browser.s("POST", "/window/rect", {"width": 1200, "height": 600})
    browser.s("POST", "/url", {"url": f"file://{svg}"})
    box = browser.js("var r = document.querySelector('g.f[data-depth=\"0\"] rect')"
                     ".getBoundingClientRect(); return [r.top, r.bottom, window.innerHeight]")
    top, bottom, inner = box
    assert height > inner, (height, inner)       # taller than the window
    assert 0 <= top and bottom <= inner, box     # and its root in view
