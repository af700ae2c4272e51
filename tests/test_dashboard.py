"""The static dashboard: its data, and the page itself opened from file:// in a real headless browser.

The browser tests drive whichever Chromium-family browser is installed (Debian's ``chromium``, or Google
Chrome as on GitHub's Ubuntu runners), found the way ``wfbench dashboard --screenshot`` finds it, and name
it in the test summary; without one they skip.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import Any, Iterator

import attrs
import pytest

from synth_runs import REAL_AA, created_at, evolve_case, synth_run, with_case
from click.testing import CliRunner

from wfbench_core.cli import main
from wfbench_core.dashboard import build_data, build_site, diagnostics, find_browser, x_labels
from wfbench_core.errors import WfbenchError
from wfbench_core.review.history import History, add_run
from wfbench_core.record.results import RunResult, load_result
from wfbench_core.stats import geomean

H100 = "NVIDIA H100 80GB HBM3"
NEWEST = 6  # the newest H200 canonical run


def basehead_run(n: int, base_build: str = "build-base", head_build: str = "build-head",
                 head_scale: float = 0.95) -> RunResult:
    """A base/head run: every case twice, labelled, the head build 5 % faster, one CUDA side shared."""
    run = synth_run(n)
    cases = []
    for c in run.cases:
        assert c.timing is not None
        cases.append(attrs.evolve(c, compiler_label="base"))
        cases.append(evolve_case(c, wf_scale=head_scale, cuda_samples=c.timing.cuda.samples_us, compiler_label="head"))
    compilers = {"base": attrs.evolve(run.warpforthc, version=base_build),
                 "head": attrs.evolve(run.warpforthc, version=head_build)}
    # an hour after canonical run n: another run, not the same one stored twice
    return attrs.evolve(run, cases=tuple(cases), compilers=compilers,
                        created=created_at(n, start="2026-11-01T07:00:00+00:00"))


def make_history(root: Path) -> dict[str, RunResult]:
    """Seven H200 runs closing the gap (one with a noisy case, the first with a P1 case only it has), two H100
    runs (the second with scale_i64 v2), a base/head run, one real A/A run."""
    runs = {}
    for n in range(NEWEST + 1):
        jitter: Any = {"scale_i64": 0.08} if n == 3 else 0.0005
        runs[f"h200-{n}"] = synth_run(n, wf_scale={"axpy_f64": 1.12 - 0.02 * n, "scale_i64": 1.10 - 0.015 * n},
                                      jitter=jitter)
    first = runs["h200-0"]
    runs["h200-0"] = attrs.evolve(first, cases=first.cases + (attrs.evolve(first.cases[0], id="copy_f64",
                                                                           priority="P1"),))
    for n in (1, 2):
        runs[f"h100-{n}"] = synth_run(n, wf_scale=1.3, gpu_name=H100, gpu_uuid="GPU-h100", compute_capability="9.0")
    runs["h100-2"] = with_case(runs["h100-2"], "scale_i64", version=2)
    runs["basehead"] = basehead_run(NEWEST - 1)
    runs["aa"] = load_result(REAL_AA)
    for run in runs.values():
        add_run(root, run)
    return runs


def expected_headline(run: RunResult) -> float:
    p0 = [c for c in run.cases if c.priority == "P0"]
    assert all(c.status == "ok" for c in p0)
    return geomean([c.timing.gap for c in p0])


def case_set(run: RunResult) -> list[str]:
    return sorted(f"{c.id} v{c.version}" for c in run.cases if c.priority == "P0")


# ------------------------------------------------------------------------------------------------------------
# the data


def test_one_headline_and_every_kind_of_run_apart(tmp_path: Path) -> None:
    runs = make_history(tmp_path)
    h = History.open(tmp_path)
    data = build_data(h)
    newest = runs[f"h200-{NEWEST}"]
    head = data["headline"]
    assert head["gpu"] == "NVIDIA H200"
    assert head["geomean"] == pytest.approx(expected_headline(newest), rel=1e-12)
    assert head["case_set"] == case_set(newest)
    assert head["commit"] == newest.source.git_commit
    assert head["commit_url"].endswith("/commit/" + newest.source.git_commit)
    # the previous run over the same case set, and the change against it
    before = runs[f"h200-{NEWEST - 1}"]
    assert head["previous"]["commit"] == before.source.git_commit
    assert head["previous"]["change"] == pytest.approx(expected_headline(newest) / expected_headline(before) - 1)
    # the trend: every canonical H200 run, in time order, over one case set; run 3 (scale_i64 unstable) has no mean
    assert [t["commit"] for t in head["trend"]] == [runs[f"h200-{n}"].source.git_commit for n in range(NEWEST + 1)]
    assert all(t["same_set"] for t in head["trend"])
    assert [t["geomean"] is None for t in head["trend"]] == [n == 3 for n in range(NEWEST + 1)]

    assert [p["gpu"] for p in data["other_gpus"]] == [H100]
    assert data["other_gpus"][0]["geomean"] == pytest.approx(expected_headline(runs["h100-2"]), rel=1e-12)

    [cmp] = data["comparisons"]
    assert cmp["labels"] == ["base", "head"] and cmp["builds"] == {"base": "build-base", "head": "build-head"}
    bh = runs["basehead"]
    for row in cmp["rows"]:
        gaps = {c.compiler_label: c.timing.gap for c in bh.cases if c.id == row["case"]}
        assert row["gaps"] == pytest.approx(gaps)
        assert row["change"] == pytest.approx(gaps["head"] / gaps["base"] - 1)

    [floor] = data["floors"]
    aa = runs["aa"]
    assert floor["spread"] == pytest.approx(max(abs(c.timing.gap - 1) for c in aa.cases))
    # the A/A run was timed under another protocol than the headline run: it is not that series' floor (check's
    # margin says the same); an A/A run of the headline's protocol on its board gives the floor beside its change
    assert aa.protocol != newest.protocol and head["floor"] is None
    on_board = attrs.evolve(aa, environment=attrs.evolve(aa.environment, gpu_uuid=newest.environment.gpu_uuid),
                            protocol=newest.protocol, created=created_at(NEWEST, start="2026-11-01T08:00:00+00:00"))
    add_run(tmp_path, on_board)
    assert build_data(History.open(tmp_path))["headline"]["floor"] == pytest.approx(floor["spread"])
    assert [g["kind"] for g in data["groups"]] == ["canonical", "canonical", "basehead", "aa"]
    assert data["groups"][0]["gpu"] == "NVIDIA H200"

    assert {s["id"] for s in data["series"]} == set(h.series)
    for s in data["series"]:
        key = h.series[s["id"]].key
        assert [p["run"] for p in s["points"]] == [p.run for p in h.series[s["id"]].points]
        assert dict(s["signature"])["GPU"].startswith(key.gpu_name)
    unstable = [p for s in data["series"] for p in s["points"] if p["status"] == "unstable"]
    assert len(unstable) == 1


def test_headline_gpu_picks_the_headline(tmp_path: Path) -> None:
    runs = make_history(tmp_path)
    h = History.open(tmp_path)
    data = build_data(h, headline_gpu=H100)
    assert data["headline"]["gpu"] == H100
    assert data["headline"]["geomean"] == pytest.approx(expected_headline(runs["h100-2"]), rel=1e-12)
    assert [p["gpu"] for p in data["other_gpus"]] == ["NVIDIA H200"]
    with pytest.raises(WfbenchError, match=r"--headline-gpu 'NVIDIA A100': no canonical .* GPUs there: "
                                           r"NVIDIA H100 80GB HBM3, NVIDIA H200$"):
        build_data(h, headline_gpu="NVIDIA A100")


def test_a_case_set_change_is_named_and_never_compared(tmp_path: Path) -> None:
    """A run without scale_i64 must not read as a change of the same geometric mean."""
    first = synth_run(0)
    add_run(tmp_path, first)
    lacking = synth_run(1)
    lacking = attrs.evolve(lacking, cases=tuple(c for c in lacking.cases if c.id != "scale_i64"))
    add_run(tmp_path, lacking)
    head = build_data(History.open(tmp_path))["headline"]
    assert head["case_set"] == ["axpy_f64 v1"]
    assert head["missing"] == ["scale_i64"]
    assert head["previous"] is None
    assert [t["same_set"] for t in head["trend"]] == [False, True]

    # an unstable P0 case withholds the mean; the set stays what it is
    noisy = tmp_path / "noisy"
    add_run(noisy, synth_run(0))
    add_run(noisy, synth_run(1, jitter={"scale_i64": 0.08}))
    head = build_data(History.open(noisy))["headline"]
    assert head["geomean"] is None and head["previous"] is None
    assert head["case_set"] == ["axpy_f64 v1", "scale_i64 v1"] and head["left_out"] == ["scale_i64 v1"]


def test_an_unstable_p0_case_withholds_the_mean_and_p1_cases_are_not_in_it(tmp_path: Path) -> None:
    run = with_case(synth_run(0, jitter={"scale_i64": 0.08}), "axpy_f64", priority="P1")
    add_run(tmp_path, synth_run(-1))
    add_run(tmp_path, run)
    head = build_data(History.open(tmp_path))["headline"]
    assert head["geomean"] is None and head["case_set"] == ["scale_i64 v1"] and head["left_out"] == ["scale_i64 v1"]
    assert {c["case"]: c["status"] for c in head["cases"]} == {"axpy_f64": "ok", "scale_i64": "unstable"}


def test_x_labels_are_distinct() -> None:
    from wfbench_core.review.series import Point, SideSummary

    side = SideSummary(1.0, 1.0, 0.0, 0.0, 1.0, 1.0)

    def point(created: str, commit: str = "83c30d00aa8d02b4") -> Point:
        return Point(run=created, created=created, status="ok", priority="P0", warpforthc_version="b",
                     warpforthc_sha256="", wf=side, cuda=side, gap=1.0, gap_mad=0.0, gap_lo=1.0, gap_hi=1.0,
                     samples=1, git_commit=commit)

    assert x_labels([point("2026-11-29T20:00:39+00:00"), point("2026-11-29T20:21:22Z")]) == \
        [["83c30d0", "11-29 20:00"], ["83c30d0", "11-29 20:21"]]
    # same commit, same minute: seconds; same second: numbered; other offsets shown in UTC
    assert x_labels([point("2026-11-29T20:00:01+00:00"), point("2026-11-29T21:00:59+01:00")]) == \
        [["83c30d0", "11-29 20:00:01"], ["83c30d0", "11-29 20:00:59"]]
    assert x_labels([point("2026-11-29T20:00:01+00:00"), point("2026-11-29T20:00:01+00:00")]) == \
        [["83c30d0", "11-29 20:00:01 #1"], ["83c30d0", "11-29 20:00:01 #2"]]
    assert x_labels([point("2026-11-29T20:00:01+00:00", commit="")]) == [["11-29 20:00"]]


def test_diagnostics_read_only_the_fields_present() -> None:
    rows = [{"case": "axpy_f64", "version": 1, "label": ""}, {"case": "scale_i64", "version": 1, "label": ""}]
    raw = {
        "environment": {"copy_gbps": 4000.0, "max_sm_clock_mhz": 1980, "sm_clock_mhz": 1980, "power_limit_w": 700.0},
        "cases": [
            {"id": "axpy_f64", "version": 1, "compiler_label": "", "metric": "bandwidth",
             "attrs_wf": {"registers": 22, "local_bytes": 0, "shared_bytes": 0, "max_threads": 1024},
             "attrs_cuda": {"registers": 32, "local_bytes": 8, "shared_bytes": 0, "max_threads": 1024},
             "diag_wf": {"occupancy": 0.75, "spill_stores": 0, "spill_loads": 0, "registers": "x",
                         "mix": {"fp64": 10, "ld.global": 4, "predicated": 2}},
             "diag_cuda": {"occupancy": 1.0, "mix": {"fp64": 10, "ld.global": 2}},
             "timing": {"gbps_wf": 3000.0, "gbps_cuda": 3600.0, "clocks_sm_mhz": [1980, 1755],
                        "nvml": {"n": 12, "sm_mhz_min": "fast", "sm_mhz_max": 1980, "power_w_median": 310.5,
                                 "power_w_max": 402.0, "temp_c_max": 51, "reasons": ["sw_power_cap"]}}},
            {"id": "scale_i64", "version": 1, "compiler_label": "", "timing": {}},
            {"id": "other", "version": 1, "compiler_label": "", "attrs_wf": {"registers": 9}},
        ],
    }
    d = diagnostics(raw, rows)
    [c] = d["cases"]  # scale_i64 carries nothing; "other" is not a row shown
    assert c["wf"] == {"registers": 22, "local_bytes": 0, "shared_bytes": 0, "occupancy": 0.75, "spill_bytes": 0,
                       "mix": {"fp64": 10, "ld.global": 4}, "copy_pct": pytest.approx(0.75)}
    assert c["cuda"] == {"registers": 32, "local_bytes": 8, "shared_bytes": 0, "occupancy": 1.0,
                         "mix": {"fp64": 10, "ld.global": 2}, "copy_pct": pytest.approx(0.9)}
    # the clocks sampled while timed; a malformed NVML field is dropped, not guessed
    assert c["nvml"] == {"sm_clock_mhz": [1755, 1980], "power_w": [310.5, 402.0], "temperature_c": [51, 51],
                         "throttle": ["sw_power_cap"]}
    assert d["gpu"] == {"copy_gbps": 4000.0, "max_sm_clock_mhz": 1980, "sm_clock_mhz": 1980, "power_limit_w": 700.0}
    assert diagnostics({}, rows) == {"cases": [], "gpu": {}}


def test_embedded_data_cannot_break_out_of_its_script(tmp_path: Path) -> None:
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
    assert (tmp_path / "site" / "index.html").is_file() and "12 series from 11 runs" in res.stdout
    res = CliRunner().invoke(main, ["dashboard", "--history", str(tmp_path / "h"), "--out", str(tmp_path / "s2"),
                                    "--headline-gpu", "NVIDIA A100"])
    assert res.exit_code == 2 and "Traceback" not in res.output
    assert "--headline-gpu 'NVIDIA A100': no canonical" in res.output
    assert not (tmp_path / "s2").exists()


# ------------------------------------------------------------------------------------------------------------
# finding the browser (no browser needed: a stub is a shell script)

SNAP_STUB = """#!/bin/sh
echo "Command '$0' requires the chromium snap to be installed." >&2
echo "Please install it with:" >&2
echo "snap install chromium" >&2
exit 1
"""


def _bin(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / "bin" / name
    path.parent.mkdir(exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path


def test_a_snap_stub_is_not_a_browser(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    stub = _bin(tmp_path, "chromium-browser", SNAP_STUB)
    monkeypatch.setenv("PATH", str(stub.parent))
    monkeypatch.delenv("WFBENCH_CHROMIUM", raising=False)
    with pytest.raises(WfbenchError, match=r"no Chromium or Chrome found \(.*chromium-browser did not run: a snap "
                                           r"stub\?\); install one"):
        find_browser()
    with pytest.raises(WfbenchError, match=r"chromium-browser: does not run as a Chromium or Chrome"):
        find_browser("chromium-browser")


def test_chrome_is_found_behind_a_stub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """As on GitHub's Ubuntu runners: 'chromium-browser' a snap stub, Google Chrome the browser that runs."""
    stub = _bin(tmp_path, "chromium-browser", SNAP_STUB)
    chrome = _bin(tmp_path, "google-chrome", "#!/bin/sh\necho 'Google Chrome 142.0.7444.59 '\n")
    monkeypatch.setenv("PATH", str(stub.parent))
    monkeypatch.delenv("WFBENCH_CHROMIUM", raising=False)
    assert find_browser() == (str(chrome), "Google Chrome 142.0.7444.59")
    # something that runs but is no Chromium is refused too
    _bin(tmp_path, "chromium", "#!/bin/sh\necho 'Firefox 140'\n")
    assert find_browser() == (str(chrome), "Google Chrome 142.0.7444.59")


