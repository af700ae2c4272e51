"""The README's set-up block, run as written in a fresh virtual environment, on a machine without a GPU.

The block's commands are taken from the README and run one by one by a shell, unchanged, in a stand-in
WarpForth checkout with a copy of this repository beside it as ``../wfbench`` (what a clone gives). The fresh
venv sees this environment's installed packages through a ``.pth`` file, so pip finds the dependencies
installed and builds only wfbench itself (from the clone, with build isolation as on a newcomer's machine).
Without a GPU the last command must end with the one clear no-GPU line (exit 3), before building anything.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]


def setup_block() -> list[str]:
    text = (ROOT / "README.md").read_text()
    section = text[text.index("## Set-up"):]
    (block,) = re.findall(r"```bash\n(.*?)\n```", section, re.S)[:1]
    return [ln for ln in block.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]


def test_the_setup_block_is_two_commands_and_installs_from_this_repository() -> None:
    install, main_job = setup_block()
    assert install.startswith("pip install ") and "wfbench" in install
    assert not re.fullmatch(r'pip install "?wfbench(\[[a-z,]+\])?"?', install), \
        "wfbench is not on the package index: the set-up installs it from this repository"
    assert main_job.startswith("wfbench run ")


def test_the_readme_setup_runs_as_written_and_says_there_is_no_gpu(tmp_path: Path) -> None:
    from wfbench_core.gpu.device import gpu_unavailable_reason

    if gpu_unavailable_reason() is None:
        pytest.skip("this machine has a GPU: the set-up would start building compilers")
    clone = tmp_path / "wfbench"
    # what a clone gives: no venv, no build folders or tool caches. Other workers write some of them while this
    # copies, and a file that vanishes between listing and copying fails the copy: mypy's and ruff's caches
    # (tests/test_static.py), setuptools' build/ in examples/broken-cases, whose bdist folder a wheel build
    # removes when it is done (tests/test_plugin_install.py, tests/test_plugin_packaging.py)
    shutil.copytree(ROOT, clone, ignore=shutil.ignore_patterns(".venv", ".git", "*.egg-info", "__pycache__",
                                                                "node_modules", ".pytest_cache", ".mypy_cache",
                                                                ".ruff_cache", "build", "dist"))
    checkout = tmp_path / "warpforth"
    checkout.mkdir()
    subprocess.run(["git", "init", "-q", str(checkout)], check=True)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    site = next((venv / "lib").glob("python*/site-packages"))
    (site / "_this_environment.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    env = {**os.environ, "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}", "VIRTUAL_ENV": str(venv),
           "PIP_DISABLE_PIP_VERSION_CHECK": "1", "WFBENCH_CACHE_DIR": str(tmp_path / "cache")}
    env.pop("PYTHONPATH", None)
    install, main_job = setup_block()
    done = subprocess.run(["bash", "-c", install], cwd=checkout, env=env, capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    installed = subprocess.run([str(venv / "bin" / "python"), "-c", "import wfbench_core; print(wfbench_core.__file__)"],
                               capture_output=True, text=True, cwd=tmp_path, env=env)
    assert installed.stdout.startswith(str(site)), installed  # the clone's wfbench, installed into the fresh venv
    ran = subprocess.run(["bash", "-c", main_job], cwd=checkout, env=env, capture_output=True, text=True,
                         timeout=300)
    assert ran.returncode == 3, ran.stderr
    assert ran.stderr.strip().splitlines() == [
        "wfbench: error: no NVIDIA GPU or CUDA driver found on this machine; run it where the GPU is: --transport ssh "
        "or --transport vast ('wfbench transports' lists them)"], ran.stderr
    assert not (tmp_path / "cache").exists()  # nothing was built
