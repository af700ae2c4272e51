"""Case plugins survive packaging: ``wfbench new-case`` makes a package whose wheel carries its kernels, a
wheel without them is one clear warning, a transport refuses to ship a plugin whose installed files are
missing, and the example plugin installs offline with a venv's own setuptools.

Wheels are built by the real pip and setuptools (``--no-build-isolation``: offline) and installed into a
fresh virtual environment that sees wfbench only through this environment's site-packages.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from wfbench_core.cli import main

ROOT = Path(__file__).resolve().parent.parent
PURELIB = sysconfig.get_paths()["purelib"]


def pip(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([sys.executable, "-m", "pip", "--disable-pip-version-check", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc


def scaffold(tmp: Path, name: str = "my_scale") -> Path:
    r = CliRunner().invoke(main, ["new-case", name, "--dir", str(tmp)])
    assert r.exit_code == 0, r.output
    return tmp / f"wfbench-{name.replace('_', '-')}"


def wheel_of(package: Path, out: Path) -> Path:
    """The wheel pip builds from a copy of ``package`` (so the package folder gains no build files)."""
    work = out / "src"
    shutil.copytree(package, work)
    pip("wheel", "--no-deps", "--no-build-isolation", "-w", str(out), str(work), cwd=out)
    (wheel,) = out.glob("*.whl")
    return wheel


def fresh_venv(tmp: Path) -> tuple[Path, Path]:
    """(python, site-packages) of a new venv that reaches wfbench through this environment's site-packages."""
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    (site / "zz_wfbench_dev.pth").write_text(f"import site; site.addsitedir({PURELIB!r})\n")
    return python, site


def run(python: Path, *args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "WFBENCH_PLUGINS")}
    return subprocess.run([str(python), *args], cwd=cwd, capture_output=True, text=True, timeout=300,
                          env={**clean, **(env or {})})


def test_a_scaffolded_case_installs_as_a_wheel_with_its_kernels(tmp_path: Path) -> None:
    package = scaffold(tmp_path)
    wheel = wheel_of(package, tmp_path / "dist")
    names = zipfile.ZipFile(wheel).namelist()
    assert {"wfbench_my_scale/my_scale.forth", "wfbench_my_scale/my_scale.cu",
            "wfbench_my_scale/__init__.py"} <= set(names)
    python, site = fresh_venv(tmp_path)
    pip("install", "--no-deps", "--target", str(site), str(wheel), cwd=tmp_path)
    elsewhere = tmp_path / "elsewhere"  # not the package folder: the installed copy is what is imported
    elsewhere.mkdir()
    listed = run(python, "-m", "wfbench_core", "list", cwd=elsewhere)
    assert listed.returncode == 0, listed.stderr
    (row,) = [line for line in listed.stdout.splitlines() if line.startswith("my_scale ")]
    assert row.endswith("my_scale (wfbench-my-scale)") and "P1" in row, row
    assert "warning" not in listed.stderr
    checked = run(python, "-c", "import wfbench_my_scale as m; from wfbench_core.testing import check_case; "
                                "check_case(m.CASE); print(m.__file__)", cwd=elsewhere)
    assert checked.returncode == 0, checked.stderr
    assert checked.stdout.strip().startswith(str(site))
    tests = run(python, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(package / "tests"), cwd=elsewhere)
    assert tests.returncode == 0 and "1 passed" in tests.stdout, tests.stdout + tests.stderr


def test_a_wheel_without_its_kernels_is_one_warning_naming_the_fix(tmp_path: Path) -> None:
    package = scaffold(tmp_path)
    toml = package / "pyproject.toml"
    toml.write_text(toml.read_text().split("# The kernel files are package data")[0])  # as the README once said
    wheel = wheel_of(package, tmp_path / "dist")
    assert not any(n.endswith((".cu", ".forth")) for n in zipfile.ZipFile(wheel).namelist())
    python, site = fresh_venv(tmp_path)
    pip("install", "--no-deps", "--target", str(site), str(wheel), cwd=tmp_path)
    listed = run(python, "-m", "wfbench_core", "list", cwd=tmp_path)
    assert listed.returncode == 0 and "my_scale" not in listed.stdout
    (warning,) = [line for line in listed.stderr.splitlines() if "my_scale" in line]
    assert "kernel file my_scale.forth is not installed beside the module; declare the kernel files as package " \
           "data" in warning, listed.stderr


SHIP = """
import sys
from wfbench_core.errors import WfbenchError
from wfbench_core.discover.registry import Registry
from wfbench_transports import wheels

reg = Registry.load()
assert "my_scale" in reg.cases, sorted(reg.cases)
try:
    wheels.prepare(reg, ["my_scale"])
except WfbenchError as exc:
    print(exc)
    sys.exit(2)
notes = []
wheels.prepare(reg, ["axpy_f64"], progress=notes.append)  # not asked for: left behind, said so
print("\\n".join(notes))
"""


