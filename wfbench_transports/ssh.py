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

import base64
import re
import shlex
import socket
import sys
import time
from collections import deque
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

import attrs

from wfbench_core import hookimpl
from wfbench_core.errors import NoGpuError, WfbenchError
from wfbench_core.record.options import Option, describe_options, parse_options

from wfbench_transports import host_tests

if TYPE_CHECKING:  # the schema, the request and wheel building load when a run starts, not for listing
    from wfbench_core.record.request import ExecuteRequest
    from wfbench_core.record.results import RunResult
    from wfbench_transports import wheels as _wheels

Progress = Callable[[str], None]

#: What wfbench's ``gpu`` extra provides, by import name: a Python that imports these is reused.
GPU_MODULES = ("numba.cuda", "cuda.core", "pynvml")
WORK_PREFIX = "wfbench-run."
EXIT_NO_GPU = 3

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


class SshError(WfbenchError):
    """Connecting to or running on the SSH host failed; the message says where and what to do."""


class RemoteTimeout(SshError):
    """A remote command ran past its time limit (it was stopped)."""


def paramiko_module() -> Any:
    """paramiko, or one line saying how to install it."""
    try:
        import paramiko
    except ImportError:
        raise WfbenchError("the ssh and vast transports need paramiko: pip install 'wfbench[vast]' "
                           "(or pip install paramiko)") from None
    return paramiko


def fingerprint(key: Any) -> str:
    """OpenSSH's ``SHA256:…`` fingerprint of a paramiko public key."""
    import hashlib  # here, as the other imports used only once a run starts: listing transports stays quick

    digest = hashlib.sha256(key.asbytes()).digest()
    return "SHA256:" + base64.b64encode(digest).decode().rstrip("=")


@attrs.frozen
class Completed:
    """A finished remote command: exit status, stdout, and the last stderr lines."""

    rc: int
    stdout: str
    stderr: tuple[str, ...]

    def error_line(self) -> str:
        """The remote ``wfbench: error: …`` line without its prefix, else the last stderr line."""
        for line in reversed(self.stderr):
            if line.startswith("wfbench: error: "):
                return line[len("wfbench: error: "):]
        lines = [ln for ln in self.stderr if ln.strip()]
        return lines[-1].strip() if lines else f"exit status {self.rc}, no message"


def _host_key_policy(transport: "SshTransport") -> Any:
    paramiko = paramiko_module()

    class Policy(paramiko.MissingHostKeyPolicy):
        def missing_host_key(self, client: Any, hostname: str, key: Any) -> None:
            fp = fingerprint(key)
            if transport.cfg["host_key"] == "ephemeral":
                transport.host_key_sha256 = fp  # accepted for this connection only, never written anywhere
                return
            raise SshError(
                f"host {hostname} is not in {transport.cfg['known_hosts']} (its {key.get_name()} key is {fp}); "
                f"verify it and add it (ssh -p {transport.port} {transport.user}@{transport.hostname} once), "
                f"or pass host_key=ephemeral for a throwaway host"
            )

    return Policy()