# ------------------------------------------------------------------------------------------------------------
# the real browser


class _BrowserReport:
    """Names the browser the page was checked in, in the test summary."""

    name = "wfbench-dashboard-browser"

    def __init__(self, line: str) -> None:
        self.line = line

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        terminalreporter.write_line(self.line)


@pytest.fixture(scope="module")
def browser_path(request: pytest.FixtureRequest) -> str:
    try:
        path, version = find_browser()
    except WfbenchError as exc:
        pytest.skip(f"no headless browser for the dashboard tests: {exc}")
    pm = request.config.pluginmanager
    if not pm.has_plugin(_BrowserReport.name):
        pm.register(_BrowserReport(f"dashboard tests: the page was checked in {version} ({path})"),
                    _BrowserReport.name)
    return path


def test_the_real_browser_behind_a_stub(browser_path: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The installed browser under Chrome's name, with a snap stub first on PATH: the browser is found."""
    stub = _bin(tmp_path, "chromium-browser", SNAP_STUB)
    chrome = stub.parent / "google-chrome"
    chrome.symlink_to(browser_path)
    monkeypatch.setenv("PATH", str(stub.parent))
    monkeypatch.delenv("WFBENCH_CHROMIUM", raising=False)
    path, version = find_browser()
    assert path == str(chrome) and re.match(r"(Chromium|Google Chrome) \d+\.", version), version


@pytest.fixture(scope="module")
def browser(browser_path: str) -> Iterator[Any]:
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright not installed (pip install playwright)")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=browser_path)
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
  const text = (l) => [].concat(l).join(' ');
  return {
    labels: gap.data.labels.map(text),
    ticks: gap.scales.x.ticks.map((t) => text(t.label)),
    timeTicks: time.scales.x.ticks.map((t) => text(t.label)),
    stable: count(gap.data.datasets[named(gap, 'gap')]),
    unstable: count(gap.data.datasets[ui]),
    unstableStyle: gap.data.datasets[ui].pointStyle,
    unstableDrawn: drawn.length,
    timeStable: time.data.datasets.filter((d) => d.label[0] !== '_' && !d.unstable).map(count),
    timeUnstable: time.data.datasets.filter((d) => d.unstable).map(count),
    gpu: [...sec.querySelectorAll('dl.sig dt')].find((dt) => dt.textContent === 'GPU').nextElementSibling.textContent,
    tableUnstable: sec.querySelectorAll('table.points tr.unstable').length,
    canvasHeight: gap.canvas.getBoundingClientRect().height,
    summary: sec.querySelector('details summary').textContent,
    yMin: gap.scales.y.min, yMax: gap.scales.y.max,
    timeYMin: time.scales.y.min, timeYMax: time.scales.y.max,
  };
}"""

# Every series, charted or a row: its badges (by the case name) and what its element is.
SERIES_STATE = """(id) => {
  const el = document.getElementById('s-' + id);
  return {
    tag: el.tagName.toLowerCase(),
    canvases: el.querySelectorAll('canvas').length,
    badges: [...el.querySelectorAll('h3 [data-badge], td.case [data-badge]')].map((b) => b.dataset.badge + ':' + b.textContent),
    unstableRow: el.classList.contains('unstable'),
    cells: el.tagName === 'TR' ? [...el.children].map((td) => td.textContent) : [],
  };
}"""

# Both sides of a kernel-time chart at the point where they are closest: where they are drawn and how many
# canvas pixels near that point carry each side's colour.
BOTH_SIDES = """(id) => {
  const chart = Chart.getChart(document.getElementById('s-' + id).querySelector('canvas.chart-time'));
  const sides = chart.data.datasets.map((d, i) => [d, i]).filter(([d]) => d.side && !d.unstable);
  const at = sides.map(([d, i]) => chart.getDatasetMeta(i).data);
  let best = 0, dist = Infinity;
  at[0].forEach((el, k) => {
    if (sides[0][0].data[k] === null || sides[1][0].data[k] === null) return;
    const d = Math.hypot(el.x - at[1][k].x, el.y - at[1][k].y);
    if (d < dist) { dist = d; best = k; }
  });
  const ratio = chart.currentDevicePixelRatio, r = 12;
  const cx = at[0][best].x, cy = at[0][best].y;
  const img = chart.ctx.getImageData(Math.round((cx - r) * ratio), Math.round((cy - r) * ratio),
                                     Math.round(2 * r * ratio), Math.round(2 * r * ratio)).data;
  const rgb = (c) => /^#(..)(..)(..)$/.exec(c).slice(1).map((h) => parseInt(h, 16));
  const pixels = sides.map(([d]) => {
    const [R, G, B] = rgb(d.borderColor);
    let n = 0;
    for (let k = 0; k < img.length; k += 4) {
      if (img[k + 3] > 200 && Math.abs(img[k] - R) + Math.abs(img[k + 1] - G) + Math.abs(img[k + 2] - B) < 60) n++;
    }
    return n;
  });
  return { labels: sides.map(([d]) => d.label), visible: sides.map(([, i]) => chart.isDatasetVisible(i)),
           distance: dist, pixels };
}"""

LEGEND = """() => {
  const shown = [...new Set([...document.querySelectorAll('main [data-badge]')].map((b) => b.dataset.badge))];
  const legend = {};
  document.querySelectorAll('#legend [data-legend]').forEach((b) => {
    const dd = b.closest('dt').nextElementSibling;
    legend[b.dataset.legend] = dd.getBoundingClientRect().height > 0 ? dd.innerText : '';
  });
  return { shown, legend, hoverOnly: document.querySelectorAll('main [data-badge][title]').length };
}"""

WRONG_PLURAL = re.compile(r"\b1 (points|runs|cases|files|samples|builds)\b|\ball 1 point|\(s\)")


def check_page(page: Any, h: History) -> dict[str, Any]:
    """What every dashboard must show, read from the page as drawn; returns the per-series chart states."""
    # ONE headline number on the whole page
    assert page.locator(".gap-value").count() == 1
    assert page.locator(".eyebrow", has_text=re.compile(r"^Headline")).count() == 1
    # x labels: commit and run time, distinct in every chart (in the data and as drawn)
    states = {}
    charted = page.eval_on_selector_all("section.series", "els => els.map(e => e.dataset.series)")
    # a series with one point is a table row, one with more has its charts: every series exactly once
    rows = page.eval_on_selector_all("tr.series-row", "els => els.map(e => e.dataset.series)")
    assert sorted(charted + rows) == sorted(h.series)
    assert {sid for sid in rows} == {sid for sid, s in h.series.items() if len(s.points) == 1}
    for sid in rows:
        st = page.evaluate(SERIES_STATE, sid)
        p = h.series[sid].points[0]
        assert st["tag"] == "tr" and st["canvases"] == 0 and st["unstableRow"] == (not p.stable)
        assert st["cells"][1] == f"{p.gap:.3f}×", st["cells"]
    for sid in charted:
        st = page.evaluate(CHART_STATE, sid)
        s = h.series[sid]
        assert len(st["labels"]) == len(s.points)
        assert len(set(st["labels"])) == len(st["labels"]), st["labels"]
        assert st["ticks"] and len(set(st["ticks"])) == len(st["ticks"])
        assert len(set(st["timeTicks"])) == len(st["timeTicks"])
        for label, p in zip(st["labels"], s.points):
            commit = f"{p.git_commit[:7]} " if p.git_commit else ""
            assert re.fullmatch(rf"{commit}\d\d-\d\d \d\d:\d\d(:\d\d)?( #\d+)?", label), label
        n = len(s.points)
        assert st["summary"] == f"signature and all {n} points"
        # the y axes never zoom in below 20 % of their middle value: noise does not look like a cliff
        for lo, hi in ((st["yMin"], st["yMax"]), (st["timeYMin"], st["timeYMax"])):
            assert hi - lo >= 0.2 * (hi + lo) / 2 - 1e-9, (sid, lo, hi)
        states[sid] = st
    # the headline's own chart too
    trend = page.evaluate("""() => {
      const c = Chart.getChart(document.querySelector('#headline canvas.chart-headline'));
      return c.scales.x.ticks.map((t) => [].concat(t.label).join(' '));
    }""")
    assert trend and len(set(trend)) == len(trend), trend
    # every A/A chart shows both sides, even where they are equal (a one-point A/A series is a row: both numbers)
    for sid in (sid for sid, s in h.series.items() if s.key.mode == "aa" and sid in charted):
        both = page.evaluate(BOTH_SIDES, sid)
        assert both["labels"] == ["CUDA (A)", "CUDA (A′)"] and all(both["visible"])
        assert both["distance"] < 8, both  # drawn on top of each other: only the styles keep them apart
        assert min(both["pixels"]) >= 10, both
    # every badge kind on the page is explained on the page, in words, not only on hover
    legend = page.evaluate(LEGEND)
    assert set(legend["shown"]) == set(legend["legend"]), legend
    assert all(len(text) > 20 for text in legend["legend"].values()), legend
    assert legend["hoverOnly"] == 0
    # plurals
    text = page.evaluate("document.body.textContent")
    assert not WRONG_PLURAL.search(text), WRONG_PLURAL.search(text)
    return states


def test_dashboard_in_a_real_browser(browser: Any, tmp_path: Path) -> None:
    runs = make_history(tmp_path / "history")
    h = History.open(tmp_path / "history")
    assert any(s.key.mode == "aa" for s in h.series.values())  # check_page's A/A check has something to check
    index = build_site(h, tmp_path / "site")
    page, errors, requests = _open(browser, index)
    try:
        states = check_page(page, h)
        newest = runs[f"h200-{NEWEST}"]
        headline = page.locator("#headline article")
        assert headline.count() == 1
        assert headline.locator(".gap-value").inner_text() == f"{expected_headline(newest):.3f}×"
        assert headline.locator(".eyebrow").inner_text().lower() == "headline · canonical series · nvidia h200"
        # the case set is named
        assert headline.locator(".geomean-set").inner_text().startswith(
            f"geometric mean of the gaps of {len(case_set(newest))} P0 cases, all stable:")
        assert headline.locator(".geomean-set .chip").all_inner_texts() == case_set(newest)
        shown = dict(zip(headline.locator("table.cases tbody td:first-child a").all_inner_texts(),
                         headline.locator("table.cases .case-gap").all_inner_texts(), strict=True))
        assert shown == {c.id: f"{c.timing.gap:.3f}×" for c in newest.cases}
        # base/head and A/A: named as what they are, in their own sections
        cmp = page.locator("article.comparison")
        assert cmp.count() == 1
        assert cmp.locator(".eyebrow").inner_text().lower() == "base/head run · nvidia h200"
        assert "base = build-base, head = build-head" in cmp.locator(".explain").inner_text()
        floor = page.locator("article.floor")
        assert floor.count() == 1 and floor.locator(".eyebrow").inner_text().lower() == "a/a floor · nvidia h200"
        assert page.locator("article.other-gpu").all_inner_texts()[0].startswith(H100)
        every = {sid: page.evaluate(SERIES_STATE, sid) for sid in h.series}
        kinds = {sid: page.locator(f"#s-{sid}").get_attribute("data-kind") for sid in h.series}
        for sid, s in h.series.items():
            want = "aa" if s.key.mode == "aa" else "basehead" if s.key.compiler_label else "canonical"
            assert kinds[sid] == want
            badge = {"aa": "aa:A/A floor", "basehead": f"label:{s.key.compiler_label} build",
                     "canonical": "canonical:canonical"}[want]
            assert badge in every[sid]["badges"]
        superseded = [sid for sid in every if any(b.startswith("superseded:") for b in every[sid]["badges"])]
        not_latest = [sid for sid in every if "not-latest:not in latest run" in every[sid]["badges"]]
        assert [(h.series[s].key.gpu_name, h.series[s].key.case_id) for s in superseded] == [(H100, "scale_i64")]
        assert [h.series[s].key.case_id for s in not_latest] == ["copy_f64"]

        # one chart group per series with two points or more, each with exactly its own points
        assert page.locator("section.series").count() == sum(len(s.points) > 1 for s in h.series.values())
        seen_unstable = 0
        for sid, state in states.items():
            s = h.series[sid]
            n_unstable = sum(not p.stable for p in s.points)
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
        assert page.locator("section.series").count() + page.locator("tr.series-row").count() == len(h.series)
        assert page.locator(".gap-value").count() == 1
        # one column: the headline's text and its side box do not overlap
        main, side = (page.locator(f"#headline {sel}").bounding_box() for sel in (".hero-main", "dl.sig"))
        assert main["y"] + main["height"] <= side["y"] or side["y"] + side["height"] <= main["y"], (main, side)
        assert main["width"] > 300
        assert not errors, errors
        shot = tmp_path / "dashboard-dark-narrow.png"
        page.screenshot(path=str(shot), full_page=False)
        _artifact(shot)
    finally:
        page.close()


def test_why_panel_only_with_its_fields(browser: Any, tmp_path: Path) -> None:
    """The per-case diagnostics table shows the columns results carry, and no other."""
    run = synth_run(0)
    axpy = next(c for c in run.cases if c.id == "axpy_f64")
    assert axpy.attrs_wf is not None and axpy.attrs_cuda is not None  # a real run carries kernel attributes
    add_run(tmp_path / "h", run)
    page, errors, _ = _open(browser, build_site(History.open(tmp_path / "h"), tmp_path / "site"))
    try:
        page.locator("details.why summary").click()
        heads = page.locator("table.why th").all_inner_texts()
        assert heads[:2] == ["case", "registers"] and "local bytes" in heads
        assert "occupancy" not in heads and not any(h.startswith("instruction mix") for h in heads)
        row = page.locator("table.why tbody tr").filter(has_text="axpy_f64 v1")
        assert row.locator("td").nth(1).inner_text() == f"{axpy.attrs_wf.registers} / {axpy.attrs_cuda.registers}"
        assert not errors, errors
    finally:
        page.close()


def test_why_panel_with_diagnostics_and_nvml(browser: Any, tmp_path: Path) -> None:
    """Results that carry diag_wf/diag_cuda and timing.nvml get their columns; the numbers are the result's."""
    from wfbench_core.dashboard import render_page

    run = synth_run(0)
    add_run(tmp_path / "h", run)
    h = History.open(tmp_path / "h")
    index = build_site(h, tmp_path / "site")
    raw = json.loads((h.root / next(iter(h.runs))).read_text())
    for case in raw["cases"]:
        case["diag_wf"] = {"registers": 40, "spill_stores": 8, "spill_loads": 8, "occupancy": 0.5,
                           "mix": {"fp64": 8, "ld.global": 6, "int": 3}}
        case["diag_cuda"] = {"registers": 32, "spill_stores": 0, "spill_loads": 0, "occupancy": 0.75,
                             "mix": {"fp64": 8, "ld.global": 2}}
        case["timing"]["nvml"] = {"n": 9, "sm_mhz_min": 1755, "sm_mhz_max": 1980, "power_w_median": 402.5,
                                  "power_w_max": 402.5, "reasons": ["sw_power_cap"]}
    data = build_data(h)
    data["headline"]["diagnostics"] = diagnostics(raw, data["headline"]["cases"])
    index.write_text(render_page(data))
    page, errors, _ = _open(browser, index)
    try:
        page.locator("details.why summary").click()
        heads = page.locator("table.why th").all_inner_texts()
        for want in ("registers", "spill bytes", "occupancy", "instruction mix, largest differences (WF − CUDA)",
                     "SM clock while timed", "power while timed", "throttling"):
            assert want in heads, (want, heads)
        row = page.locator("table.why tbody tr").filter(has_text="axpy_f64 v1").locator("td").all_inner_texts()
        cell = dict(zip(heads, row, strict=True))
        assert cell["registers"] == "40 / 32"  # diag_* overrides the kernel attributes when both are there
        assert cell["spill bytes"] == "16 / 0" and cell["occupancy"] == "50% / 75%"
        assert cell["instruction mix, largest differences (WF − CUDA)"] == "ld.global +4, int +3"
        assert cell["SM clock while timed"] == "1755–1980 MHz" and cell["power while timed"] == "402.5 W"
        assert cell["throttling"] == "sw_power_cap"
        assert not errors, errors
    finally:
        page.close()


