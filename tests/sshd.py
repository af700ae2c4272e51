"""A real OpenSSH server on 127.0.0.1 for the remote-transport tests.

It runs as the current user (root works too) with its own host key, its own ``authorized_keys`` holding a
generated client key, ``Subsystem sftp internal-sftp`` and no PAM; it lives in one temporary folder.

The host's ``python`` is this interpreter behind a small wrapper (:attr:`Sshd.python`): every command goes to the
interpreter unchanged, except the transports' ``remote_setup.py install``, which tests/installed_once.py runs for
real once per set of wheels in the session and copies afterwards.
"""

from __future__ import annotations

import os
import shlex
import shutil
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

SSHD_CONFIG = """\
Port {port}
ListenAddress 127.0.0.1
HostKey {root}/host_ed25519
PidFile {root}/sshd.pid
AuthorizedKeysFile {root}/authorized_keys
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
StrictModes no
UsePAM no
PrintMotd no
Subsystem sftp internal-sftp
LogLevel VERBOSE
"""


def find_sshd() -> str | None:
    for candidate in (shutil.which("sshd"), "/usr/sbin/sshd", "/usr/local/sbin/sshd"):
        if candidate and os.access(candidate, os.X_OK):
            return str(Path(candidate).resolve())  # sshd re-executes itself: it needs an absolute path
    return None


