"""The ``ssh`` transport: execute the bundle on a GPU host reached over SSH (paramiko).

One run on the host:

1. connect (host key checked against ``known_hosts`` unless ``host_key=ephemeral``, which accepts the key
   of a throwaway host and records its SHA-256 fingerprint in the result);
2. ``mktemp -d`` a work directory; upload the bundle, the wheels of wfbench, its plugins and their
   pure-Python dependencies (:mod:`wfbench_transports.wheels`) and a small setup script;
3. install the wheels into ``WORK/site`` (``pip install --no-deps --no-index --target``), then choose the
   interpreter: ``python`` when it imports wfbench's GPU stack (``numba.cuda``, ``cuda.core``, ``pynvml``)
   and the compiled requirements (numpy, scipy), else a venv kept on the host (``venv``), created and
   filled with ``pip install 'wfbench[gpu]'`` when needed (that needs PyPI from the host);
4. check the bundle there (``python -m wfbench_core execute WORK/bundle --validate-only``), then run
   ``python -m wfbench_core execute WORK/bundle --out WORK/result.json …`` with ``PYTHONPATH=WORK/site``,
   streaming its progress lines;
5. fetch and parse the result; remove the work directory — always, also after errors, timeouts and
   Ctrl-C (a running executor is stopped first).

Every remote command is an argument vector joined with :func:`shlex.join`; the only shell text of our own
is fixed, and values reach it as positional parameters. The remote login shell must be POSIX-like.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import attrs

from wfbench_core import hookimpl
from wfbench_core.errors import WfbenchError
from wfbench_core.host.options import Option, describe_options, parse_options
from wfbench_transports import host_tests
from wfbench_transports.ssh_host import Progress, RemoteTimeout, SshError, SshHost
from wfbench_transports.ssh_run import RemoteRun

if TYPE_CHECKING:  # the schema and the request load when a run starts, not for listing
    from wfbench_core.record.request import ExecuteRequest
    from wfbench_core.record.results import RunResult

#: its errors live with the connection (:mod:`wfbench_transports.ssh_host`)
#: the transport's names (internal to wfbench, not the plugin API)
__all__ = ["SSH_OPTIONS", "RemoteTimeout", "SshError", "SshTransport", "wfbench_register_transports"]

SSH_OPTIONS = (
    Option("host", "GPU host name or address, or a Host alias of ~/.ssh/config (required)"),
    Option("port", "SSH port [default: from ~/.ssh/config, else 22]", None, "int"),
    Option("user", "remote user [default: from ~/.ssh/config, else your user name]"),
    Option("key_file", "private key file [default: the ssh agent and ~/.ssh/id_*]"),
    Option("agent", "offer the keys of the running ssh agent", True, "bool"),
    Option("known_hosts", "known-hosts file that verifies the host key", "~/.ssh/known_hosts"),
    Option("host_key", "strict: the host key must be in known_hosts; ephemeral: accept the key of a throwaway "
           "host and record its SHA-256 fingerprint in the result", "strict", "str", ("strict", "ephemeral")),
    Option("ssh_config", "OpenSSH client config for Host aliases ('none' to ignore it)", "~/.ssh/config"),
    Option("python", "Python interpreter on the host (a command or an absolute path)", "python3"),
    Option("env", "auto: reuse python if it has the gpu extra, else a venv; reuse: only python; venv: only the "
           "venv", "auto", "str", ("auto", "reuse", "venv")),
    Option("venv", "venv on the host for env=venv/auto (relative to the remote home)", ".cache/wfbench/venv"),
    Option("remote_tmp", "folder on the host that holds the per-run work directory [default: $TMPDIR or /tmp]"),
    Option("gpu", "CUDA_VISIBLE_DEVICES for the executor on the host (which GPU runs the bundle)"),
    Option("timeout", "seconds the remote executor may run before it is stopped", 3600.0, "float"),
    Option("setup_timeout", "seconds for uploading and preparing the remote environment", 1800.0, "float"),
    Option("connect_timeout", "seconds to connect and authenticate", 20.0, "float"),
    Option("wheels", "folder of prebuilt wheels to ship instead of the ones made here (by distribution name)"),
    Option("gpu_tests", "a wfbench checkout: run its GPU tests (pytest -m gpu) on the host before the bundle; "
           "the counts go into the result"),
)



_T = TypeVar("_T")


class SshTransport(SshHost):
    """Run bundles on a GPU host over SSH; see the module docstring for the steps."""

    name = "ssh"
    summary = "a GPU host over SSH: ships the bundle and wfbench there, runs the executor, fetches the result"
    OPTIONS = describe_options(SSH_OPTIONS)

    def __init__(self, *, registry: Any = None, cuda_compiler: str = "auto", progress: Progress | None = None,
                 pkey: Any = None, bootstrap: str | None = None, facts: Mapping[str, str] | None = None,
                 deadline: float | None = None, **options: Any) -> None:
        """``options`` are the user's ``--transport-opt`` values. A transport that composes this one (``vast``)
        passes the rest: ``pkey``, an in-memory private key (paramiko ``PKey``) tried before ``key_file``;
        ``bootstrap``, fixed shell text run once per connection before anything else; ``facts``, added to
        every result's ``environment.extra``; ``deadline``, a :func:`time.monotonic` instant that caps the
        setup and run commands (cleanup still runs after it).
        """
        cfg = parse_options("ssh", SSH_OPTIONS, options)
        if not cfg["host"]:
            raise SshError("ssh transport: no host given; pass --transport-opt host=NAME")
        super().__init__(cfg, progress=progress or (lambda msg: None), pkey=pkey, bootstrap=bootstrap,
                         deadline=deadline)
        self.registry = registry
        self.cuda_compiler = cuda_compiler
        self.facts: dict[str, str] = dict(facts or {})
        self._python = ("", "")
        self._host_tests = ""  # the counts of gpu_tests, JSON

    # -- the transport interface ------------------------------------------------------------------

    def gpu_arch(self) -> str | None:
        """The host GPU's ``sm_XX`` from ``nvidia-smi`` (None when it cannot tell)."""
        argv = ["nvidia-smi", "--query-gpu=compute_cap", "--format=csv,noheader"]
        if self.cfg["gpu"] and re.fullmatch(r"\d+", self.cfg["gpu"]):
            argv += ["-i", self.cfg["gpu"]]
        done = self.run(argv, timeout=60)
        m = re.match(r"\s*(\d+)\.(\d+)", done.stdout)
        if done.rc != 0 or not m:
            self.progress(f"{self.label}: nvidia-smi gave no compute capability; building for no specific GPU")
            return None
        from wfbench_core.record.results import sm_arch

        return sm_arch((int(m.group(1)), int(m.group(2))))

    def validate(self, bundle: Path, case_ids: Sequence[str] = (), progress: Progress | None = None) -> list[str]:
        """Prepare the host and check the bundle there (``--validate-only``: no GPU needed); the case IDs."""
        return self._on_host(Path(bundle), case_ids, progress or self.progress, lambda run: run.validate(case_ids))

    def execute(self, bundle: Path, request: ExecuteRequest, *, progress: Progress | None = None,
                out: Path | None = None) -> RunResult:
        """Execute on the host; when the run breaks off, the cases it finished are left in ``out``.

        The host's result is checked against the bundle and request sent (:mod:`wfbench_core.run.returned`):
        one that names other cases, other PTX, another commit or other compilers is refused, never written.
        """
        from wfbench_core.compiling.bundle import utcnow
        from wfbench_core.record.results import RunResult, loads

        progress = progress or self.progress
        sent_at = utcnow()
        tests = host_tests.checkout_of(self.cfg["gpu_tests"]) if self.cfg["gpu_tests"] else None

        def action(run: RemoteRun) -> str:
            if tests is not None:
                self._host_tests = host_tests.run_on_host(run, tests, progress)
            try:  # the executor checks the bundle before touching the GPU, and loads each case once
                return run.execute(request)
            except WfbenchError:
                self._keep_partial(run, out, progress, Path(bundle), request, sent_at)
                raise

        text = self._on_host(Path(bundle), request.case_ids, progress, action)
        return self._vouched(loads(text, RunResult, where=f"{self.label}:result.json"), Path(bundle), request,
                             sent_at)

    def _vouched(self, result: RunResult, bundle: Path, request: ExecuteRequest, sent_at: str, *,
                 partial: bool = False) -> RunResult:
        """The host's result checked against what was sent, then stamped with this transport's facts."""
        from wfbench_core.run.returned import check_returned

        checked = check_returned(result, bundle, request, where=f"{self.label}:result.json", sent_at=sent_at,
                                 partial=partial)
        return self._stamp(checked)

    def _stamp(self, result: RunResult) -> RunResult:
        # the keys a transport records are its own: the host's values for them are dropped, not kept
        host = {k: v for k, v in result.environment.extra.items()
                if not k.startswith(("ssh_", "vast_", "transport", "remote_python")) and k != host_tests.EXTRA_KEY}
        extra = {**host, "transport": "ssh", "ssh_host": self.hostname,
                 "ssh_port": str(self.port), "ssh_user": self.user, "ssh_host_key_sha256": self.host_key_sha256,
                 "remote_python": self._python[0], "remote_python_version": self._python[1], **self.facts}
        if self._host_tests:
            extra[host_tests.EXTRA_KEY] = self._host_tests
        return attrs.evolve(result, environment=attrs.evolve(result.environment, extra=extra))

    def _keep_partial(self, run: RemoteRun, out: Path | None, progress: Progress, bundle: Path,
                      request: ExecuteRequest, sent_at: str) -> None:
        """After a broken-off execution: fetch what the executor finished (reconnecting if need be), checked
        against what was sent like a whole result."""
        if out is None:
            return
        from wfbench_core.record.results import RunResult, loads, write_result

        try:
            self.connect()
            text = run.fetch_result()
            partial = attrs.evolve(loads(text, RunResult, where=f"{self.label}:result.json"), complete=False)
            partial = self._vouched(partial, bundle, request, sent_at, partial=True)
        except WfbenchError as exc:
            progress(f"{self.label}: the finished cases were not kept: {exc}")
            return
        except Exception:  # nothing to keep; the original error is what the user sees
            return
        write_result(partial, out)
        progress(f"{self.label}: kept {len(partial.cases)} finished case(s) in {out} (marked incomplete)")

    def _on_host(self, bundle: Path, case_ids: Sequence[str], progress: Progress,
                 action: Callable[[RemoteRun], _T]) -> _T:
        """Ship everything, prepare Python, run ``action`` in the work directory, always remove it."""
        from wfbench_core.compiling.bundle import read_manifest
        from wfbench_core.discover.registry import Registry
        from wfbench_transports import wheels as _wheels

        registry = self.registry if self.registry is not None else Registry.load()
        ids = list(case_ids) or [c.id for c in read_manifest(bundle).cases]
        shipment = _wheels.prepare(registry, ids, prebuilt=self.cfg["wheels"], progress=progress,
                                   extra=host_tests.PYTEST_DISTRIBUTIONS if self.cfg["gpu_tests"] else ())
        self.connect()
        self._bootstrap()
        run = RemoteRun(self, progress)
        try:
            run.create()
            run.upload(bundle, shipment)
            run.prepare_python(shipment)
            self._python = (run.python_path, run.python_version)
            return action(run)
        finally:
            run.remove()


@hookimpl
def wfbench_register_transports(register: Callable[[str, Any], None]) -> None:
    register("ssh", SshTransport)