def test_withheld_headline_in_the_browser(browser: Any, tmp_path: Path) -> None:
    """The newest run has an unstable P0 case: no number, the reason, and nothing compared."""
    add_run(tmp_path / "h", synth_run(0))
    add_run(tmp_path / "h", synth_run(1, jitter={"scale_i64": 0.08}))
    h = History.open(tmp_path / "h")
    page, errors, _ = _open(browser, build_site(h, tmp_path / "site"))
    try:
        check_page(page, h)
        head = page.locator("#headline article")
        assert head.locator(".gap-value").inner_text() == "no geometric mean: 1 P0 case unstable"
        assert head.locator(".note.warn").inner_text().startswith("Unstable in this run: scale_i64 v1.")
        assert head.locator(".hero-prev").inner_text() == ""
        assert head.locator(".headline-trend figcaption").inner_text().endswith(
            "1 run over this case set; not drawn: 1 run with an unstable P0 case")
        assert not errors, errors
    finally:
        page.close()


def test_no_canonical_run_no_headline(browser: Any, tmp_path: Path) -> None:
    """Only a base/head run and an A/A run: nothing is headlined, both are shown as what they are."""
    add_run(tmp_path / "h", basehead_run(0))
    add_run(tmp_path / "h", load_result(REAL_AA))
    h = History.open(tmp_path / "h")
    data = build_data(h)
    assert data["headline"] is None and data["other_gpus"] == []
    assert len(data["comparisons"]) == 1 and len(data["floors"]) == 1
    page, errors, _ = _open(browser, build_site(h, tmp_path / "site"))
    try:
        assert page.locator(".gap-value").count() == 0
        assert page.locator("#headline").inner_text().startswith("No canonical run")
        assert page.locator("article.comparison").count() == 1 and page.locator("article.floor").count() == 1
        assert page.locator("tr.series-row").count() == len(h.series)  # one run each: rows, no charts
        assert page.locator("section.series").count() == 0 and page.locator("canvas").count() == 0
        assert not errors, errors
    finally:
        page.close()


