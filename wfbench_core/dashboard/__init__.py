"""The static dashboard: one HTML page, its script and style, and the vendored Chart.js.

Everything the page shows is embedded in it as JSON, so it works from ``file://`` with no network and no
server. It leads with the latest geometric-mean gap over the stable P0 cases of each hardware/toolchain
platform and the per-case gaps of that run, then one chart group per series (never a mixed one): gap,
WarpForth time and CUDA time over the runs, with the 5th-95th percentile band of the samples, unstable points
marked, commit and CI-run links, and the series' signature.
"""

from __future__ import annotations

import datetime as _dt
import html
import json
import shutil
from importlib import resources
from pathlib import Path
from typing import Any, Optional

from wfbench_core import __version__
from wfbench_core.errors import WfbenchError
from wfbench_core.fsutil import atomic_write
from wfbench_core.history import History, Point, Series, git_links, point_order, utc_sortable
from wfbench_core.results import MODE_AA
from wfbench_core.stats import geomean

ASSETS = ("chart.umd.js", "LICENSE-chart.js.md", "app.js", "style.css")


def _short(created: str) -> str:
    try:
        when = _dt.datetime.fromisoformat(created.replace("Z", "+00:00"))
    except ValueError:
        return created
    return when.astimezone(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M")


def _point(p: Point) -> dict[str, Any]:
    commit_url, run_url = git_links(p)
    short = _short(p.created)
    return {
        "x": f"{p.git_commit[:7]} · {short[5:10]}" if p.git_commit else short,
        "created": p.created, "date": short, "run": p.run, "status": p.status,
        "commit": p.git_commit, "commit_url": commit_url, "run_url": run_url, "label": p.label,
        "warpforthc": p.warpforthc_version,
        "gap": p.gap, "gap_lo": p.gap_lo, "gap_hi": p.gap_hi, "gap_mad": p.gap_mad,
        "wf": p.wf.median_us, "wf_lo": p.wf.lo_us, "wf_hi": p.wf.hi_us, "wf_mad": p.wf.mad_us, "wf_p95": p.wf.p95_us,
        "cuda": p.cuda.median_us, "cuda_lo": p.cuda.lo_us, "cuda_hi": p.cuda.hi_us, "cuda_mad": p.cuda.mad_us,
        "cuda_p95": p.cuda.p95_us, "noise": p.noise, "samples": p.samples,
    }


def _signature(s: Series) -> list[list[str]]:
    k = s.key
    wfc = sorted({p.warpforthc_version for p in s.points})
    sig = [
        ["GPU", f"{k.gpu_name} (compute {k.compute_capability})"],
        ["CUDA compiler", f"{k.cuda_compiler} {k.cuda_compiler_version} {' '.join(k.cuda_flags)}".rstrip()],
        ["case", f"{k.case_id} v{k.case_version}, fingerprint {k.fingerprint[:12]}"],
        ["CUDA baseline", f"sha256 {k.cuda_source_sha256[:12]}"],
        ["timing", "A/A: CUDA against itself (the method's floor)" if k.mode == MODE_AA else "paired, interleaved"],
        ["warpforthc", ", ".join(wfc) if len(wfc) <= 3
         else f"{len(wfc)} builds, latest {s.points[-1].warpforthc_version}"],
        ["series", s.id],
    ]
    if k.compiler_label:
        sig.insert(5, ["compiler label", k.compiler_label])
    return sig


def _platform_id(s: Series) -> str:
    return "|".join(s.key.platform)


def build_data(history: History, *, title: str = "WarpForth vs CUDA") -> dict[str, Any]:
    """Everything the page shows, as plain JSON-able data."""
    series = list(history.series.values())
    platforms: dict[str, dict[str, Any]] = {}
    for s in series:
        pid = _platform_id(s)
        plat = platforms.setdefault(pid, {"id": pid, "series": []})
        plat["series"].append(s)
        k = s.key
        plat.update(gpu=k.gpu_name, cc=k.compute_capability, mode=k.mode, label=k.compiler_label,
                    cuda=f"{k.cuda_compiler} {k.cuda_compiler_version} {' '.join(k.cuda_flags)}".rstrip())

    out_platforms = []
    out_series = []
    for plat in platforms.values():
        members: list[Series] = plat.pop("series")
        # the platform's latest run: the newest run file any of its series has a point from
        latest_run = max((p for s in members for p in s.points), key=point_order).run
        rows = []
        for s in members:
            here = [p for p in s.points if p.run == latest_run]
            if not here:
                continue
            p = here[-1]
            prev = [q for q in s.points if q.stable and q.run != latest_run and point_order(q) < point_order(p)]
            rows.append({
                "series": s.id, "case": s.key.case_id, "version": s.key.case_version,
                "priority": p.priority, "gap": p.gap, "gap_lo": p.gap_lo, "gap_hi": p.gap_hi, "wf": p.wf.median_us,
                "cuda": p.cuda.median_us, "noise": p.noise, "status": p.status,
                "change": (p.gap / prev[-1].gap - 1.0) if prev and p.stable else None,
            })
        rows.sort(key=lambda r: (r["priority"], r["case"]))
        stable_p0 = [r["gap"] for r in rows if r["priority"] == "P0" and r["status"] == "ok"]
        anchor = next(p for s in members for p in s.points if p.run == latest_run)
        commit_url, run_url = git_links(anchor)
        order = sorted(members, key=lambda s: (not any(p.run == latest_run for p in s.points),
                                                s.key.case_id, -s.key.case_version, s.id))
        out_platforms.append({
            **plat,
            "latest": {
                "run": latest_run, "created": anchor.created, "date": _short(anchor.created),
                "commit": anchor.git_commit, "commit_url": commit_url, "run_url": run_url,
                "warpforthc": anchor.warpforthc_version,
                "geomean": geomean(stable_p0) if stable_p0 else None, "geomean_cases": len(stable_p0),
                "cases": rows,
            },
            "series": [s.id for s in order],
        })
        for s in order:
            out_series.append({
                "id": s.id, "platform": plat["id"], "case": s.key.case_id, "version": s.key.case_version,
                "mode": s.key.mode, "label": s.key.compiler_label,
                "priority": s.points[-1].priority,
                "current": any(p.run == latest_run for p in s.points),
                "signature": _signature(s),
                "points": [_point(p) for p in s.points],
            })
    # newest platform first; the canonical paired series lead, base/head comparisons (compiler labels)
    # follow, and A/A (the method's floor) comes last
    out_platforms.sort(key=lambda p: utc_sortable(p["latest"]["created"]), reverse=True)
    out_platforms.sort(key=lambda p: (p["mode"] == MODE_AA, bool(p["label"])))
    return {
        "title": title,
        "generated": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "wfbench_version": __version__,
        "runs": len(history.runs),
        "problems": [str(p) for p in history.problems],
        "platforms": out_platforms,
        "series": _order_series(out_series, out_platforms),
    }


def _order_series(series: list[dict[str, Any]], platforms: list[dict[str, Any]]) -> list[dict[str, Any]]:
    by_id = {s["id"]: s for s in series}
    return [by_id[sid] for p in platforms for sid in p["series"]]


def _embed(data: dict[str, Any]) -> str:
    text = json.dumps(data, allow_nan=False, separators=(",", ":"))
    # inside <script>: no "</" (ends the element) and no "<!--"
    return text.replace("</", "<\\/").replace("<!--", "<\\!--")


def render_page(data: dict[str, Any]) -> str:
    template = resources.files(__package__).joinpath("template.html").read_text(encoding="utf-8")
    return (template.replace("{{title}}", html.escape(data["title"]))
            .replace("{{data}}", _embed(data)))


def build_site(history: History, out: str | Path, *, title: Optional[str] = None) -> Path:
    """Write the site into ``out`` (created if needed); returns the path of index.html."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise WfbenchError(f"{out}: exists and is not a directory; --out takes the site directory")
    data = build_data(history, title=title or "WarpForth vs CUDA")
    out.mkdir(parents=True, exist_ok=True)
    pkg = resources.files(__package__)
    for name in ASSETS:
        with resources.as_file(pkg.joinpath(name)) as src:
            tmp = out / f".{name}.tmp"
            shutil.copyfile(src, tmp)
            tmp.replace(out / name)
    index = out / "index.html"
    atomic_write(index, render_page(data))
    return index


def find_chromium(explicit: Optional[str] = None) -> str:
    """A Chromium to drive: ``explicit``, ``$WFBENCH_CHROMIUM``, or ``chromium`` on PATH."""
    import os

    found = explicit or os.environ.get("WFBENCH_CHROMIUM") or shutil.which("chromium") \
        or shutil.which("chromium-browser")
    if not found:
        raise WfbenchError("no Chromium found for the screenshot; install it (Debian: apt-get install chromium) "
                           "or name it with --chromium PATH / $WFBENCH_CHROMIUM")
    return found


def screenshot(index: Path, png: Path, *, width: int = 1280, dark: bool = False,
               chromium: Optional[str] = None) -> list[str]:
    """Open the page in headless Chromium, save a full-page PNG; returns console errors, if any."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        raise WfbenchError("the screenshot needs the Python package 'playwright' (pip install playwright); "
                           "its browser download is not needed, a system Chromium is used") from None
    path = find_chromium(chromium)
    errors: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=path)
        try:
            page = browser.new_page(viewport={"width": width, "height": 900},
                                    color_scheme="dark" if dark else "light")
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(Path(index).resolve().as_uri())
            page.wait_for_function("window.wfbenchDashboard !== undefined")
            png.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(png), full_page=True)
        finally:
            browser.close()
    return errors
