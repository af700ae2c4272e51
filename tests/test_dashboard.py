"""The static dashboard: its data, and the page itself opened from file:// in a real headless Chromium."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import Any, Iterator

import pytest

from synth_runs import REAL_AA, synth_run, with_case
from wfbench_core.dashboard import build_data, build_site
from wfbench_core.history import History, add_run
from wfbench_core.results import RunResult, load_result
from wfbench_core.stats import geomean

H100 = "NVIDIA H100 80GB HBM3"
NEWEST = 6  # the newest H200 paired run


def make_history(root: Path) -> dict[str, RunResult]:
    """Seven H200 runs closing the gap (one with a noisy case), two H100 runs, one real A/A run."""
    runs = {}
    for n in range(NEWEST + 1):
        jitter: Any = {"scale_i64": 0.08} if n == 3 else 0.0005
        runs[f"h200-{n}"] = synth_run(n, wf_scale={"axpy_f64": 1.12 - 0.02 * n, "scale_i64": 1.10 - 0.015 * n},
                                      jitter=jitter)
    for n in (1, 2):
        runs[f"h100-{n}"] = synth_run(n, wf_scale=1.3, gpu_name=H100, gpu_uuid="GPU-h100", compute_capability="9.0")
    runs["aa"] = load_result(REAL_AA)
    for run in runs.values():
        add_run(root, run)
    return runs


def expected_headline(run: RunResult) -> float:
    return geomean([c.timing.gap for c in run.cases if c.priority == "P0" and c.status == "ok"])


def test_data_keeps_platforms_and_series_apart(tmp_path: Path) -> None:
    runs = make_history(tmp_path)
    h = History.open(tmp_path)
    data = build_data(h)
    assert [(p["gpu"], p["mode"]) for p in data["platforms"]] == [("NVIDIA H200", "paired"), (H100, "paired"),
                                                                  ("NVIDIA H200", "aa")]
    h200 = data["platforms"][0]
    assert h200["latest"]["geomean"] == pytest.approx(expected_headline(runs[f"h200-{NEWEST}"]), rel=1e-12)
    assert h200["latest"]["commit"] == runs[f"h200-{NEWEST}"].source.git_commit
    assert h200["latest"]["commit_url"].endswith("/commit/" + runs[f"h200-{NEWEST}"].source.git_commit)
    assert {s["id"] for s in data["series"]} == set(h.series)
    for s in data["series"]:
        key = h.series[s["id"]].key
        assert [p["run"] for p in s["points"]] == [p.run for p in h.series[s["id"]].points]
        assert dict(s["signature"])["GPU"].startswith(key.gpu_name)
    unstable = [p for s in data["series"] for p in s["points"] if p["status"] == "unstable"]
    assert len(unstable) == 1


def test_headline_leaves_out_unstable_and_p1_cases(tmp_path: Path) -> None:
    run = with_case(synth_run(0, jitter={"scale_i64": 0.08}), "axpy_f64", priority="P1")
    add_run(tmp_path, synth_run(-1))
    add_run(tmp_path, run)
    latest = build_data(History.open(tmp_path))["platforms"][0]["latest"]
    assert latest["geomean"] is None and latest["geomean_cases"] == 0
    assert {c["case"]: c["status"] for c in latest["cases"]} == {"axpy_f64": "ok", "scale_i64": "unstable"}


def test_embedded_data_cannot_break_out_of_its_script(tmp_path: Path) -> None:
    import attrs

    run = synth_run(0)
    run = attrs.evolve(run, source=attrs.evolve(run.source, git_commit="</script><script>alert(1)</script>"))
    add_run(tmp_path / "h", run)
    index = build_site(History.open(tmp_path / "h"), tmp_path / "site")
    page = index.read_text()
    assert page.count("</script>") == 3  # the data, chart.umd.js and app.js: nothing injected
    blob = re.search(r'<script id="wfbench-data" type="application/json">(.*?)</script>', page, re.S)
    assert blob is not None
    assert json.loads(blob.group(1))["series"][0]["points"][0]["commit"] == run.source.git_commit
    for asset in ("chart.umd.js", "LICENSE-chart.js.md", "app.js", "style.css"):
        assert (tmp_path / "site" / asset).stat().st_size > 0
    assert "MIT" in (tmp_path / "site" / "LICENSE-chart.js.md").read_text()


def test_cli_dashboard(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from wfbench_core.cli import main

    make_history(tmp_path / "h")
    res = CliRunner().invoke(main, ["dashboard", "--history", str(tmp_path / "h"), "--out", str(tmp_path / "site")])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "site" / "index.html").is_file() and "6 series from 10 runs" in res.stdout


# ------------------------------------------------------------------------------------------------------------
# the real browser


def _chromium() -> str:
    found = os.environ.get("WFBENCH_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if not found:
        pytest.skip("Chromium not installed (Debian: apt-get install chromium)")
    return found


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    path = _chromium()
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright not installed (pip install playwright)")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=path)
        try:
            yield b
        finally:
            b.close()


def _open(browser: Any, index: Path, scheme: str = "light", width: int = 1280) -> tuple[Any, list[str], list[str]]:
    page = browser.new_page(viewport={"width": width, "height": 900}, color_scheme=scheme)
    errors: list[str] = []
    requests: list[str] = []
    page.on("console",
            lambda m: errors.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(f"page error: {e}"))
    page.on("request", lambda r: requests.append(r.url))
    page.goto(index.as_uri())
    page.wait_for_function("window.wfbenchDashboard !== undefined")
    return page, errors, requests


def _artifact(path: Path) -> None:
    dest = os.environ.get("WFBENCH_ARTIFACTS")
    if dest:
        Path(dest).mkdir(parents=True, exist_ok=True)
        shutil.copy(path, Path(dest) / path.name)


CHART_STATE = """(id) => {
  const sec = document.getElementById('s-' + id);
  const gap = Chart.getChart(sec.querySelector('canvas.chart-gap'));
  const time = Chart.getChart(sec.querySelector('canvas.chart-time'));
  const count = (ds) => ds.data.filter((v) => v !== null).length;
  const named = (c, label) => c.data.datasets.findIndex((d) => d.label === label);
  const ui = named(gap, 'unstable');
  const area = gap.chartArea;
  const drawn = gap.getDatasetMeta(ui).data.filter((el, i) => gap.data.datasets[ui].data[i] !== null)
      .filter((el) => !el.skip && el.x >= area.left && el.x <= area.right && el.y >= area.top && el.y <= area.bottom);
  return {
    labels: gap.data.labels.length,
    stable: count(gap.data.datasets[named(gap, 'gap')]),
    unstable: count(gap.data.datasets[ui]),
    unstableStyle: gap.data.datasets[ui].pointStyle,
    unstableDrawn: drawn.length,
    timeStable: time.data.datasets.filter((d) => d.label[0] !== '_' && !d.unstable).map(count),
    timeUnstable: time.data.datasets.filter((d) => d.unstable).map(count),
    gpu: [...sec.querySelectorAll('dl.sig dt')].find((dt) => dt.textContent === 'GPU').nextElementSibling.textContent,
    tableUnstable: sec.querySelectorAll('table.points tr.unstable').length,
    canvasHeight: gap.canvas.getBoundingClientRect().height,
  };
}"""


def test_dashboard_in_headless_chromium(browser: Any, tmp_path: Path) -> None:
    runs = make_history(tmp_path / "history")
    h = History.open(tmp_path / "history")
    index = build_site(h, tmp_path / "site")
    page, errors, requests = _open(browser, index)
    try:
        # the headline: the latest geometric-mean gap over the stable P0 cases of the newest paired platform
        newest = runs[f"h200-{NEWEST}"]
        headline = page.locator("#headline .platform").first
        assert headline.locator(".gap-value").inner_text() == f"{expected_headline(newest):.3f}×"
        shown = dict(zip(headline.locator("table.cases tbody td:first-child a").all_inner_texts(),
                         headline.locator("table.cases .case-gap").all_inner_texts(), strict=True))
        assert shown == {c.id: f"{c.timing.gap:.3f}×" for c in newest.cases}

        # one chart group per series, each with exactly its own points
        sections = page.locator("section.series")
        assert sections.count() == len(h.series)
        seen_unstable = 0
        for sid in page.eval_on_selector_all("section.series", "els => els.map(e => e.dataset.series)"):
            s = h.series[sid]
            state = page.evaluate(CHART_STATE, sid)
            n_unstable = sum(not p.stable for p in s.points)
            assert state["labels"] == len(s.points)
            assert state["stable"] == len(s.points) - n_unstable
            assert state["unstable"] == n_unstable == state["unstableDrawn"] == state["tableUnstable"]
            assert state["timeStable"] == [len(s.points) - n_unstable] * 2
            assert state["timeUnstable"] == [n_unstable] * 2
            assert state["unstableStyle"] == "triangle"
            assert state["gpu"].startswith(s.key.gpu_name)
            assert state["canvasHeight"] > 100
            seen_unstable += n_unstable
        assert seen_unstable == 1

        assert not errors, errors
        assert requests and all(u.startswith("file://") for u in requests), requests
        shot = tmp_path / "dashboard.png"
        page.screenshot(path=str(shot), full_page=True)
        assert shot.stat().st_size > 20_000
        _artifact(shot)
    finally:
        page.close()

    # dark scheme and a phone-sized window: same page, no errors
    page, errors, _ = _open(browser, index, scheme="dark", width=390)
    try:
        assert page.locator("section.series").count() == len(h.series)
        assert not errors, errors
        shot = tmp_path / "dashboard-dark-narrow.png"
        page.screenshot(path=str(shot), full_page=False)
        _artifact(shot)
    finally:
        page.close()


def test_empty_history_page(browser: Any, tmp_path: Path) -> None:
    (tmp_path / "history").mkdir()
    index = build_site(History.open(tmp_path / "history"), tmp_path / "site")
    page, errors, _ = _open(browser, index)
    try:
        assert "No runs in this history yet" in page.locator("#headline").inner_text()
        assert not errors, errors
    finally:
        page.close()


def test_cli_screenshot(tmp_path: Path) -> None:
    """The real command line in its own process (Playwright's sync API cannot nest in this one's)."""
    import subprocess
    import sys

    chromium = _chromium()
    pytest.importorskip("playwright.sync_api", reason="playwright not installed (pip install playwright)")
    make_history(tmp_path / "h")
    png = tmp_path / "shot.png"
    res = subprocess.run([sys.executable, "-m", "wfbench_core", "dashboard", "--history", str(tmp_path / "h"),
                          "--out", str(tmp_path / "site"), "--screenshot", str(png), "--chromium", chromium],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


EXAMPLES = Path(__file__).parent.parent / "examples" / "history"


@pytest.mark.skipif(not (EXAMPLES / "runs").is_dir(), reason="no example history in examples/history")
def test_example_history_renders(browser: Any, tmp_path: Path) -> None:
    """The real H200 runs kept as the example history: every series drawn, no errors."""
    h = History.open(EXAMPLES)
    assert not h.problems, [str(p) for p in h.problems]
    index = build_site(h, tmp_path / "site")
    page, errors, requests = _open(browser, index)
    try:
        assert page.locator("section.series").count() == len(h.series)
        for sid in h.series:
            assert page.evaluate(CHART_STATE, sid)["labels"] == len(h.series[sid].points)
        assert not errors, errors
        assert all(u.startswith("file://") for u in requests)
        shot = tmp_path / "example-dashboard.png"
        page.screenshot(path=str(shot), full_page=True)
        _artifact(shot)
    finally:
        page.close()
