"""One execution on an SSH host: the work directory and everything done in it.

Create it (``mktemp -d``), upload the bundle, the wheels and ``remote_setup.py``, choose the interpreter
(``python`` when it has wfbench's GPU stack, else a venv kept on the host), validate or execute the bundle,
fetch the result, and always remove the directory (a running executor is stopped first).
"""

from __future__ import annotations

import re
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from wfbench_core.errors import NoGpuError, WfbenchError
from wfbench_transports.ssh_host import Completed, Progress, RemoteTimeout, SshError, SshHost

if TYPE_CHECKING:  # the request and wheel building load when a run starts, not for listing
    from paramiko import SFTPClient

    from wfbench_core.record.request import ExecuteRequest
    from wfbench_transports import wheels as _wheels

__all__ = ["EXIT_NO_GPU", "GPU_MODULES", "WORK_PREFIX", "RemoteRun", "put_regular"]  # internal, not the plugin API

#: What wfbench's ``gpu`` extra provides, by import name: a Python that imports these is reused.
GPU_MODULES = ("numba.cuda", "cuda.core", "pynvml")
WORK_PREFIX = "wfbench-run."
EXIT_NO_GPU = 3


def put_regular(sftp: Any, local: Path, remote: str) -> None:
    """Upload ``local`` only as the regular file it is: opened without following a symbolic link, checked on
    the open descriptor (nothing can swap a link in between); else one line naming it."""
    import os
    import stat

    try:
        fd = os.open(local, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError as exc:
        raise SshError(f"{local}: not uploaded ({exc.strerror}; a symbolic link is never followed)") from None
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            raise SshError(f"{local}: not a regular file; it was not uploaded")
        sftp.putfo(fh, remote)


class RemoteRun:
    """One execution on the host: the work directory and everything done in it."""

    def __init__(self, t: SshHost, progress: Progress) -> None:
        self.t = t
        self.progress = progress
        self.work = ""
        self.python = t.cfg["python"]
        self.python_path = ""
        self.python_version = ""
        self._running = False

    def path(self, *parts: str) -> str:
        return str(PurePosixPath(self.work, *parts))

    @property
    def site(self) -> str:
        return self.path("site")

    @property
    def result_path(self) -> str:
        return self.path("result.json")

    @property
    def pidfile(self) -> str:
        return self.path("pid")

    def env(self, python: str) -> list[str]:
        argv = ["env", f"PYTHONPATH={self.site}", "PYTHONUNBUFFERED=1"]
        if self.t.cfg["gpu"]:  # numbered as nvidia-smi numbers them
            argv += ["CUDA_DEVICE_ORDER=PCI_BUS_ID", f"CUDA_VISIBLE_DEVICES={self.t.cfg['gpu']}"]
        return [*argv, python]

    def run(self, argv: Sequence[str], *, timeout: float, stream: Progress | None = None,
            cwd: str | None = None) -> Completed:
        """Run a command of this run; until it returns normally, :meth:`remove` stops it first."""
        self._running = True
        done = self.t.run(argv, timeout=self.t.bounded(timeout), stream=stream, pidfile=self.pidfile, cwd=cwd)
        self._running = False
        return done

    # -- steps ------------------------------------------------------------------------------------

    def create(self) -> None:
        base = self.t.cfg["remote_tmp"]
        argv = ["mktemp", "-d", f"{base.rstrip('/')}/{WORK_PREFIX}XXXXXXXX"] if base else \
            ["mktemp", "-d", "-t", f"{WORK_PREFIX}XXXXXXXX"]
        done = self.t.check(argv, timeout=60, what="creating the work directory")
        work = done.stdout.strip()
        if not work.startswith("/") or "\n" in work or not PurePosixPath(work).name.startswith(WORK_PREFIX):
            raise SshError(f"{self.t.label}: mktemp returned {work!r}, not a new work directory")
        self.work = work
        if ":" in work:
            raise SshError(f"{self.t.label}: the work directory {work} contains ':', which PYTHONPATH cannot hold; "
                           f"choose another remote_tmp")

    def upload(self, bundle: Path, shipment: _wheels.Shipment) -> None:
        from wfbench_core.compiling.bundle import shipped_files

        files = shipped_files(bundle)  # the manifests and what they name, each a regular file (lstat)
        self.progress(f"{self.t.label}: uploading the bundle and {len(shipment.wheels)} wheels to {self.work}")
        try:
            sftp = self.t.open_sftp()
        except Exception as exc:
            raise SshError(f"{self.t.label}: SFTP is not available ({exc}); enable sshd's sftp subsystem") from None
        try:
            for rel in files:
                remote = self.path("bundle", *PurePosixPath(rel).parts)
                self.mkdirs(sftp, str(PurePosixPath(remote).parent))
                put_regular(sftp, bundle / rel, remote)
            self.mkdirs(sftp, self.path("wheels"))
            for wheel in shipment.wheels:
                sftp.put(str(wheel), self.path("wheels", wheel.name))
            sftp.put(str(Path(__file__).with_name("remote_setup.py")), self.path("remote_setup.py"))
        except OSError as exc:
            raise SshError(f"{self.t.label}: upload to {self.work} failed: {exc.strerror or exc}") from None
        finally:
            sftp.close()

    def mkdirs(self, sftp: SFTPClient, remote: str) -> None:
        """Create ``remote`` and its missing parents, inside the work directory."""
        parts = PurePosixPath(remote).relative_to(self.work).parts
        cur = PurePosixPath(self.work)
        for part in parts:
            cur = cur / part
            try:
                sftp.stat(str(cur))
            except OSError:
                sftp.mkdir(str(cur))

    def _probe(self, python: str, shipment: _wheels.Shipment) -> dict[str, Any] | None:
        argv = [*self.env(python), self.path("remote_setup.py"), "probe"]
        for m in GPU_MODULES:
            argv += ["--module", m]
        for req in shipment.host_requirements:
            argv += ["--dist", re.split(r"[\s<>=!~;\[]", req, maxsplit=1)[0]]
        done = self.run(argv, timeout=self.t.cfg["setup_timeout"])
        if done.rc == 127:
            return None
        if done.rc != 0:
            raise SshError(f"{self.t.label}: checking python {python!r} failed (exit {done.rc}): {done.error_line()}")
        import json

        try:
            report: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
            return report
        except (ValueError, IndexError):
            raise SshError(f"{self.t.label}: python {python!r} gave no environment report") from None

    def _missing(self, report: dict[str, Any]) -> list[str]:
        missing = [f"{m} ({err})" for m, err in report["modules"].items() if err]
        missing += [d for d, v in report["dists"].items() if v is None]
        core = report.get("wfbench_core")
        if not core or not core.startswith(self.site):
            missing.append(f"wfbench from {self.site} (imports {core or report.get('wfbench_core_error')})")
        return missing

    def prepare_python(self, shipment: _wheels.Shipment) -> None:
        t, base = self.t, self.t.cfg["python"]
        wheels = [self.path("wheels", w.name) for w in shipment.wheels]
        done = self.run([base, self.path("remote_setup.py"), "install", self.site, *wheels],
                        timeout=t.cfg["setup_timeout"])
        if done.rc == 127:
            raise SshError(f"{t.label}: python {base!r} not found on the host; pass python=PATH")
        if done.rc != 0:
            raise SshError(f"{t.label}: installing wfbench into {self.site} failed: {done.error_line()}")
        mode = t.cfg["env"]
        report = self._probe(base, shipment)
        missing = self._missing(report) if report else [f"python {base!r}"]
        if mode != "venv" and report is not None and not missing:
            return self._use(base, report)
        why = ", ".join(missing) if mode != "venv" else ""
        if mode == "reuse":
            raise SshError(f"{t.label}: python {base!r} lacks {why}; install wfbench's gpu extra there "
                           f"(pip install 'wfbench[gpu]'), pass python=PATH, or use env=auto")
        venv = t.cfg["venv"]
        venv_dir = venv if venv.startswith("/") else f"{report['home'] if report else '~'}/{venv}"
        venv_python = f"{venv_dir}/bin/python"
        existing = self._probe(venv_python, shipment)
        if existing is not None and not self._missing(existing):
            return self._use(venv_python, existing)
        self.progress(f"{t.label}: " + (f"python {base!r} lacks {why}; " if why else "")
                      + f"preparing the venv {venv_dir} (pip install 'wfbench[gpu]'; the first time takes minutes)")
        if existing is None:
            done = self.run([base, "-m", "venv", venv_dir], timeout=t.cfg["setup_timeout"])
            if done.rc != 0:
                raise SshError(f"{t.label}: creating venv {venv_dir} failed (exit {done.rc}): {done.error_line()}")
        # run in the wheels folder: pip would read a "; " in a full path as an environment marker
        argv = [venv_python, "-m", "pip", "install", "--disable-pip-version-check", "--quiet", "--find-links", ".",
                f"./{shipment.main}[gpu]", *(f"./{w}" for w in shipment.plugin_wheels)]
        done = self.run(argv, timeout=t.cfg["setup_timeout"], stream=self.progress, cwd=self.path("wheels"))
        if done.rc != 0:
            raise SshError(f"{t.label}: pip install 'wfbench[gpu]' into {venv_dir} failed: {done.error_line()}; "
                           f"the host needs PyPI access for this, or a python with the gpu extra (python=PATH)")
        report = self._probe(venv_python, shipment)
        missing = self._missing(report) if report else [venv_python]
        if missing or report is None:
            raise SshError(f"{t.label}: the venv {venv_dir} still lacks {', '.join(missing)}")
        self._use(venv_python, report)

    def _use(self, python: str, report: dict[str, Any]) -> None:
        self.python = python  # the command as given (it may be a wrapper); the report names the interpreter
        self.python_path = report["python"]
        self.python_version = report["version"]
        self.progress(f"{self.t.label}: python {self.python_path} ({self.python_version})")

    def validate(self, case_ids: Sequence[str]) -> list[str]:
        argv = [*self.env(self.python), "-m", "wfbench_core", "execute", self.path("bundle"), "--validate-only",
                "--json"]
        for cid in case_ids:
            argv += ["--case", cid]
        done = self.run(argv, timeout=self.t.cfg["setup_timeout"], stream=self.progress)
        if done.rc != 0:
            raise SshError(f"{self.t.label}: the bundle does not validate there: {done.error_line()}")
        import json

        try:
            return list(json.loads(done.stdout.strip().splitlines()[-1])["cases"])
        except (ValueError, IndexError, KeyError, TypeError):
            raise SshError(f"{self.t.label}: --validate-only gave no report: {done.stdout.strip()[-200:]!r}") from None

    def execute(self, request: ExecuteRequest) -> str:
        t = self.t
        sftp = t.open_sftp()
        try:
            with sftp.open(self.path("request.json"), "wb") as fh:
                fh.write(request.to_json().encode())
        finally:
            sftp.close()
        argv = [*self.env(self.python), "-m", "wfbench_core", "execute", self.path("bundle"),
                "--request", self.path("request.json"), "--out", self.result_path]
        self.progress(f"{t.label}: executing the bundle")
        try:
            done = self.run(argv, timeout=t.cfg["timeout"], stream=lambda line: self.progress(f"[{t.hostname}] {line}"))
        except RemoteTimeout:
            raise RemoteTimeout(f"{t.label}: the executor did not finish within timeout={t.cfg['timeout']:g} s; "
                                f"it was stopped") from None
        if done.rc == EXIT_NO_GPU:
            raise NoGpuError(f"{t.label}: {done.error_line()}")
        if done.rc not in (0, 1):
            raise SshError(f"{t.label}: the executor failed (exit {done.rc}): {done.error_line()}")
        try:
            return self.fetch_result()
        except OSError:
            if done.rc == 1:
                raise SshError(f"{t.label}: the executor failed (exit 1): {done.error_line()}") from None
            raise SshError(f"{t.label}: the executor exited 0 but wrote no {self.result_path}") from None

    def fetch_result(self) -> str:
        """The executor's result file as it is now (complete, or the cases finished so far)."""
        return self.read_text(self.result_path)

    def read_text(self, remote: str) -> str:
        sftp = self.t.open_sftp()
        try:
            with sftp.open(remote, "rb") as fh:
                return fh.read().decode("utf-8", "replace")
        finally:
            sftp.close()

    def remove(self) -> None:
        """Stop what still runs and delete the work directory; say loudly if that is impossible."""
        if not self.work:
            return
        t = self.t
        try:
            try:
                t.connect()
            except WfbenchError:
                t.close()
                t.connect()
            if self._running:
                t.kill(self.pidfile)
            t.check(["rm", "-rf", "--", self.work], timeout=120, what=f"removing {self.work}")
            self.work = ""
        except (Exception, KeyboardInterrupt) as exc:  # report, never mask the first error
            print(f"wfbench: warning: could not remove {self.work} on {t.label} ({exc}); remove it with: "
                  f"ssh -p {t.port} {t.user}@{t.hostname} rm -rf {shlex.quote(self.work)}", file=sys.stderr)