class SshTransport:
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
        self.cfg = parse_options("ssh", SSH_OPTIONS, options)
        if not self.cfg["host"]:
            raise SshError("ssh transport: no host given; pass --transport-opt host=NAME")
        self.registry = registry
        self.cuda_compiler = cuda_compiler
        self.progress: Progress = progress or (lambda msg: None)
        self.hostname, self.port, self.user, self.key_file = self._resolve_target()
        self.host_key_sha256 = ""
        self.facts: dict[str, str] = dict(facts or {})
        self.bootstrap = bootstrap
        self.pkey = pkey
        self.deadline = deadline
        self._client: Any = None
        self._bootstrapped = False
        self._python = ("", "")
        self._host_tests = ""  # the counts of gpu_tests, JSON

    # -- target and connection --------------------------------------------------------------------

    @property
    def label(self) -> str:
        return f"{self.user}@{self.hostname}:{self.port}"

    def _resolve_target(self) -> tuple[str, int, str, str | None]:
        host, port, user, key = self.cfg["host"], self.cfg["port"], self.cfg["user"], self.cfg["key_file"]
        path = self.cfg["ssh_config"]
        if path and path != "none" and Path(path).expanduser().is_file():
            paramiko = paramiko_module()

            try:
                found = paramiko.SSHConfig.from_path(str(Path(path).expanduser())).lookup(host)
            except Exception as exc:  # noqa: BLE001 - a broken config is the user's to fix
                raise SshError(f"cannot read {path}: {exc}; fix it or pass ssh_config=none") from None
            host = found.get("hostname", host)
            port = port if port is not None else int(found.get("port", 22))
            user = user or found.get("user")
            if key is None and found.get("identityfile"):
                key = found["identityfile"][0]
        if key is not None:
            key = str(Path(key).expanduser())
            if not Path(key).is_file():
                raise SshError(f"key_file {key}: no such file")
        return host, int(port if port is not None else 22), user or _user_name(), key

    def connect(self) -> None:
        """Open the SSH connection (once); every failure is one line naming the host and the fix."""
        if self._client is not None and self._client.get_transport() is not None \
                and self._client.get_transport().is_active():
            return
        import logging

        paramiko = paramiko_module()
        logging.getLogger("paramiko").addHandler(logging.NullHandler())
        client = paramiko.SSHClient()
        if self.cfg["host_key"] == "strict":
            known = Path(self.cfg["known_hosts"]).expanduser()
            if known.is_file():
                try:
                    client.get_host_keys().load(str(known))
                except Exception as exc:  # noqa: BLE001
                    raise SshError(f"cannot read known_hosts {known}: {exc}") from None
        client.set_missing_host_key_policy(_host_key_policy(self))
        timeout = self.cfg["connect_timeout"]
        try:
            client.connect(
                self.hostname, port=self.port, username=self.user, pkey=self.pkey, key_filename=self.key_file,
                allow_agent=self.cfg["agent"], look_for_keys=self.key_file is None and self.pkey is None,
                timeout=timeout, banner_timeout=timeout, auth_timeout=timeout, channel_timeout=timeout,
            )
        except BaseException as exc:
            client.close()
            if isinstance(exc, Exception):
                raise self._connect_error(exc) from None
            raise
        key = client.get_transport().get_remote_server_key()
        self.host_key_sha256 = fingerprint(key)
        client.get_transport().set_keepalive(30)
        self._client = client
        self._bootstrapped = False

    def _connect_error(self, exc: Exception) -> WfbenchError:
        paramiko = paramiko_module()

        where = self.label
        if isinstance(exc, WfbenchError):
            return exc
        if isinstance(exc, paramiko.BadHostKeyException):
            known = self.cfg["known_hosts"]
            name = self.hostname if self.port == 22 else f"[{self.hostname}]:{self.port}"
            return SshError(
                f"HOST KEY MISMATCH for {where}: {known} has {fingerprint(exc.expected_key)}, the host offered "
                f"{fingerprint(exc.key)}; someone may be intercepting the connection. If the host was reinstalled, "
                f"remove the old key (ssh-keygen -f {known} -R '{name}') and verify the new one"
            )
        if isinstance(exc, paramiko.PasswordRequiredException):
            return SshError(f"{where}: key {self.key_file} is protected by a passphrase; load it into ssh-agent")
        if isinstance(exc, paramiko.AuthenticationException):
            how = f"key {self.key_file}" if self.key_file else "the ssh agent and ~/.ssh/id_* keys"
            return SshError(f"{where} refused authentication with {how}; check key_file= and the host's "
                            f"authorized_keys")
        if isinstance(exc, paramiko.ssh_exception.NoValidConnectionsError):
            return SshError(f"cannot connect to {where}: connection refused; is sshd running and the port right?")
        if isinstance(exc, (socket.timeout, TimeoutError)):
            return SshError(f"cannot connect to {where}: timed out after {self.cfg['connect_timeout']:g} s")
        if isinstance(exc, socket.gaierror):
            return SshError(f"cannot connect to {where}: unknown host name {self.hostname!r}")
        if isinstance(exc, paramiko.SSHException):
            return SshError(f"ssh to {where} failed: {exc}")
        if isinstance(exc, OSError):
            return SshError(f"cannot connect to {where}: {exc.strerror or exc}")
        return SshError(f"ssh to {where} failed: {type(exc).__name__}: {exc}")

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    # -- running commands -------------------------------------------------------------------------

    def run(self, argv: Sequence[str], *, timeout: float, stream: Progress | None = None,
            pidfile: str | None = None, cwd: str | None = None) -> Completed:
        """Run an argument vector on the host; ``stream`` gets each stderr line as it arrives.

        With ``pidfile`` the command's process id is written there first, so :meth:`kill` can stop it;
        ``cwd`` is the folder it runs in (else the remote home).
        """
        self.connect()
        if cwd is not None:
            argv = ["sh", "-c", 'cd "$0" && exec "$@"', cwd, *argv]
        if pidfile is not None:
            argv = ["sh", "-c", 'echo $$ > "$0" && exec "$@"', pidfile, *argv]
        return self._exec(shlex.join(argv), timeout=timeout, stream=stream)

    def _exec(self, command: str, *, timeout: float, stream: Progress | None) -> Completed:
        try:
            chan = self._client.get_transport().open_session(timeout=self.cfg["connect_timeout"])
            chan.exec_command(command)
            chan.shutdown_write()
        except Exception as exc:  # noqa: BLE001 - a dead connection
            raise SshError(f"{self.label}: cannot start a remote command: {exc or type(exc).__name__}") from None
        out = bytearray()
        err_tail: deque[str] = deque(maxlen=40)
        partial = b""
        deadline = time.monotonic() + timeout
        exited_at: float | None = None

        def lines(data: bytes) -> None:
            nonlocal partial
            partial += data
            *done, partial = partial.split(b"\n")
            for raw in done:
                line = raw.decode("utf-8", "replace").rstrip("\r")
                err_tail.append(line)
                if stream is not None and line.strip() and not line.startswith("wfbench: error: "):
                    stream(line)

        try:
            while True:
                busy = False
                if chan.recv_ready():
                    data = chan.recv(65536)
                    out += data
                    del out[:-1_000_000]
                    busy = True
                if chan.recv_stderr_ready():
                    lines(chan.recv_stderr(65536))
                    busy = True
                if chan.exit_status_ready():
                    exited_at = exited_at or time.monotonic()
                    if not busy and (chan.eof_received or time.monotonic() - exited_at > 2.0):
                        break
                if not busy:
                    if time.monotonic() > deadline:
                        raise RemoteTimeout(f"{self.label}: remote command ran past {timeout:g} s")
                    if chan.closed and not chan.exit_status_ready():
                        raise SshError(f"{self.label}: the connection closed while a remote command ran")
                    time.sleep(0.02)
            if partial:
                lines(b"\n")
            return Completed(chan.recv_exit_status(), out.decode("utf-8", "replace"), tuple(err_tail))
        finally:
            chan.close()

    def check(self, argv: Sequence[str], *, timeout: float, what: str) -> Completed:
        """Run and require exit status 0; else one line with the command's own message."""
        done = self.run(argv, timeout=timeout)
        if done.rc == 127:
            raise SshError(f"{self.label}: {what}: command {argv[0]!r} not found on the host ({done.error_line()})")
        if done.rc != 0:
            raise SshError(f"{self.label}: {what} failed (exit {done.rc}): {done.error_line()}")
        return done

    def bounded(self, timeout: float) -> float:
        """``timeout`` capped by the ``deadline`` given at construction."""
        return timeout if self.deadline is None else max(0.0, min(timeout, self.deadline - time.monotonic()))

    def kill(self, pidfile: str) -> None:
        """Stop a command started with ``pidfile`` and its children (TERM, then KILL)."""
        script = ('pid=$(cat "$0" 2>/dev/null) || exit 0; [ -n "$pid" ] || exit 0; '
                  'kill -s TERM -- "-$pid" "$pid" 2>/dev/null; i=0; '
                  'while kill -0 "$pid" 2>/dev/null && [ $i -lt 20 ]; do sleep 0.1; i=$((i+1)); done; '
                  'kill -s KILL -- "-$pid" "$pid" 2>/dev/null; exit 0')
        self.run(["sh", "-c", script, pidfile], timeout=30)

    def _bootstrap(self) -> None:
        if self.bootstrap and not self._bootstrapped:
            self.progress(f"{self.label}: preparing the host")
            done = self._exec(self.bootstrap, timeout=self.bounded(self.cfg["setup_timeout"]), stream=None)
            if done.rc != 0:
                raise SshError(f"{self.label}: preparing the host failed (exit {done.rc}): {done.error_line()}")
            self._bootstrapped = True

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
        """Execute on the host; when the run breaks off, the cases it finished are left in ``out``."""
        from wfbench_core.record.results import RunResult, loads

        progress = progress or self.progress
        tests = host_tests.checkout_of(self.cfg["gpu_tests"]) if self.cfg["gpu_tests"] else None

        def action(run: RemoteRun) -> str:
            if tests is not None:
                self._host_tests = host_tests.run_on_host(run, tests, progress)
            try:  # the executor checks the bundle before touching the GPU, and loads each case once
                return run.execute(request)
            except WfbenchError:
                self._keep_partial(run, out, progress)
                raise

        text = self._on_host(Path(bundle), request.case_ids, progress, action)
        result = self._stamp(loads(text, RunResult, where=f"{self.label}:result.json"))
        if result.protocol != request.protocol:
            raise SshError(f"{self.label}: the remote executor used protocol {result.protocol}, not the one asked "
                           f"for; install the same wfbench version on both sides")
        return result

    def _stamp(self, result: RunResult) -> RunResult:
        extra = {**result.environment.extra, "transport": "ssh", "ssh_host": self.hostname,
                 "ssh_port": str(self.port), "ssh_user": self.user, "ssh_host_key_sha256": self.host_key_sha256,
                 "remote_python": self._python[0], "remote_python_version": self._python[1], **self.facts}
        if self._host_tests:
            extra[host_tests.EXTRA_KEY] = self._host_tests
        return attrs.evolve(result, environment=attrs.evolve(result.environment, extra=extra))

    def _keep_partial(self, run: "RemoteRun", out: Path | None, progress: Progress) -> None:
        """After a broken-off execution: fetch what the executor finished (reconnecting if need be)."""
        if out is None:
            return
        from wfbench_core.record.results import RunResult, loads, write_result

        try:
            self.connect()
            text = run.fetch_result()
            partial = attrs.evolve(loads(text, RunResult, where=f"{self.label}:result.json"), complete=False)
        except Exception:  # noqa: BLE001 - nothing to keep; the original error is what the user sees
            return
        write_result(self._stamp(partial), out)
        progress(f"{self.label}: kept {len(partial.cases)} finished case(s) in {out} (marked incomplete)")

    def _on_host(self, bundle: Path, case_ids: Sequence[str], progress: Progress,
                 action: Callable[[RemoteRun], Any]) -> Any:
        """Ship everything, prepare Python, run ``action`` in the work directory, always remove it."""
        from wfbench_core.build.bundle import read_manifest
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