def test_empty_history_page(browser: Any, tmp_path: Path) -> None:
    (tmp_path / "history").mkdir()
    index = build_site(History.open(tmp_path / "history"), tmp_path / "site")
    page, errors, _ = _open(browser, index)
    try:
        assert "No runs in this history yet" in page.locator("#headline").inner_text()
        assert page.locator(".gap-value").count() == 0
        # the message is the only card: nothing empty drawn around it
        visible = page.eval_on_selector_all(".card", "els => els.filter((e) => e.getClientRects().length)"
                                                     ".map((e) => e.textContent.trim())")
        assert len(visible) == 1 and visible[0].startswith("No runs in this history yet"), visible
        assert not errors, errors
    finally:
        page.close()


def test_cli_screenshot(browser_path: str, tmp_path: Path) -> None:
    """The real command line in its own process (Playwright's sync API cannot nest in this one's)."""
    import subprocess
    import sys

    pytest.importorskip("playwright.sync_api", reason="playwright not installed (pip install playwright)")
    make_history(tmp_path / "h")
    png = tmp_path / "shot.png"
    res = subprocess.run([sys.executable, "-m", "wfbench_core", "dashboard", "--history", str(tmp_path / "h"),
                          "--out", str(tmp_path / "site"), "--screenshot", str(png), "--chromium", browser_path],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


EXAMPLES = Path(__file__).parent.parent / "examples" / "history"


@pytest.mark.skipif(not (EXAMPLES / "runs").is_dir(), reason="no example history in examples/history")
def test_example_history_renders(browser: Any, tmp_path: Path) -> None:
    """The real H200 runs kept as the example history: one headline, over the newest canonical run."""
    h = History.open(EXAMPLES)
    assert not h.problems, [str(p) for p in h.problems]
    assert any(s.key.mode == "aa" for s in h.series.values())
    canonical = [load_result(EXAMPLES / e.file) for e in h.runs.values()]
    canonical = [r for r in canonical if r.mode == "paired" and not r.compilers]
    newest = max(canonical, key=lambda r: r.created)
    index = build_site(h, tmp_path / "site")
    page, errors, requests = _open(browser, index, width=1400)  # a newcomer's screen
    try:
        check_page(page, h)
        assert page.locator("#headline .gap-value").inner_text() == f"{expected_headline(newest):.3f}×"
        assert page.locator("#headline .geomean-set .chip").all_inner_texts() == case_set(newest)
        assert page.locator("article.comparison").count() == 1 and page.locator("article.floor").count() == 1
        _one_truth(page, h)
        assert not errors, errors
        assert all(u.startswith("file://") for u in requests)
        shot = tmp_path / "example-dashboard.png"
        page.screenshot(path=str(shot), full_page=True)
        _artifact(shot)
    finally:
        page.close()


CEILING_RUN = Path(__file__).parent.parent / "docs" / "results" / "h200-ceiling.json"


@pytest.mark.skipif(not (EXAMPLES / "runs").is_dir(), reason="no example history in examples/history")
def test_the_example_history_shows_the_stored_h200_ceilings_apart(browser: Any, tmp_path: Path) -> None:
    """The dashboard the README shows (``wfbench dashboard --history examples/history``): its headline run is the
    stored H200 run with --ceiling, and every ceiling of that file is a row of its own section, with its library,
    version and ratio, and none of it in the headline's gap or geomean."""
    import hashlib

    stored = json.loads(CEILING_RUN.read_text(encoding="utf-8"))
    ceilings = [c for c in stored["cases"] if c.get("ceiling")]
    assert len(ceilings) == 5  # "its five library ceilings" (docs/dashboard.md, docs/ceiling.md)
    h = History.open(EXAMPLES)
    sha = hashlib.sha256(CEILING_RUN.read_bytes()).hexdigest()
    [entry] = [e for e in h.runs.values() if e.sha256 == sha]  # the very file, stored unchanged
    # "timed on another H200 board than the six runs before it, and there is no A/A run on that board"
    board = stored["environment"]["gpu_uuid"]
    before = [load_result(EXAMPLES / e.file) for e in h.runs.values() if e is not entry]
    assert len(before) == 6 and all(r.created < stored["created"] for r in before)
    assert all(r.environment.gpu_uuid != board for r in before)
    res = CliRunner().invoke(main, ["dashboard", "--history", str(EXAMPLES), "--out", str(tmp_path / "site")])
    assert res.exit_code == 0, res.output
    page, errors, _ = _open(browser, tmp_path / "site" / "index.html", width=1400)
    try:
        # the page's own data: its headline run is that file
        assert page.evaluate("() => window.wfbenchDashboard.data.headline.run") == entry.file
        rows = page.locator("article.ceilings tbody tr")
        shown = {tr.locator("td").first.inner_text(): tr.locator("td").all_inner_texts() for tr in rows.all()}
        assert len(shown) == rows.count() == len(ceilings)
        # at a newcomer's 1400 px the whole table is in the window, the ratio column included (no side scroll)
        box = page.evaluate("() => { const b = document.querySelector('article.ceilings .table-scroll');"
                            " return [b.scrollWidth, b.clientWidth]; }")
        assert box[0] <= box[1], box
        for c in ceilings:
            k = c["ceiling"]
            cells = shown[f"{c['id']}/v{c['version']}/ceiling"]
            assert k["library"] in cells[1] and k["routine"] in cells[1], cells
            assert f"{k['package']} {k['library_version']}" in cells[1], cells
            assert cells[5] == f"{k['ratio']:.2f}×" and cells[6].startswith(k["status"]), cells
        # the headline: the geomean of the run's P0 gaps (never a ratio), and no ceiling in it
        p0 = [c for c in stored["cases"] if c["priority"] == "P0"]
        assert page.locator("#headline .gap-value").inner_text() == f"{geomean([c['timing']['gap'] for c in p0]):.3f}×"
        headline = page.locator("#headline").inner_text()
        assert "ceiling" not in headline.lower()
        assert not any(f"{c['ceiling']['ratio']:.2f}×" in headline for c in ceilings if c["ceiling"]["ratio"] > 10)
        assert not errors, errors
    finally:
        page.close()
    # what docs/dashboard.md says check makes of that run: SAME on another board, reduce_sum_f64 moved, exit 4
    checked = CliRunner().invoke(main, ["check", "--history", str(EXAMPLES)])
    assert checked.exit_code == 4, checked.stdout
    moved = [line for line in checked.stdout.splitlines() if "moved" in line and line.startswith("  ")]
    assert len(moved) == 1 and moved[0].startswith("  reduce_sum_f64:") and "other board" in moved[0], moved
    findings = json.loads(CliRunner().invoke(main, ["check", "--history", str(EXAMPLES), "--json"]).stdout)["findings"]
    judged = [f for f in findings if f["judged"]]
    assert judged and all(f["verdict"] == "same" and "other board" in f["message"] for f in judged), findings


ONE_TRUTH = """() => {
  const rows = [...document.querySelectorAll('#headline tr[data-series]')].map((tr) => ({
    series: tr.dataset.series, row: tr.className,
    badge: tr.querySelector('[data-badge="stable"], [data-badge="unstable"], [data-badge="throttled"], '
      + '[data-badge="launch-bound"], [data-badge="depressed"]').textContent,
    delta: tr.querySelector('.verdict-cell').textContent }));
  const cards = Object.fromEntries([...document.querySelectorAll('section.series')].map((s) =>
    [s.dataset.series, s.querySelector('.latest').textContent]));
  const floor = document.querySelector('.floor-note') ? document.querySelector('.floor-note').textContent : '';
  const wide = [...document.querySelectorAll('table.compare')].map((t) => {
    const box = t.closest('.table-scroll');
    return { scroll: box.scrollWidth, client: box.clientWidth };
  });
  return { rows, cards, floor, wide };
}"""


def _one_truth(page: Any, h: History) -> None:
    """The headline's badges, row colours, the series cards, ``history list``, ``check`` and the A/A floor say one
    thing of every case of the newest canonical run; the base/head table fits the window."""
    from wfbench_core.review.evidence import board_aa_floor

    got = page.evaluate(ONE_TRUTH)
    assert got["rows"], got
    listed = CliRunner().invoke(main, ["history", "list", "--history", str(EXAMPLES)]).stdout
    checked = CliRunner().invoke(main, ["check", "--history", str(EXAMPLES)])
    for row in got["rows"]:
        series = h.series[row["series"]]
        word, _why = series.points[-1].standing
        assert row["badge"] == word, row
        assert row["row"] == ("ok" if word == "stable" else "unstable"), row
        if word != "stable":
            assert f"not judged: {word}" in row["delta"], row  # an empty change says why it is empty
            assert f"left out of trends (" in got["cards"][row["series"]] and word in got["cards"][row["series"]]
            assert f"({word})" in listed.split(series.key.case_id, 1)[1].splitlines()[0], listed
            assert f"{series.key.case_id}: {series.points[-1].standing[1]}" in checked.stdout, checked.stdout
    # the A/A floor of the board the headline run was timed on, as check's margin takes it
    headline = h.series[got["rows"][0]["series"]]
    floor, _ = board_aa_floor(h, headline.key, headline.points[-1].gpu_uuid)
    if floor is None:  # no A/A run on that board: no floor beside the change, and check's margin is its default
        assert got["floor"] == "" and "(no A/A floor measured)" in checked.stdout, (got["floor"], checked.stdout)
    else:
        assert f"up to {floor * 100:.2f}%" in got["floor"], got["floor"]
        assert f"A/A floor {floor:.2%}" in checked.stdout, checked.stdout
    assert all(w["scroll"] <= w["client"] for w in got["wide"]), got["wide"]  # no horizontal scroll at 1400 px


def test_a_step_in_the_gap_is_marked_in_the_browser(browser: Any, tmp_path: Path) -> None:
    """A 3 % step from run 8 on (wfbench_core.review.changepoints): the gap chart draws it, the line under it links
    the commit range; a series without a step has neither."""
    from synth_runs import commit_of

    for n in range(12):
        add_run(tmp_path / "history", synth_run(n, wf_scale={"axpy_f64": 1.03 if n >= 8 else 1.0}, jitter=0.002))
    h = History.open(tmp_path / "history")
    page, errors, _ = _open(browser, build_site(h, tmp_path / "site"))
    try:
        sid = next(s.id for s in h.series.values() if s.key.case_id == "axpy_f64")
        other = next(s.id for s in h.series.values() if s.key.case_id == "scale_i64")
        marks = page.evaluate("""(sid) => Chart.getChart(document.querySelector('#s-' + sid + ' canvas.chart-gap'))
          .options.plugins.changeMarks.marks.map((m) => m.index)""", sid)
        assert marks == [8]
        steps = page.locator(f"#s-{sid} p.steps")
        assert steps.count() == 1 and "(+3.0%) at" in steps.inner_text()
        assert steps.locator("a").get_attribute("href").endswith(f"/compare/{commit_of(7)}...{commit_of(8)}")
        assert page.locator(f"#s-{other} p.steps").count() == 0
        assert not errors, errors
    finally:
        page.close()


def test_gap_per_gpu_model_side_by_side(tmp_path: Path) -> None:
    """Each model's newest canonical run, case by case: a case one model's run lacks is None there."""
    runs = make_history(tmp_path)
    data = build_data(History.open(tmp_path))
    models = data["models"]
    assert [c["name"] for c in models["columns"]] == ["NVIDIA H200", H100]
    h200, h100 = runs[f"h200-{NEWEST}"], runs["h100-2"]
    assert [c["run"] for c in models["columns"]] == [data["headline"]["run"], data["other_gpus"][0]["run"]]
    rows = {(r["case"], r["version"]): r for r in models["rows"]}
    assert set(rows) == {(c.id, c.version) for c in h200.cases} | {(c.id, c.version) for c in h100.cases}
    for run, name in ((h200, "NVIDIA H200"), (h100, H100)):
        for c in run.cases:
            assert rows[(c.id, c.version)]["gaps"][name] == pytest.approx(c.timing.gap)
    assert rows[("scale_i64", 2)]["gaps"]["NVIDIA H200"] is None and rows[("scale_i64", 1)]["gaps"][H100] is None
    single = tmp_path / "one"
    add_run(single, runs["h200-0"])
    assert build_data(History.open(single))["models"] is None  # one model: nothing to set side by side


def test_gap_per_gpu_model_in_the_browser(browser: Any, tmp_path: Path) -> None:
    runs = make_history(tmp_path / "history")
    page, errors, _ = _open(browser, build_site(History.open(tmp_path / "history"), tmp_path / "site"))
    try:
        table = page.locator("article.models table")
        assert table.locator("thead th").all_inner_texts() == ["case", "NVIDIA H200", H100]
        axpy = {c.id: c.timing.gap for c in runs["h100-2"].cases}["axpy_f64"]
        row = table.locator("tbody tr", has_text="axpy_f64").all_inner_texts()[0]
        assert f"{axpy:.3f}×" in row
        assert not errors, errors
    finally:
        page.close()


# ------------------------------------------------------------------------------------------------------------
# the Δ column: the verdict of check and compare, never a colour of its own


def test_the_change_column_shows_the_verdict_check_and_compare_give(browser: Any, tmp_path: Path) -> None:
    """The newest run: axpy_f64's gap moved +2.6 % with byte-identical PTX (SAME by rule, neutral, as compare and
    check say), scale_i64 is new code 10 % slower (SLOWER, red). A base/head run's head is 5 % faster (FASTER)."""
    from wfbench_core.review import alerts, compare

    h_dir = tmp_path / "h"
    for n in range(4):
        add_run(h_dir, synth_run(n, placements=15))
    newest = synth_run(4, placements=15, run_offset={"axpy_f64": 1.026}, wf_scale={"scale_i64": 1.10})
    add_run(h_dir, newest)
    add_run(h_dir, basehead_run(5))
    h = History.open(h_dir)
    data = build_data(h)
    rows = {r["case"]: r for r in data["headline"]["cases"]}
    report = alerts.check(History.open(h_dir), newest, run_name="r")
    for f in report.findings:
        assert rows[f.case_id]["verdict_label"] == f.judged.label
        assert rows[f.case_id]["change"] == pytest.approx(f.judged.change)
    assert rows["axpy_f64"]["verdict_label"].startswith("SAME (identical code")
    assert rows["axpy_f64"]["change"] == pytest.approx(0.026, abs=0.002)
    assert rows["scale_i64"]["verdict"] == "slower"
    [cmp] = data["comparisons"]
    want = compare.compare_labels(basehead_run(5))
    assert {r["case"]: r["verdict_label"] for r in cmp["rows"]} == {c.case_id: c.verdict.label for c in want.cases}
    assert {r["verdict"] for r in cmp["rows"]} == {"faster"}
    page, errors, _ = _open(browser, build_site(h, tmp_path / "site"))
    try:
        cells = page.locator("#headline table.cases td.verdict-cell")
        shown = {cells.nth(i).get_attribute("data-verdict"): (cells.nth(i).inner_text(),
                                                                cells.nth(i).get_attribute("class"))
                 for i in range(cells.count())}
        assert shown["same"][0].startswith("+2.6%") and "SAME (identical code" in shown["same"][0]
        assert "bad" not in shown["same"][1] and "good" not in shown["same"][1]
        assert "SLOWER" in shown["slower"][0] and "bad" in shown["slower"][1]
        head_vs_base = page.locator("article.comparison td.verdict-cell")
        assert all("FASTER" in t for t in head_vs_base.all_inner_texts()) and head_vs_base.count() == 2
        assert not errors, errors
    finally:
        page.close()


def test_library_ceilings_in_their_own_section_in_the_browser(browser: Any, tmp_path: Path) -> None:
    """A run with a ceiling: its own section with the series name and the ratio; the headline's gap is the same."""
    from wfbench_core.record.results import CEILING_OK, CeilingResult, SideStats

    run = synth_run(0)
    axpy = run.case("axpy_f64")
    us = axpy.timing.warpforth.median_us / 4
    ceiling = CeilingResult(library="cuBLAS", routine="cublasDaxpy", package="cupy-cuda13x", library_version="14.0.1",
                            status=CEILING_OK, stats=SideStats(us, us, 0.0, 0.0, 1, (us,)), ratio=4.0)
    add_run(tmp_path / "h", attrs.evolve(run, cases=tuple(attrs.evolve(c, ceiling=ceiling) if c.id == "axpy_f64"
                                                          else c for c in run.cases)))
    page, errors, _ = _open(browser, build_site(History.open(tmp_path / "h"), tmp_path / "site"))
    try:
        card = page.locator("article.ceilings")
        assert page.locator("h2", has_text="Library ceilings (never part of the gap)").count() == 1
        row = card.locator("tbody tr")
        assert row.count() == 1 and row.locator("td").first.inner_text() == "axpy_f64/v1/ceiling"
        assert "4.00×" in row.inner_text() and "cupy-cuda13x 14.0.1" in row.inner_text()
        assert "ceiling" not in page.locator("#headline").inner_text().lower()
        assert not errors, errors
    finally:
        page.close()


def synth_sweep(run: RunResult, case_id: str = "axpy_f64", created: str = "") -> Any:
    """A sweep of ``case_id`` made from a run's result of it: 4096 elements timed in graph mode (both sides
    launch-bound in events mode, that timing kept beside it), 2^20 in events mode."""
    from wfbench_core.record.sweep_record import SWEEP_KIND, SWEEP_SCHEMA, SweepPoint, SweepResult

    c = run.case(case_id)
    assert c.timing is not None
    small = attrs.evolve(c, timing=attrs.evolve(c.timing, timing_mode="graph", gap=c.timing.gap * 1.2))
    points = (SweepPoint({"N": 4096, "blocks": 16}, small, True, True, events=c.timing),
              SweepPoint({"N": 1 << 20, "blocks": 4096}, c))
    return SweepResult(kind=SWEEP_KIND, sweep_schema=SWEEP_SCHEMA, wfbench_version=run.wfbench_version,
                       suite_version=run.suite_version, created=created or run.created, case_id=case_id,
                       case_version=c.version, fingerprint=c.fingerprint, axis="N", protocol=run.protocol,
                       environment=run.environment, warpforthc=run.warpforthc, cuda_compiler=run.cuda_compiler,
                       points=points, source=run.source)


def test_the_newest_sweep_of_each_case_in_the_browser(browser: Any, tmp_path: Path) -> None:
    """Sweeps stored in the history get their own section: the newest one of each case, its chart and table;
    the series, the headline and its geomean are the runs' alone."""
    from wfbench_core.review.sweeps import add_sweep

    runs = make_history(tmp_path / "history")
    before = build_data(History.open(tmp_path / "history"))
    old, new = runs["h200-1"], runs[f"h200-{NEWEST}"]
    add_sweep(tmp_path / "history", synth_sweep(old))
    add_sweep(tmp_path / "history", synth_sweep(new))
    add_sweep(tmp_path / "history", synth_sweep(new, "scale_i64"))
    h = History.open(tmp_path / "history")
    data = build_data(h)
    assert [(w["case"], w["created"]) for w in data["sweeps"]] == [("axpy_f64", new.created),
                                                                   ("scale_i64", new.created)]
    assert data["headline"] == before["headline"] and data["series"] == before["series"]
    index = build_site(h, tmp_path / "site")
    for scheme in ("light", "dark"):
        page, errors, _ = _open(browser, index, scheme)
        try:
            cards = page.locator("#sweeps article.sweep")
            assert page.locator("#sweeps").is_visible() and cards.count() == 2
            axpy = page.locator("#sweep-axpy_f64")
            rows = axpy.locator("table.sweep-points tbody tr")
            assert rows.count() == 2
            gap = new.case("axpy_f64").timing.gap  # type: ignore[union-attr]
            assert rows.nth(0).locator("td").all_inner_texts()[3:6] == [f"{gap * 1.2:.3f}×", "graph", "WF+CUDA"]
            assert rows.nth(1).locator("td").all_inner_texts()[3:6] == [f"{gap:.3f}×", "events", "–"]
            drawn = page.evaluate("window.wfbenchDashboard.charts.filter((c) => c.canvas.classList.contains("
                                  "'chart-sweep')).map((c) => c.data.datasets[0].data.length)")
            assert drawn == [2, 2]
            assert not errors, errors
        finally:
            page.close()
