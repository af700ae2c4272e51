"""One SSH connection to a GPU host and the commands run over it (paramiko, imported when a run starts).

The host key is checked against ``known_hosts`` unless ``host_key=ephemeral``, which accepts the key of a
throwaway host and records its SHA-256 fingerprint. Every remote command is an argument vector joined with
:func:`shlex.join`; the only shell text of our own is fixed, and values reach it as positional parameters.
"""

from __future__ import annotations

import shlex
import time
from collections import deque
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from wfbench_core.errors import WfbenchError

if TYPE_CHECKING:  # paramiko loads when a connection opens, not for listing
    from paramiko import SFTPClient, SSHClient

# internal to wfbench, not the plugin API (README: Layout)
__all__ = ["Completed", "Progress", "RemoteTimeout", "SshError", "SshHost", "fingerprint", "paramiko_module"]

Progress = Callable[[str], None]


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
    import base64  # here, as the other imports used only once a run starts: listing transports stays quick
    import hashlib

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


def _host_key_policy(transport: SshHost) -> Any:
    paramiko_module()  # one line saying how to install it, when it is missing
    from paramiko import MissingHostKeyPolicy

    class Policy(MissingHostKeyPolicy):
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


class SshHost:
    """The connection to one host (resolved through ``~/.ssh/config``) and the commands run over it.

    ``cfg`` holds the ``ssh`` transport's options; ``pkey`` is an in-memory private key (paramiko ``PKey``)
    tried before ``key_file``; ``bootstrap`` is fixed shell text run once per connection before anything
    else; ``deadline`` is a :func:`time.monotonic` instant that caps :meth:`bounded` timeouts.
    """

    def __init__(self, cfg: dict[str, Any], *, progress: Progress, pkey: Any = None,
                 bootstrap: str | None = None, deadline: float | None = None) -> None:
        self.cfg = cfg
        self.progress: Progress = progress
        self.hostname, self.port, self.user, self.key_file = self._resolve_target()
        self.host_key_sha256 = ""
        self.bootstrap = bootstrap
        self.pkey = pkey
        self.deadline = deadline
        self._client: SSHClient | None = None
        self._bootstrapped = False

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
            except Exception as exc:  # a broken config is the user's to fix
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
        transport = self._client.get_transport() if self._client is not None else None
        if transport is not None and transport.is_active():
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
                except Exception as exc:
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
        import socket

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

    def open_sftp(self) -> SFTPClient:
        """An SFTP session on the connection (connecting first if needed); the caller closes it."""
        self.connect()
        return self._connected().open_sftp()

    def _connected(self) -> SSHClient:
        if self._client is None:
            raise SshError(f"{self.label}: not connected")
        return self._client

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
            transport = self._connected().get_transport()
            if transport is None:
                raise SshError("the connection is closed")
            chan = transport.open_session(timeout=self.cfg["connect_timeout"])
            chan.exec_command(command)
            chan.shutdown_write()
        except Exception as exc:  # a dead connection
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


def _user_name() -> str:
    import getpass  # here: listing the transports needs no terminal module

    return getpass.getuser()