@pytest.mark.parametrize("how", ["kernels not package data", "an installed kernel file deleted"])
def test_a_transport_refuses_a_plugin_whose_installed_files_are_missing(tmp_path: Path, how: str) -> None:
    """The case loads here (its module is imported from the source folder, which has the kernels) while the
    installed distribution, which is what gets shipped, lacks them."""
    package = scaffold(tmp_path)
    if how == "kernels not package data":
        toml = package / "pyproject.toml"
        toml.write_text(toml.read_text().split("# The kernel files are package data")[0])
    wheel = wheel_of(package, tmp_path / "dist")
    target = tmp_path / "installed"
    pip("install", "--no-deps", "--target", str(target), str(wheel), cwd=tmp_path)
    if how == "an installed kernel file deleted":
        (target / "wfbench_my_scale" / "my_scale.cu").unlink()
    env = {"PYTHONPATH": os.pathsep.join([str(package), str(target)])}
    proc = run(Path(sys.executable), "-c", SHIP, cwd=tmp_path, env=env)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    line = proc.stdout.strip()
    assert "\n" not in line and line.startswith("plugin wfbench-my-scale: installed files are missing (")
    assert "wfbench_my_scale/my_scale.cu" in line and "declare its kernel files as package data" in line


def test_the_example_plugin_installs_offline_with_a_venvs_own_setuptools(tmp_path: Path) -> None:
    """examples/broken-cases/README.md: pip install --no-build-isolation --no-deps ./examples/broken-cases"""
    import setuptools

    assert "--no-build-isolation --no-deps ./examples/broken-cases" in (
        ROOT / "examples" / "broken-cases" / "README.md").read_text()
    wheel = wheel_of(ROOT / "examples" / "broken-cases", tmp_path / "dist")
    names = zipfile.ZipFile(wheel).namelist()
    assert any(n.endswith(".forth") for n in names) and any(n.endswith(".cu") for n in names)
    print(f"built with setuptools {setuptools.__version__}")


def test_the_readme_shows_the_scaffolded_case(tmp_path: Path) -> None:
    """The README's plugin section is the package `wfbench new-case my_scale` writes (comments aside), so the
    example it shows is one that installs, loads and passes check_case (the tests above)."""
    import ast
    import re

    text = (ROOT / "README.md").read_text()
    section = text[text.index("## Writing a case plugin"):text.index("## Layout")]
    blocks = dict(re.findall(r"```(\w+)\n(.*?)```", section, re.S))
    package = scaffold(tmp_path)

    def code(s: str, comment: str) -> list[str]:
        return [ln.rstrip() for ln in s.splitlines() if ln.strip() and not ln.lstrip().startswith(comment)]

    pyproject = code((package / "pyproject.toml").read_text(), "#")
    assert set(code(blocks["toml"], "#")) <= set(pyproject)
    assert "[tool.setuptools.package-data]" in blocks["toml"]
    for lang, name, comment in (("forth", "my_scale.forth", "\\ "), ("cuda", "my_scale.cu", "//")):
        assert code(blocks[lang], comment) == code((package / "wfbench_my_scale" / name).read_text(), comment), lang
    ast.parse(blocks["python"])
    for needed in ("resource_text(__name__, \"my_scale.forth\")", "reference=", "wfbench_register_cases"):
        assert needed in blocks["python"]


@pytest.mark.parametrize("name, says", [("My-Case", "a case ID is lower-case letters, digits and '_'"),
                                        ("my_scale", "already exists; choose another name or folder")])
def test_new_case_refuses_a_bad_name_or_an_existing_folder_in_one_line(tmp_path: Path, name: str, says: str) -> None:
    scaffold(tmp_path)
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    r = CliRunner().invoke(main, ["new-case", name, "--dir", str(tmp_path)])
    assert r.exit_code == 2 and says in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before


def test_new_case_hint_names_the_folder_not_a_package_index_name(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Run in the folder it writes to, new-case's hint is ``pip install ./wfbench-my-scale``: without the ./ pip
    would look for a package of that name in the index, where there is none."""
    monkeypatch.chdir(tmp_path)
    r = CliRunner().invoke(main, ["new-case", "my_scale"])
    assert r.exit_code == 0, r.output
    assert "pip install ./wfbench-my-scale;" in r.output, r.output
    r = CliRunner().invoke(main, ["new-case", "other_scale", "--dir", str(tmp_path / "sub")])
    assert f"pip install {tmp_path / 'sub' / 'wfbench-other-scale'};" in r.output, r.output
