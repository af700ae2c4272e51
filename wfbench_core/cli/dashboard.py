"""``wfbench dashboard``: the static site of a history."""

from __future__ import annotations

from pathlib import Path

import click

from wfbench_core.cli.history import history_option, warn_problems
from wfbench_core.errors import WfbenchError

__all__ = ["dashboard_cmd"]  # internal, not the plugin API


@click.command("dashboard")
@history_option
@click.option("--out", "-o", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="Site directory (index.html and its assets are written there).")
@click.option("--title", default=None, help="Page title [WarpForth vs CUDA].")
@click.option("--screenshot", "png", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Also save a full-page PNG of it (needs playwright and a system Chromium).")
@click.option("--dark", is_flag=True, help="Screenshot in the dark colour scheme.")
@click.option("--chromium", default=None, metavar="PATH",
              help="Chromium or Chrome for --screenshot [$WFBENCH_CHROMIUM, else chromium, chromium-browser, "
                   "google-chrome-stable, google-chrome on PATH].")
@click.option("--headline-gpu", default=None, metavar="NAME",
              help="GPU whose canonical series the headline follows, as results name it (e.g. 'NVIDIA H200') "
                   "[the GPU of the newest canonical run].")
def dashboard_cmd(history_dir: Path, out: Path, title: str | None, png: Path | None, dark: bool,
                  chromium: str | None, headline_gpu: str | None) -> None:
    """Write the static dashboard of a history (works from file://, no network)."""
    from wfbench_core.dashboard import build_site, screenshot
    from wfbench_core.review.history import History

    h = History.open(history_dir)
    warn_problems(h.problems)
    index = build_site(h, out, title=title, headline_gpu=headline_gpu)
    click.echo(f"dashboard: {index} ({len(h.series)} series from {len(h.runs)} runs)")
    if png is not None:
        errors = screenshot(index, png, dark=dark, chromium=chromium)
        click.echo(f"screenshot: {png}")
        if errors:
            raise WfbenchError(f"{index}: the page reported errors in the browser: {'; '.join(errors)}")
