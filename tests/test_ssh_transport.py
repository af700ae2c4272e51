"""The ssh transport against a real OpenSSH server on 127.0.0.1 (see tests/sshd.py).

The "remote" GPU host is this machine: the transport uploads the bundle and wheels, installs them into a
per-run folder, checks the environment and runs the real executor with this Python. There is no GPU here,
so the real executor ends with its one-line "no GPU" error. Where a test needs a finished run or a
misbehaving host, ``python=`` points at a small shell script that stands in for the executor on a GPU host
(every other step still goes through the real interpreter).
"""

from __future__ import annotations

import json

import base64
import hashlib
import os
import re
import shlex
import sys
import time
import uuid
import zipfile
from pathlib import Path

import attrs
import pytest

from wfbench_core.errors import NoGpuError, WfbenchError
from wfbench_core.discover.registry import Registry
from wfbench_core.record.request import ExecuteRequest, RunRequest
from wfbench_core.run import runner
from wfbench_core.record.results import TimingProtocol, load_result
from wfbench_transports import wheels
from wfbench_transports.ssh import RemoteTimeout, SshError, SshTransport

from sshd import fake_gpu_python, gpu_result, gpu_stack_missing  # tests/sshd.py
from testkit import STORED_PTX  # tests/testkit.py

pytest.importorskip("paramiko")

PROTOCOL = TimingProtocol(warmup_s=0.0, min_sample_ms=12.5, samples=7, suite_budget_s=120.0)


def host_fingerprint(pub_line: str) -> str:
    blob = base64.b64decode(pub_line.split()[1])
    return "SHA256:" + base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("=")


def transport(sshd, registry, lines=None, **opts):  # type: ignore[no-untyped-def]
    return SshTransport(registry=registry, cuda_compiler="auto",
                        progress=(lines.append if lines is not None else None), **sshd.options(**opts))


def assert_nothing_left(sshd) -> None:  # type: ignore[no-untyped-def]
    assert sshd.leftovers() == [], f"remote work directories left behind: {sshd.leftovers()}"


# -------------------------------------------------------------------------------------------------
# end to end
# -------------------------------------------------------------------------------------------------


def test_real_executor_without_gpu_says_so_in_one_line(sshd, registry, host_bundle) -> None:  # type: ignore[no-untyped-def]
    lines: list[str] = []
    t = transport(sshd, registry, lines)
    try:
        with pytest.raises(NoGpuError) as err:
            t.execute(host_bundle, ExecuteRequest(case_ids=("scale_i64",), protocol=TimingProtocol(), mode="paired"), progress=lines.append)
    finally:
        t.close()
    msg = str(err.value)
    assert "\n" not in msg and "no NVIDIA GPU" in msg and msg.startswith(t.label)
    assert err.value.exit_code == 3
    assert any("uploading the bundle" in ln for ln in lines)
    assert any(f"python {sys.executable}" in ln for ln in lines)  # the environment check found this venv
    assert_nothing_left(sshd)


def test_validate_only_runs_the_executor_check_on_the_host(sshd, registry, host_bundle, tmp_path) -> None:  # type: ignore[no-untyped-def]
    t = transport(sshd, registry)
    try:
        assert t.validate(host_bundle) == ["scale_i64"]
        broken = tmp_path / "broken"
        import shutil

        shutil.copytree(host_bundle, broken)
        ptx = broken / "scale_i64" / "check.ptx"
        ptx.write_text(ptx.read_text() + "\n// edited after the build\n")
        with pytest.raises(SshError, match=r"does not validate there: \S+/scale_i64/check\.ptx: does not match the "
                                           r"hash in the bundle's manifest \(case scale_i64, check\)"):
            t.validate(broken)
    finally:
        t.close()
    assert_nothing_left(sshd)