def generate_key(path: Path) -> str:
    """Write a new ed25519 private key (OpenSSH format, mode 0600); return its public-key line."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    key = Ed25519PrivateKey.generate()
    path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH,
                                       serialization.NoEncryption()))
    path.chmod(0o600)
    pub = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    return pub.decode()


def gpu_stack_missing() -> str | None:
    """Why this Python cannot serve as the GPU host's interpreter (wfbench's gpu extra), or None."""
    import importlib.util

    for name in ("numba.cuda", "cuda.core", "pynvml"):
        try:
            found = importlib.util.find_spec(name) is not None
        except ImportError:
            found = False
        if not found:
            return f"{name} is not installed here (pip install -e '.[gpu]')"
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Sshd:
    root: Path
    port: int
    user: str
    client_key: Path
    host_pub: str
    known_hosts: Path
    authorized_keys: Path
    remote_tmp: Path
    proc: subprocess.Popen = field(repr=False)
    #: the host's python: this interpreter, with the wheels' install done once per set (tests/installed_once.py)
    python: str = sys.executable

    def options(self, **extra: str) -> dict[str, str]:
        """ssh transport options that reach this server with the client key and the right known_hosts."""
        opts = {
            "host": "127.0.0.1", "port": str(self.port), "user": self.user, "key_file": str(self.client_key),
            "known_hosts": str(self.known_hosts), "agent": "false", "ssh_config": "none",
            "python": self.python, "env": "reuse", "remote_tmp": str(self.remote_tmp), "connect_timeout": "10",
        }
        opts.update(extra)
        return opts

    def leftovers(self) -> list[str]:
        """What runs left in the remote temporary folder (must stay empty)."""
        return sorted(p.name for p in self.remote_tmp.iterdir())

    def log(self) -> str:
        path = self.root / "sshd.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)


def start(root: Path) -> Sshd:
    """Start sshd in ``root``; raises RuntimeError (with sshd's log) when it cannot run here."""
    sshd = find_sshd()
    if sshd is None:
        raise FileNotFoundError("sshd not installed (Debian: apt-get install openssh-server)")
    root.mkdir(parents=True, exist_ok=True)
    host_pub = generate_key(root / "host_ed25519")
    client_pub = generate_key(root / "client_ed25519")
    (root / "authorized_keys").write_text(client_pub + "\n")
    remote_tmp = root / "remote"
    remote_tmp.mkdir()
    if os.geteuid() == 0:
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # privilege separation directory
    last = ""
    for _ in range(3):  # the free port may be taken between probing and binding
        port = free_port()
        (root / "sshd_config").write_text(SSHD_CONFIG.format(port=port, root=root))
        known = root / "known_hosts"
        known.write_text(f"[127.0.0.1]:{port} {host_pub}\n")
        log = open(root / "sshd.log", "wb")
        proc = subprocess.Popen([sshd, "-D", "-e", "-f", str(root / "sshd_config")], stdout=log, stderr=log,
                                stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        listening = False
        while not listening and time.monotonic() < deadline and proc.poll() is None:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                    listening = True
            except OSError:
                time.sleep(0.05)
        if listening and proc.poll() is None:
            import getpass

            return Sshd(root, port, getpass.getuser(), root / "client_ed25519", host_pub, known,
                        root / "authorized_keys", remote_tmp, proc, host_python(root / "host-python"))
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
        last = (root / "sshd.log").read_text(errors="replace")
    raise RuntimeError(f"sshd did not start: {last.strip()[-500:]}")


#: what the host's ``python`` runs (fake_gpu_python's last resort too): start() sets the wrapper
HOST_PYTHON = sys.executable


def host_python(folder: Path) -> str:
    """A ``python`` for the host: this interpreter, but ``SETUP install TARGET WHEEL...`` (remote_setup.py) goes
    through tests/installed_once.py, which keeps what it installed in ``folder`` for the next run's same wheels."""
    global HOST_PYTHON
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "python"
    once = Path(__file__).with_name("installed_once.py")
    py = shlex.quote(sys.executable)
    script.write_text(
        "#!/bin/sh\n"
        'case "$1" in\n'
        f'  */remote_setup.py) [ "$2" = install ] && exec {py} {shlex.quote(str(once))} '
        f'{shlex.quote(str(folder / "kept"))} "$@";;\n'
        "esac\n"
        f'exec {py} "$@"\n'
    )
    script.chmod(0o755)
    HOST_PYTHON = str(script)
    return HOST_PYTHON


# -------------------------------------------------------------------------------------------------
# a stand-in for the executor on a GPU host (this machine has no GPU)
# -------------------------------------------------------------------------------------------------


def fake_gpu_python(folder: Path, body: str) -> Path:
    """A ``python`` for the host that runs ``body`` (sh) instead of the timed executor run.

    Setup, probing and ``--validate-only`` go to the host's python (:data:`HOST_PYTHON`); only
    ``execute … --out`` is replaced, with ``$out`` set to the result path the transport asked for, ``$request``
    to the request file it sent and ``$ARGS`` holding all arguments.
    """
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "python"
    script.write_text(
        "#!/bin/sh\n"
        'case " $* " in\n'
        '  *" -m wfbench_core execute "*" --out "*)\n'
        '    ARGS="$*"; out=""; request=""; prev=""\n'
        '    for a in "$@"; do [ "$prev" = "--out" ] && out="$a"; [ "$prev" = "--request" ] && request="$a"; '
        'prev="$a"; done\n'
        f"    {body}\n"
        "    ;;\n"
        "esac\n"
        f'exec {shlex.quote(HOST_PYTHON)} "$@"\n'
    )
    script.chmod(0o755)
    return script


def gpu_result(protocol, bundle: Path, gpu_name: str = "NVIDIA GeForce RTX 4090", cc: str = "8.9",  # type: ignore[no-untyped-def]
               mode: str = "paired") -> str:
    """JSON as the executor writes it on a GPU host for ``bundle``: its source and compilers, each of its cases
    with the PTX it was sent (ERROR, untimed: this machine has no GPU), as the transports check it."""
    from wfbench_core import SUITE_VERSION, __version__
    from wfbench_core.compiling.bundle import read_variants
    from wfbench_core.record.results import SCHEMA_VERSION, CaseResult, CompilerInfo, Environment, RunResult, dumps

    variants = read_variants(bundle)
    first = next(iter(variants.values()))[0]
    cases = tuple(CaseResult(id=e.id, version=e.version, priority="P0", fingerprint=e.fingerprint, status="error",
                             mode=mode, message="not timed: a stand-in GPU host", compiler_label=label,
                             compile_wf=e.configs["canonical"].compile_wf,
                             warpforth_source_sha256=e.configs["canonical"].compile_wf.source_sha256)
                  for label, (m, _) in variants.items() for e in m.cases)
    return dumps(RunResult(
        schema_version=SCHEMA_VERSION, suite_version=SUITE_VERSION, wfbench_version=__version__,
        created="2025-01-01T00:00:00+00:00", mode=mode, protocol=protocol,
        environment=Environment(gpu_name=gpu_name, gpu_uuid="GPU-1234", compute_capability=cc),
        warpforthc=first.warpforthc, cuda_compiler=CompilerInfo("nvcc", "12.4"), cases=cases, source=first.source,
        compilers={label: m.warpforthc for label, (m, _) in variants.items() if label},
    ))
