"""A headless Chromium or Chrome for the dashboard's screenshot (``wfbench dashboard --screenshot``)."""

from __future__ import annotations

import shutil
from pathlib import Path

from wfbench_core.errors import WfbenchError

__all__ = ["BROWSER_ENV", "BROWSER_NAMES", "find_browser", "screenshot"]  # internal, not the plugin API

BROWSER_ENV = "WFBENCH_CHROMIUM"
# Debian's Chromium, then Google Chrome (preinstalled on GitHub's Ubuntu runners, where the apt package
# "chromium" is only a stub that asks for a snap)
BROWSER_NAMES = ("chromium", "chromium-browser", "google-chrome-stable", "google-chrome")


def _browser_version(path: str) -> str | None:
    """``path --version`` when it runs and names a Chromium or Chrome; None for a stub or anything else."""
    import subprocess

    try:
        res = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    text = res.stdout.strip().splitlines()[-1] if res.stdout.strip() else ""
    return text if res.returncode == 0 and ("Chromium" in text or "Chrome" in text) else None


def find_browser(explicit: str | None = None) -> tuple[str, str]:
    """A Chromium-family browser to drive headless, as (path, version line).

    ``explicit`` or ``$WFBENCH_CHROMIUM`` when given (it must work); otherwise the first of
    :data:`BROWSER_NAMES` on PATH that answers ``--version`` as a Chromium or Chrome.
    """
    import os

    named = explicit or os.environ.get(BROWSER_ENV)
    if named:
        path = shutil.which(named) or named
        version = _browser_version(path)
        if version is None:
            raise WfbenchError(f"{named}: does not run as a Chromium or Chrome ('{named} --version' failed); "
                               f"name a working one with --chromium PATH / ${BROWSER_ENV}")
        return path, version
    tried = []
    for name in BROWSER_NAMES:
        found = shutil.which(name)
        if found is None:
            continue
        version = _browser_version(found)
        if version is not None:
            return found, version
        tried.append(found)
    stubs = f" ({', '.join(tried)} did not run: a snap stub?)" if tried else ""
    raise WfbenchError(f"no Chromium or Chrome found{stubs}; install one (Debian: apt-get install chromium; "
                       f"Ubuntu: Google Chrome) or name it with --chromium PATH / ${BROWSER_ENV}")


def screenshot(index: Path, png: Path, *, width: int = 1280, dark: bool = False,
               chromium: str | None = None) -> list[str]:
    """Open the page in headless Chromium or Chrome, save a full-page PNG; returns console errors, if any."""
    try:
        from playwright.sync_api import Error as PlaywrightError
        from playwright.sync_api import sync_playwright
    except ImportError:
        raise WfbenchError("the screenshot needs the Python package 'playwright' (pip install playwright); "
                           "its browser download is not needed, a system Chromium is used") from None
    path, _version = find_browser(chromium)
    errors: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=path)
        try:
            page = browser.new_page(viewport={"width": width, "height": 900},
                                    color_scheme="dark" if dark else "light")
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(Path(index).resolve().as_uri())
            try:
                page.wait_for_function("window.wfbenchDashboard !== undefined", timeout=30_000)
            except PlaywrightError:
                raise WfbenchError(f"{index}: the page did not finish drawing in {path} "
                                   f"({'; '.join(errors) or 'no error reported'}); no screenshot written") from None
            png.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(png), full_page=True)
        finally:
            browser.close()
    return errors