def test_result_is_fetched_with_the_protocol_and_host_key(sshd, registry, host_bundle, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The host's result comes back stamped by this transport; the host's clock does not date it."""
    result_file = tmp_path / "gpu-result.json"
    result_file.write_text(gpu_result(PROTOCOL, host_bundle, mode="aa").replace("2025-01-01T00:00:00+00:00",
                                                                           "2099-01-01T00:00:00+00:00"))
    sent = tmp_path / "request.json"
    py = fake_gpu_python(tmp_path / "host", f'cp "$request" {shlex.quote(str(sent))}; '
                                            f'echo "timing scale_i64 on the fake GPU" >&2; '
                                            f'cp {shlex.quote(str(result_file))} "$out"; exit 0')
    lines: list[str] = []
    t = transport(sshd, registry, lines, python=str(py), gpu="0", host_key="ephemeral", known_hosts="/nonexistent")
    request = ExecuteRequest(case_ids=("scale_i64",), protocol=PROTOCOL, mode="aa", case_timeout_s=30.0)
    try:
        result = t.execute(host_bundle, request, progress=lines.append)
    finally:
        t.close()
    # the whole request travels as JSON through the one converter: every setting, the mode, the deadline
    assert ExecuteRequest.from_json(sent.read_text()) == request
    extra = result.environment.extra
    assert extra["ssh_host_key_sha256"] == host_fingerprint(sshd.host_pub)
    assert extra["ssh_host"] == "127.0.0.1" and extra["ssh_port"] == str(sshd.port)
    assert extra["remote_python"] == sys.executable
    assert result.environment.gpu_uuid == "GPU-1234"
    assert not result.created.startswith("2099") and not result.created.startswith("2025")
    assert "[127.0.0.1] timing scale_i64 on the fake GPU" in lines
    assert_nothing_left(sshd)


def _forge(result: dict, what: str) -> str:  # type: ignore[type-arg]
    """The stand-in host's result with one thing changed, as a host that decides what is stored would."""
    if what == "source":
        result["source"] = {**result["source"], "git_commit": "f" * 40, "git_repo": "https://example.com/attacker"}
    elif what == "no cases":
        result["cases"] = []
    elif what == "other ptx":
        result["cases"][0]["compile_wf"]["ptx_sha256"] = "0" * 64
    elif what == "other case":
        result["cases"][0]["id"] = "axpy_f64"
    elif what == "compiler":
        result["warpforthc"]["version"] = "a warpforthc nobody sent"
    elif what == "older wfbench":
        result["wfbench_version"] = "0.0.1"
    return json.dumps(result)


@pytest.mark.parametrize("what, field", [
    ("source", "source"), ("no cases", "cases"), ("other ptx", "case scale_i64 PTX hash"),
    ("other case", "cases"), ("compiler", "warpforthc"), ("older wfbench", "wfbench_version")])
def test_a_forged_result_is_refused_naming_the_field_and_never_written(what, field, sshd, registry, host_bundle,  # type: ignore[no-untyped-def]
                                                                      tmp_path) -> None:
    """The host writes the result file; what it says was benchmarked must be what was sent."""
    result_file = tmp_path / "gpu-result.json"
    result_file.write_text(_forge(json.loads(gpu_result(PROTOCOL, host_bundle)), what))
    py = fake_gpu_python(tmp_path / "host", f'cp {shlex.quote(str(result_file))} "$out"; exit 0')
    out = tmp_path / "local" / "result.json"
    t = transport(sshd, registry, python=str(py))
    try:
        with pytest.raises(WfbenchError) as err:
            runner.run(RunRequest(cases=(), execute=ExecuteRequest(case_ids=("scale_i64",), protocol=PROTOCOL)),
                       registry, t, out=out, bundle=host_bundle)
    finally:
        t.close()
    msg = str(err.value)
    assert "\n" not in msg and f"the result's {field} " in msg and "refused and not stored" in msg, msg
    assert not out.exists()
    assert_nothing_left(sshd)


def test_only_the_files_the_manifest_names_are_uploaded_and_never_through_a_link(sshd, registry, host_bundle,  # type: ignore[no-untyped-def]
                                                                                tmp_path) -> None:
    """A link in the bundle to a private key here: a stray one stays here, a named file that is a link is
    refused in one line before anything is uploaded."""
    import shutil

    secret = tmp_path / "id_ed25519"
    secret.write_text("-----BEGIN OPENSSH PRIVATE KEY----- not to be shipped\n")
    planted = tmp_path / "planted"
    shutil.copytree(host_bundle, planted)
    (planted / "notes.txt").symlink_to(secret)
    (planted / "scale_i64" / "extra.txt").write_text("a file no manifest names\n")
    listing = tmp_path / "listing.txt"
    result_file = tmp_path / "gpu-result.json"
    result_file.write_text(gpu_result(PROTOCOL, host_bundle))
    py = fake_gpu_python(tmp_path / "host", f'(cd "$(dirname "$out")/bundle" && find . -type f | sort; '
                                            f'grep -rl "PRIVATE KEY" . || true) > {shlex.quote(str(listing))}; '
                                            f'cp {shlex.quote(str(result_file))} "$out"; exit 0')
    t = transport(sshd, registry, python=str(py))
    try:
        t.execute(planted, ExecuteRequest(case_ids=("scale_i64",), protocol=PROTOCOL))
        shipped = listing.read_text().split()
        assert sorted(shipped) == ["./manifest.json", *(f"./scale_i64/{c}.{x}" for c in ("canonical", "check")
                                                         for x in ("cu", "forth", "ptx"))], shipped
        forth = planted / "scale_i64" / "check.forth"
        forth.rename(tmp_path / "check.forth")
        forth.symlink_to(tmp_path / "check.forth")
        with pytest.raises(WfbenchError, match=r"check\.forth: a symbolic link; a bundle ships only regular files"):
            t.execute(planted, ExecuteRequest(case_ids=("scale_i64",), protocol=PROTOCOL))
    finally:
        t.close()
    assert_nothing_left(sshd)


def test_user_values_never_reach_a_shell_unquoted(sshd, registry, host_bundle, tmp_path) -> None:  # type: ignore[no-untyped-def]
    marker = f"pwned_{uuid.uuid4().hex[:8]}"
    odd = f"odd 'dir' \"x\" $(touch {marker}) `touch {marker}`; touch {marker}"
    remote_tmp = tmp_path / odd / "tmp"
    remote_tmp.mkdir(parents=True)
    result_file = tmp_path / "gpu-result.json"
    result_file.write_text(gpu_result(PROTOCOL, host_bundle))
    # exit status 1 = a case failed: the JSON is written all the same and must come back
    py = fake_gpu_python(tmp_path / odd / "bin dir", f'cp {shlex.quote(str(result_file))} "$out"; exit 1')
    t = transport(sshd, registry, python=str(py), remote_tmp=str(remote_tmp))
    try:
        result = t.execute(host_bundle, ExecuteRequest(case_ids=("scale_i64",), protocol=PROTOCOL, mode="paired"), progress=None)
    finally:
        t.close()
    assert result.environment.gpu_name == "NVIDIA GeForce RTX 4090"
    assert list(remote_tmp.iterdir()) == []
    for where in (Path.home(), tmp_path, Path.cwd()):
        assert not (where / marker).exists(), f"a shell ran user text in {where}"


def test_an_executor_killed_mid_run_leaves_its_finished_cases_locally(sshd, registry, host_bundle, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The remote executor rewrites its result after every case; when it dies, those cases come back."""
    partial = json.loads(gpu_result(PROTOCOL, host_bundle))
    partial["complete"] = False
    result_file = tmp_path / "partial.json"
    result_file.write_text(json.dumps(partial))
    py = fake_gpu_python(tmp_path / "host", f'cp {shlex.quote(str(result_file))} "$out"; kill -9 $$')
    out = tmp_path / "local" / "result.json"
    lines: list[str] = []
    t = transport(sshd, registry, lines, python=str(py))
    try:
        with pytest.raises(SshError, match=r"the executor failed \(exit "):
            t.execute(host_bundle, ExecuteRequest(case_ids=("scale_i64",), protocol=PROTOCOL), progress=lines.append,
                      out=out)
    finally:
        t.close()
    kept = load_result(out)
    assert kept.complete is False and kept.environment.extra["ssh_host"] == "127.0.0.1"
    assert any("marked incomplete" in line for line in lines)
    assert_nothing_left(sshd)


# -------------------------------------------------------------------------------------------------
# faults against the real server: one clear error, nothing left behind
# -------------------------------------------------------------------------------------------------


def test_connection_refused(sshd, registry, host_bundle) -> None:  # type: ignore[no-untyped-def]
    import sshd as helper

    t = transport(sshd, registry, port=str(helper.free_port()))
    with pytest.raises(SshError, match=r"cannot connect to .*: connection refused"):
        t.execute(host_bundle, ExecuteRequest(case_ids=("scale_i64",), protocol=PROTOCOL, mode="paired"), progress=None)
    assert_nothing_left(sshd)


def test_wrong_key_is_refused(sshd, registry, tmp_path) -> None:  # type: ignore[no-untyped-def]
    import sshd as helper

    helper.generate_key(tmp_path / "other_key")
    t = transport(sshd, registry, key_file=str(tmp_path / "other_key"))
    with pytest.raises(SshError, match=r"refused authentication with key .*other_key; check key_file="):
        t.connect()
    with pytest.raises(SshError, match="key_file .*: no such file"):
        transport(sshd, registry, key_file=str(tmp_path / "missing"))


def test_host_key_mismatch_is_refused_and_names_both_keys(sshd, registry, tmp_path) -> None:  # type: ignore[no-untyped-def]
    import sshd as helper

    wrong = helper.generate_key(tmp_path / "impostor")
    known = tmp_path / "known_hosts"
    known.write_text(f"[127.0.0.1]:{sshd.port} {wrong}\n")
    t = transport(sshd, registry, known_hosts=str(known))
    with pytest.raises(SshError) as err:
        t.connect()
    msg = str(err.value)
    assert msg.startswith("HOST KEY MISMATCH") and "\n" not in msg
    assert host_fingerprint(wrong) in msg and host_fingerprint(sshd.host_pub) in msg
    assert f"ssh-keygen -f {known} -R '[127.0.0.1]:{sshd.port}'" in msg


def test_unknown_host_needs_known_hosts_or_explicit_ephemeral(sshd, registry, tmp_path) -> None:  # type: ignore[no-untyped-def]
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    t = transport(sshd, registry, known_hosts=str(empty))
    fp = re.escape(host_fingerprint(sshd.host_pub))
    with pytest.raises(SshError, match=rf"not in .*known_hosts \(its ssh-ed25519 key is {fp}\); .*host_key=ephemeral"):
        t.connect()
    t = transport(sshd, registry, known_hosts=str(empty), host_key="ephemeral")
    try:
        t.connect()
        assert t.host_key_sha256 == host_fingerprint(sshd.host_pub)
    finally:
        t.close()
    assert empty.read_text() == ""  # an ephemeral key is never written to known_hosts


def test_remote_python_missing(sshd, registry, host_bundle) -> None:  # type: ignore[no-untyped-def]
    t = transport(sshd, registry, python="/nonexistent/python3")
    try:
        with pytest.raises(SshError, match=r"python '/nonexistent/python3' not found on the host; pass python=PATH"):
            t.execute(host_bundle, ExecuteRequest(case_ids=("scale_i64",), protocol=PROTOCOL, mode="paired"), progress=None)
    finally:
        t.close()
    assert_nothing_left(sshd)


def test_remote_executor_crash(sshd, registry, host_bundle, tmp_path) -> None:  # type: ignore[no-untyped-def]
    py = fake_gpu_python(tmp_path, 'echo "Traceback (most recent call last):" >&2; '
                                   'echo "RuntimeError: CUDA_ERROR_LAUNCH_FAILED" >&2; exit 1')
    t = transport(sshd, registry, python=str(py))
    try:
        with pytest.raises(SshError, match=r"the executor failed \(exit 1\): RuntimeError: CUDA_ERROR_LAUNCH_FAILED$"):
            t.execute(host_bundle, ExecuteRequest(case_ids=("scale_i64",), protocol=PROTOCOL, mode="paired"), progress=None)
    finally:
        t.close()
    assert_nothing_left(sshd)


def test_timeout_stops_the_remote_executor(sshd, registry, host_bundle, tmp_path) -> None:  # type: ignore[no-untyped-def]
    pids = tmp_path / "pids"
    py = fake_gpu_python(tmp_path / "host", f'echo $$ > {shlex.quote(str(pids))}; sleep 300 & '
                                            f'echo $! >> {shlex.quote(str(pids))}; wait')
    t = transport(sshd, registry, python=str(py), timeout="1.5")
    try:
        with pytest.raises(RemoteTimeout, match=r"did not finish within timeout=1.5 s; it was stopped"):
            t.execute(host_bundle, ExecuteRequest(case_ids=("scale_i64",), protocol=PROTOCOL, mode="paired"), progress=None)
    finally:
        t.close()
    assert_nothing_left(sshd)
    # stopped, not waited for: the remote shell and its 300 s sleep are gone (how fast is the machine's business)
    for pid in map(int, pids.read_text().split()):
        deadline = time.monotonic() + 60
        while Path(f"/proc/{pid}").exists() and "Z" not in _state(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not Path(f"/proc/{pid}").exists() or "Z" in _state(pid), f"remote process {pid} still runs"


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except OSError:
        return "gone"


def test_truncated_result_file(sshd, registry, host_bundle, tmp_path) -> None:  # type: ignore[no-untyped-def]
    result_file = tmp_path / "gpu-result.json"
    result_file.write_text(gpu_result(PROTOCOL, host_bundle))
    py = fake_gpu_python(tmp_path / "host", f'head -c 300 {shlex.quote(str(result_file))} > "$out"; exit 0')
    t = transport(sshd, registry, python=str(py))
    try:
        with pytest.raises(WfbenchError, match=r"result.json: not a wfbench result \(truncated JSON"):
            t.execute(host_bundle, ExecuteRequest(case_ids=("scale_i64",), protocol=PROTOCOL, mode="paired"), progress=None)
    finally:
        t.close()
    assert_nothing_left(sshd)


def test_reuse_refuses_a_python_without_the_gpu_stack(sshd, registry, host_bundle) -> None:  # type: ignore[no-untyped-def]
    base = Path(sys.base_prefix) / "bin" / "python3"
    if sys.prefix == sys.base_prefix or not base.exists():
        pytest.skip("needs a base interpreter beside the test venv")
    import subprocess

    if subprocess.run([str(base), "-c", "import numba.cuda"], capture_output=True).returncode == 0:
        pytest.skip("the base interpreter has numba-cuda")
    t = transport(sshd, registry, python=str(base), env="reuse")
    try:
        with pytest.raises(SshError, match=r"lacks numba\.cuda .*install wfbench's gpu extra there"):
            t.execute(host_bundle, ExecuteRequest(case_ids=("scale_i64",), protocol=PROTOCOL, mode="paired"), progress=None)
    finally:
        t.close()
    assert_nothing_left(sshd)


# -------------------------------------------------------------------------------------------------
# options, wheels, CLI
# -------------------------------------------------------------------------------------------------


def test_options_are_checked() -> None:
    with pytest.raises(WfbenchError, match="ssh transport: no host given"):
        SshTransport(registry=None)
    with pytest.raises(WfbenchError, match=r"unknown option\(s\) colour; known: agent, "):
        SshTransport(registry=None, host="h", colour="red")
    with pytest.raises(WfbenchError, match=r"option port='twenty' is not a whole number"):
        SshTransport(registry=None, host="h", port="twenty")
    with pytest.raises(WfbenchError, match=r"option host_key='maybe' is not one of: strict, ephemeral"):
        SshTransport(registry=None, host="h", host_key="maybe")


def test_a_shipment_reads_what_is_installed_once(registry, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """importlib.metadata.packages_distributions() reads every installed distribution's file list, and the list
    of installed distributions parses every one's metadata (about a second together in a full venv, on every ssh
    or vast run): a shipment reads each once, for the selection, the requirements and every plugin's file check,
    not once per step or per module asked about."""
    import importlib.metadata as md

    owners: list[int] = []
    listed: list[int] = []
    real_owners, real_listed = md.packages_distributions, wheels._installed
    monkeypatch.setattr(md, "packages_distributions", lambda: owners.append(1) or real_owners())
    monkeypatch.setattr(wheels, "_installed", lambda: listed.append(1) or real_listed())
    shipment = wheels.prepare(registry, ["scale_i64", "axpy_f64"])
    assert shipment.main and (len(owners), len(listed)) == (1, 1)


def test_wheels_ship_wfbench_its_cases_and_pure_dependencies(registry) -> None:  # type: ignore[no-untyped-def]
    shipment = wheels.prepare(registry, ["scale_i64", "axpy_f64"])
    names = {w.name.split("-")[0].lower() for w in shipment.wheels}
    assert {"wfbench", "attrs", "cattrs", "click", "pluggy"} <= names
    assert not names & {"numpy", "scipy"}  # compiled: provided by the host
    assert {re.split(r"[<>=!~ ]", r)[0] for r in shipment.host_requirements} >= {"numpy", "scipy"}
    main = next(w for w in shipment.wheels if w.name == shipment.main)
    with zipfile.ZipFile(main) as zf:
        members = set(zf.namelist())
        entry_points = zf.read(next(m for m in members if m.endswith(".dist-info/entry_points.txt"))).decode()
        names_in_record = {ln.rsplit(",", 2)[0] for ln in
                           zf.read(next(m for m in members if m.endswith(".dist-info/RECORD"))).decode().splitlines()}
    assert names_in_record == members
    assert {"wfbench_cases/scale_i64/scale_i64.forth", "wfbench_cases/scale_i64/scale_i64.cu",
            "wfbench_core/run/executor.py", "wfbench_transports/remote_setup.py"} <= members
    assert "scale_i64 = wfbench_cases.scale_i64" in entry_points
    assert not any("__pycache__" in m or m.endswith(".pyc") for m in members)
    for wheel in shipment.wheels:  # every RECORD line matches the member's bytes
        with zipfile.ZipFile(wheel) as zf:
            rec = next(m for m in zf.namelist() if m.endswith(".dist-info/RECORD"))
            for line in zf.read(rec).decode().splitlines():
                path, digest, size = line.rsplit(",", 2)
                if digest:
                    data = zf.read(path)
                    b64 = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
                    assert digest == f"sha256={b64}"
                    assert int(size) == len(data)


def test_the_loopback_hosts_kept_install_is_what_pip_installs(registry, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """tests/installed_once.py (the loopback host's install, tests/sshd.py): a later run with the same wheels gets
    the very files pip installed for a run of its own, and an install that fails is not kept."""
    import subprocess

    once, setup = Path(__file__).with_name("installed_once.py"), Path(wheels.__file__).with_name("remote_setup.py")

    def install(kept: Path | None, target: Path, wheel_paths: list[str]) -> subprocess.CompletedProcess[str]:
        via = [str(once), str(kept)] if kept else []
        return subprocess.run([sys.executable, *via, str(setup), "install", str(target), *wheel_paths],
                              capture_output=True, text=True)

    def files(root: Path) -> dict[Path, bytes]:
        return {p.relative_to(root): p.read_bytes() for p in root.rglob("*") if p.is_file()}

    shipped = [str(w) for w in wheels.prepare(registry, ["scale_i64"]).wheels]
    kept = tmp_path / "kept"
    runs = [install(kept, tmp_path / name, shipped) for name in ("first", "second")]
    fresh = install(None, tmp_path / "fresh", shipped)
    assert [r.returncode for r in (*runs, fresh)] == [0, 0, 0] and runs[1].stdout == fresh.stdout, runs
    assert len([p for p in kept.iterdir() if p.is_dir()]) == 1  # the second run copied what the first kept
    assert files(tmp_path / "second") == files(tmp_path / "fresh") != {}
    bad = tmp_path / "bad-1.0-py3-none-any.whl"
    bad.write_text("not a wheel\n")
    assert install(tmp_path / "kept-bad", tmp_path / "bad", [str(bad)]).returncode != 0
    assert not any(p.is_dir() for p in (tmp_path / "kept-bad").glob("*"))


def test_a_case_outside_any_distribution_cannot_be_shipped() -> None:
    from wfbench_core import hookimpl

    base = Registry.load().case("scale_i64")

    class Inline:
        @hookimpl
        def wfbench_register_cases(self, register):  # type: ignore[no-untyped-def]
            register(attrs.evolve(base, id="inline_case"))

    reg = Registry.load(plugins=[Inline()])
    with pytest.raises(WfbenchError, match=r"case 'inline_case' comes from plugin .* not part of an installed "
                                           r"distribution; install it as a package"):
        wheels.prepare(reg, ["inline_case"])


def test_cli_lists_transports_and_their_options() -> None:
    from click.testing import CliRunner

    from wfbench_core.cli import main

    out = CliRunner().invoke(main, ["transports"])
    assert out.exit_code == 0, out.output
    assert "ssh options (wfbench transports ssh): host, port, user, key_file" in out.output
    assert "vast options (wfbench transports vast): mode, gpu_name, arch" in out.output
    out = CliRunner().invoke(main, ["transports", "ssh"])
    assert out.exit_code == 0 and "host_key" in out.output and "[default: strict]" in out.output


def test_cli_run_over_ssh(sshd, warpforthc, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """``wfbench run --transport ssh``: built here with the real warpforthc, executed on the host (no GPU)."""
    import subprocess

    opts = [x for k, v in sshd.options().items() for x in ("--transport-opt", f"{k}={v}")]
    proc = subprocess.run([sys.executable, "-m", "wfbench_core", "run", "--case", "scale_i64", "--warpforthc",
                           str(warpforthc), "--transport", "ssh", *opts, "--out", str(tmp_path / "r.json")],
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "WFBENCH_DISABLE_PLUGIN_AUTOLOAD": ""})
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("wfbench: error:")]
    assert proc.returncode == 3, proc.stderr
    assert len(errors) == 1 and "no NVIDIA GPU" in errors[0] and f"127.0.0.1:{sshd.port}" in errors[0]
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "r.json").exists()
    assert_nothing_left(sshd)


def test_every_remote_option_is_documented() -> None:
    from wfbench_transports.ssh import SSH_OPTIONS
    from wfbench_transports.vast import VAST_OPTIONS

    doc = (Path(__file__).parent.parent / "docs" / "remote.md").read_text()
    missing = [o.name for o in (*SSH_OPTIONS, *VAST_OPTIONS) if f"`{o.name}`" not in doc]
    assert missing == [], f"options missing from docs/remote.md: {missing}"


def _install_plugin_dist(site: Path) -> None:
    """Install (by hand, as pip would) a third-party plugin distribution ``acme-wfbench`` into ``site``."""
    files = {
        "acme_wfbench/__init__.py": (
            '"""A third-party wfbench plugin: one case, registered through the wfbench entry-point group."""\n'
            "import attrs\n"
            "from wfbench_core import hookimpl\n"
            "from wfbench_cases.scale_i64 import CASE\n\n"
            'ACME = attrs.evolve(CASE, id="acme_scale_i64")\n\n\n'
            "@hookimpl\n"
            "def wfbench_register_cases(register):\n"
            "    register(ACME)\n"
        ),
        "acme_wfbench-1.2.dist-info/METADATA": "Metadata-Version: 2.1\nName: acme-wfbench\nVersion: 1.2\n"
                                               "Requires-Dist: wfbench\n",
        "acme_wfbench-1.2.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: hand\nRoot-Is-Purelib: true\n"
                                            "Tag: py3-none-any\n",
        "acme_wfbench-1.2.dist-info/entry_points.txt": "[wfbench]\nacme = acme_wfbench\n",
        "acme_wfbench-1.2.dist-info/top_level.txt": "acme_wfbench\n",
    }
    record = []
    for rel, text in files.items():
        path = site / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{rel},sha256={digest},{len(text.encode())}")
    record.append("acme_wfbench-1.2.dist-info/RECORD,,")
    (site / "acme_wfbench-1.2.dist-info" / "RECORD").write_text("\n".join(record) + "\n")


def test_third_party_case_plugin_is_shipped_and_validates_on_the_host(sshd, tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from wfbench_core.testing import bundle_from_ptx, ptx_dir_loader

    if gpu_stack_missing():
        pytest.skip(f"the host's Python needs wfbench's gpu extra: {gpu_stack_missing()}")
    site = tmp_path / "site-packages"
    _install_plugin_dist(site)
    monkeypatch.syspath_prepend(str(site))
    import importlib

    importlib.invalidate_caches()
    reg = Registry.load()
    assert reg.cases["acme_scale_i64"].plugin == "acme (acme-wfbench)"
    shipment = wheels.prepare(reg, ["acme_scale_i64"])
    assert "acme_wfbench-1.2-py3-none-any.whl" in shipment.plugin_wheels
    loader = ptx_dir_loader(STORED_PTX)
    out = tmp_path / "bundle"
    bundle_from_ptx([reg.case("acme_scale_i64")], out, lambda case, config: loader(reg.case("scale_i64"), config),
                    plugin="acme (acme-wfbench)")
    t = transport(sshd, reg)
    try:
        assert t.validate(out) == ["acme_scale_i64"]  # the host knew the case only from the shipped wheel
    finally:
        t.close()
    assert_nothing_left(sshd)


def test_venv_path_errors_are_clear(sshd, registry, host_bundle, tmp_path) -> None:  # type: ignore[no-untyped-def]
    real, host_python = shlex.quote(sys.executable), shlex.quote(sshd.python)
    host = tmp_path / "host"
    host.mkdir()
    no_ensurepip = host / "python-a"
    no_ensurepip.write_text('#!/bin/sh\ncase " $* " in *" -m venv "*) echo "Error: ensurepip is not available" >&2; '
                            f'exit 1;; esac\nexec {host_python} "$@"\n')
    without_pip = host / "python-b"
    without_pip.write_text(f'#!/bin/sh\ncase " $* " in *" -m venv "*) exec {real} -m venv --without-pip "$3";; esac\n'
                           f'exec {host_python} "$@"\n')
    for script in (no_ensurepip, without_pip):
        script.chmod(0o755)
    venv = tmp_path / "venv"
    t = transport(sshd, registry, python=str(no_ensurepip), env="venv", venv=str(venv))
    try:
        with pytest.raises(SshError, match=rf"creating venv {re.escape(str(venv))} failed \(exit 1\): Error: "
                                           r"ensurepip is not available"):
            t.execute(host_bundle, ExecuteRequest(case_ids=("scale_i64",), protocol=PROTOCOL, mode="paired"), progress=None)
    finally:
        t.close()
    t = transport(sshd, registry, python=str(without_pip), env="venv", venv=str(venv))
    try:
        with pytest.raises(SshError, match=r"pip install 'wfbench\[gpu\]' into .* failed: .*No module named pip; "
                                           r"the host needs PyPI access"):
            t.execute(host_bundle, ExecuteRequest(case_ids=("scale_i64",), protocol=PROTOCOL, mode="paired"), progress=None)
    finally:
        t.close()
    assert (venv / "bin" / "python").exists()  # the venv is kept for the next run; the work dir is not
    assert_nothing_left(sshd)


# -------------------------------------------------------------------------------------------------
# wfbench's GPU tests on the host, before the bundle (gpu_tests=CHECKOUT)
# -------------------------------------------------------------------------------------------------

ROOT = Path(__file__).resolve().parent.parent


def test_gpu_tests_run_on_the_host_first_and_their_counts_are_in_the_result(sshd, registry, host_bundle, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """pytest is shipped as a wheel with wfbench, the GPU test modules run there with -m gpu (here they skip:
    this host has no GPU), and the counts land in the result; the work directory is removed afterwards."""
    from wfbench_transports import host_tests

    result_file = tmp_path / "gpu-result.json"
    result_file.write_text(gpu_result(PROTOCOL, host_bundle))
    order = tmp_path / "order"
    py = fake_gpu_python(tmp_path / "host", f'echo execute >> {shlex.quote(str(order))}; '
                                            f'cp {shlex.quote(str(result_file))} "$out"; exit 0')
    lines: list[str] = []
    t = transport(sshd, registry, lines, python=str(py), gpu_tests=str(ROOT))
    try:
        result = t.execute(host_bundle, ExecuteRequest(case_ids=("scale_i64",), protocol=PROTOCOL), progress=lines.append)
    finally:
        t.close()
    data = json.loads(result.environment.extra["gpu_tests"])
    modules = host_tests.modules_marked(ROOT, "gpu")
    assert {"tests/test_gpu.py", "tests/test_timing_gpu.py", "tests/test_gpu_faults.py"} <= set(modules)
    assert data["skipped"] >= len(modules) and data["passed"] == data["failed"] == data["errors"] == 0, data
    said = next(i for i, ln in enumerate(lines) if "GPU tests: " in ln)
    assert lines[said].endswith(f"GPU tests: {host_tests.describe(data)}")
    assert said < next(i for i, ln in enumerate(lines) if "executing the bundle" in ln)  # tests first
    assert order.read_text() == "execute\n"
    assert_nothing_left(sshd)


def test_gpu_tests_option_is_checked_before_anything_is_shipped(sshd, registry, host_bundle, tmp_path) -> None:  # type: ignore[no-untyped-def]
    t = transport(sshd, registry, gpu_tests=str(tmp_path))
    try:
        with pytest.raises(WfbenchError, match=r"^gpu_tests=.*: not a wfbench checkout \(no tests/conftest.py"):
            t.execute(host_bundle, ExecuteRequest(case_ids=("scale_i64",), protocol=PROTOCOL))
    finally:
        t.close()
    assert_nothing_left(sshd)


def test_junit_counts_name_the_failed_tests() -> None:
    from wfbench_transports import host_tests

    xml = ('<testsuites><testsuite name="pytest"><testcase classname="tests.test_gpu" name="test_a"/>'
           '<testcase classname="tests.test_gpu" name="test_b"><failure message="x"/></testcase>'
           '<testcase classname="tests.test_gpu" name="test_c"><skipped message="no GPU"/></testcase>'
           '<testcase classname="tests.test_timing_gpu" name="test_d"><error message="fixture"/></testcase>'
           '</testsuite></testsuites>')
    data = host_tests.counts(xml)
    assert host_tests.describe(data) == "1 passed, 1 failed, 1 errors, 1 skipped"
    assert data["failed_tests"] == ["tests.test_gpu::test_b", "tests.test_timing_gpu::test_d"]
    with pytest.raises(WfbenchError, match="not JUnit XML"):
        host_tests.counts("Traceback")