class RemoteRun:
    """One execution on the host: the work directory and everything done in it."""

    def __init__(self, t: SshTransport, progress: Progress) -> None:
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
        self.progress(f"{self.t.label}: uploading the bundle and {len(shipment.wheels)} wheels to {self.work}")
        try:
            sftp = self.t._client.open_sftp()
        except Exception as exc:  # noqa: BLE001
            raise SshError(f"{self.t.label}: SFTP is not available ({exc}); enable sshd's sftp subsystem") from None
        try:
            for local in sorted(bundle.rglob("*")):
                remote = self.path("bundle", *local.relative_to(bundle).parts)
                if local.is_dir():
                    continue
                self._mkdirs(sftp, str(PurePosixPath(remote).parent))
                sftp.put(str(local), remote)
            self._mkdirs(sftp, self.path("wheels"))
            for wheel in shipment.wheels:
                sftp.put(str(wheel), self.path("wheels", wheel.name))
            sftp.put(str(Path(__file__).with_name("remote_setup.py")), self.path("remote_setup.py"))
        except OSError as exc:
            raise SshError(f"{self.t.label}: upload to {self.work} failed: {exc.strerror or exc}") from None
        finally:
            sftp.close()

    def _mkdirs(self, sftp: Any, remote: str) -> None:
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
            return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]
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
        if mode != "venv" and not missing:
            return self._use(base, report)  # type: ignore[arg-type]
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
        if missing:
            raise SshError(f"{t.label}: the venv {venv_dir} still lacks {', '.join(missing)}")
        self._use(venv_python, report)  # type: ignore[arg-type]

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
        sftp = t._client.open_sftp()
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
        sftp = self.t._client.open_sftp()
        try:
            with sftp.open(remote, "rb") as fh:
                return fh.read().decode("utf-8", "replace")  # type: ignore[no-any-return]
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
        except (Exception, KeyboardInterrupt) as exc:  # noqa: BLE001 - report, never mask the first error
            print(f"wfbench: warning: could not remove {self.work} on {t.label} ({exc}); remove it with: "
                  f"ssh -p {t.port} {t.user}@{t.hostname} rm -rf {shlex.quote(self.work)}", file=sys.stderr)


@hookimpl
def wfbench_register_transports(register: Callable[[str, Any], None]) -> None:
    register("ssh", SshTransport)


def _user_name() -> str:
    import getpass  # here: listing the transports needs no terminal module

    return getpass.getuser()
