"""The vast transport: exact GPU pinning, pricing, cost cap, and a destroy that always happens exactly once.

Nothing is faked at the SDK: the transport drives the real ``vastai`` package, pointed by ``VAST_URL`` at
the stand-in of Vast.ai's HTTP API in tests/vast_api.py (on 127.0.0.1), which injects the faults (HTTP
401/429/5xx, ``success: false``, lost and slow replies, Ctrl-C while a request waits, an instance that never
runs) and observes every destroy. The rented "instance" is the real OpenSSH server on 127.0.0.1 from
tests/sshd.py: the key the session attaches through the API lands in that server's authorized_keys, so
everything after renting runs for real.
"""

from __future__ import annotations

import inspect
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

from wfbench_core.errors import WfbenchError
from wfbench_core.discover.registry import Registry
from wfbench_core.record.request import ExecuteRequest
from wfbench_core.record.results import TimingProtocol, dumps
from wfbench_transports.vast import (
    GPU_MODELS,
    OfferFilter,
    VastError,
    VastSession,
    VastTransport,
    cc_of,
    choose_offer,
    find_api_key,
    gpu_model,
)

import vast_api  # tests/vast_api.py
from sshd import fake_gpu_python, free_port, gpu_result  # tests/sshd.py
from vast_api import VastApi, offer
from wfbench_transports import vast_selfstop

pytest.importorskip("paramiko")

TESTS = Path(__file__).parent
ROOT = TESTS.parent
PROTOCOL = TimingProtocol(warmup_s=0.0, min_sample_ms=12.5, samples=7)
API_KEY = "vk_9f8e7d6c5b4a39281706f5e4d3c2b1a0"
#: the SDK methods the transport calls (besides the constructor), checked against the code below
SDK_METHODS = {"show_instances", "search_offers", "create_instance", "show_instance", "attach_ssh",
               "destroy_instance"}


@pytest.fixture(autouse=True)
def no_real_api(monkeypatch: pytest.MonkeyPatch) -> None:
    """A test that reaches the API without a stand-in gets "connection refused" on 127.0.0.1, never Vast.ai."""
    monkeypatch.setenv("VAST_URL", "http://127.0.0.1:9")


@pytest.fixture
def serve(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """``serve(offers, sshd=…, **kw)``: a started stand-in, with ``VAST_URL`` pointing the SDK at it."""
    pytest.importorskip("vastai")
    servers: list[VastApi] = []

    def start(offers: list[dict[str, Any]], sshd: Any = None, **kw: Any) -> VastApi:
        api = VastApi(offers, API_KEY, sshd=sshd, **kw).start()
        assert api.url.startswith("http://127.0.0.1:")
        monkeypatch.setenv("VAST_URL", api.url)
        servers.append(api)
        return api

    yield start
    for api in servers:
        api.stop()


def session_options(sshd: Any = None, **extra: Any) -> dict[str, Any]:
    opts = {"python": sys.executable, "env": "reuse", "poll_s": "0.01", "wait_running_s": "5", "wait_ssh_s": "5",
            "connect_timeout": "5", "api_timeout_s": "5", "destroy_retries": "3",
            "api_url": os.environ["VAST_URL"]}  # the stand-in's (tests' fixtures set VAST_URL)
    if sshd is not None:
        opts.update(user=sshd.user, remote_tmp=str(sshd.remote_tmp), python=sshd.python)
    opts.update(extra)
    return opts


def make(sshd: Any, registry: Registry, lines: list[str] | None = None, **extra: Any) -> VastSession:
    return VastSession(registry=registry, progress=(lines.append if lines is not None else lambda m: None),
                       api_key=API_KEY, **session_options(sshd, **extra))


def assert_destroyed_once(api: VastApi) -> None:
    """Every instance rented from the stand-in is gone, and exactly one destroy request removed each."""
    assert api.leaked() == [], f"leaked: {api.leaked()}"
    assert {i: api.destroyed.get(i, 0) for i in api.created} == {i: 1 for i in api.created}


# -------------------------------------------------------------------------------------------------
# the GPU table and offer selection: exact pin, near misses, broad mode
# -------------------------------------------------------------------------------------------------


def canonical(key: str = "RTX_4090", **kw: Any) -> OfferFilter:
    cfg = {"mode": "canonical", "gpu_name": key, "arch": None, "min_arch": "sm_75", "max_dph": 0.50,
           "min_reliability": 0.95, "min_inet_down": 100.0, "min_cuda": 13.0, "disk_gb": 20.0, **kw}
    return OfferFilter.from_options(cfg)


NEAR_MISSES = [
    offer(1, "RTX 4090D", dph=0.20),  # a different model (Vast's name) that shares the prefix
    offer(2, "RTX 4090", dph=0.62),  # over the ceiling
    offer(3, "RTX 4090", cc=860, dph=0.21),  # misreported architecture
    offer(4, "RTX 4090 Ti", dph=0.22),
    offer(5, "RTX 4090", dph=0.23, num_gpus=2),
    offer(6, "RTX 4090", dph=0.24, reliability2=0.80),
    offer(7, "RTX 4090", dph=0.25, inet_down=20.0),
    offer(8, "RTX 4090", dph=0.26, cuda_max_good=12.4),
    offer(9, "RTX_4090X", dph=0.18),
    offer(10, "rtx 4090", dph=0.19),
    offer(11, "RTX 4090", dph=0.17, disk_space=16.0),  # cannot hold the rental's 20 GB
]


def priced(offers: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Offers as the search returns them (here: storage not counted, so dph_total = dph_base)."""
    return [{**o, "dph_total": o["dph_base"]} for o in offers]


def test_canonical_takes_only_the_exact_model_and_architecture() -> None:
    chosen = choose_offer(priced([*NEAR_MISSES, offer(20, dph=0.41), offer(21, dph=0.35)]), canonical())
    assert chosen["id"] == 21
    assert choose_offer(priced([offer(30, "RTX_4090", dph=0.3)]), canonical())["id"] == 30  # the query's spelling


def test_near_misses_only_is_a_clear_error() -> None:
    with pytest.raises(VastError) as err:
        choose_offer(priced(NEAR_MISSES), canonical())
    msg = str(err.value)
    assert "\n" not in msg
    assert msg.startswith("no Vast.ai offer is exactly RTX_4090 / sm_89, at most $0.50/h with 20 GB disk")
    assert "rejected 11" in msg and "offer 1 'RTX 4090D': model 'RTX 4090D' is not 'RTX 4090'" in msg
    assert "mode=broad" in msg
    assert canonical().reject({**offer(11, dph_total=0.17), "disk_space": 16.0}) == "16.0 GB of disk < 20 GB"


def test_empty_search_is_a_clear_error() -> None:
    with pytest.raises(VastError, match=r"no Vast.ai offer is exactly RTX_4090 / sm_89.*\(the search returned none\)"):
        choose_offer([], canonical())


def test_broad_mode_takes_the_cheapest_capable_gpu() -> None:
    broad = OfferFilter.from_options({"mode": "broad", "gpu_name": "anything at all", "arch": None, "min_arch": "sm_75",
                                      "max_dph": 0.5, "min_reliability": 0.95, "min_inet_down": 100.0,
                                      "min_cuda": 13.0, "disk_gb": 20.0})
    offers = priced([offer(1, "GTX 1080", cc=610, dph=0.05), offer(2, "RTX 3060", cc=860, dph=0.09),
                     offer(3, "RTX 4090D", dph=0.2)])
    assert choose_offer(offers, broad)["id"] == 2
    assert "compute_cap>=750" in broad.query() and "gpu_name" not in broad.query()


def test_query_is_what_the_real_sdk_parses() -> None:
    pytest.importorskip("vastai")
    from vastai.api.query import offers_alias, offers_fields, offers_mult, parse_query

    parsed = parse_query(canonical().query(), {}, offers_fields, offers_alias, offers_mult)
    assert parsed["gpu_name"] == {"eq": "RTX 4090"} and parsed["compute_cap"] == {"eq": "890"}
    assert parsed["num_gpus"] == {"eq": "1"} and parsed["dph_total"] == {"lte": "0.5"}
    assert parsed["disk_space"] == {"gte": "20"} and "gpu_ram" not in parsed
    parsed = parse_query(canonical("A100_SXM4_80GB").query(), {}, offers_fields, offers_alias, offers_mult)
    assert parsed["gpu_name"] == {"eq": "A100 SXM4"} and parsed["compute_cap"] == {"eq": "800"}
    assert parsed["gpu_ram"] == {"gte": 72000.0, "lte": 92000.0}  # MB, as offers report it


def test_the_gpu_table_pins_names_exactly() -> None:
    keys = [m.key for m in GPU_MODELS]
    assert len(set(keys)) == len(keys) and len({m.reported for m in GPU_MODELS}) == len(GPU_MODELS)
    assert {"RTX_4090", "RTX_3090", "L40S", "A100_PCIE_40GB", "A100_PCIE_80GB", "A100_SXM4_40GB", "A100_SXM4_80GB",
            "H100_SXM", "H100_PCIE", "H100_NVL", "H200"} <= set(keys)
    assert gpu_model("RTX 4090") == gpu_model("rtx_4090") == gpu_model("RTX_4090")
    h100 = gpu_model("H100 SXM")
    assert (h100.vast, h100.reported, h100.cc) == ("H100 SXM", "NVIDIA H100 80GB HBM3", 900)
    with pytest.raises(VastError) as err:
        gpu_model("RTX_4090_D")
    msg = str(err.value)
    assert "\n" not in msg and msg.startswith("vast transport: gpu_name='RTX_4090_D' is not a GPU model wfbench can "
                                              "pin; known: RTX_4090, RTX_3090, L40S, A100_PCIE_40GB")
    with pytest.raises(VastError, match=r"gpu_name='A100 PCIE' names several memory sizes on Vast.ai; pick one of "
                                        r"A100_PCIE_40GB, A100_PCIE_80GB$"):
        gpu_model("A100 PCIE")
    with pytest.raises(VastError, match=r"arch=sm_89 contradicts gpu_name=H100_SXM, which is sm_90"):
        canonical("H100_SXM", arch="sm_89")
    assert canonical("H100_SXM", arch="9.0").cc == 900 and canonical("H200").cc == 900
    a100 = canonical("A100_PCIE_40GB")
    assert a100.reject(offer(1, "A100 PCIE", cc=800, gpu_ram=81920.0, dph_total=0.4)) == \
        "81920.0 MB of GPU memory is not the 40 GB model"
    assert a100.reject(offer(1, "A100 PCIE", cc=800, gpu_ram=40960.0, dph_total=0.4)) is None


def test_the_documented_table_is_the_code_table() -> None:
    doc = (ROOT / "docs" / "remote.md").read_text()
    rows = re.findall(r"^\| `(\w+)` \| `([^`]+)`(?:, (\d+) GB)? \| `([^`]+)` \| sm_(\d+) \|$", doc, re.M)
    assert [(k, v, int(gb) if gb else None, name, int(cc) * 10) for k, v, gb, name, cc in rows] == \
        [(m.key, m.vast, m.vram_gb, m.reported, m.cc) for m in GPU_MODELS]


def test_arch_spellings() -> None:
    assert cc_of("sm_89") == cc_of("8.9") == 890
    assert cc_of("sm_90") == 900 and cc_of("sm_100") == 1000 and cc_of("12.0") == 1200
    with pytest.raises(VastError, match="not a compute capability"):
        cc_of("ampere")


# -------------------------------------------------------------------------------------------------
# one key variable, the unattended cleanup command, the dependency floor
# -------------------------------------------------------------------------------------------------


def test_api_key_from_vast_api_key_or_the_vastai_config(monkeypatch, tmp_path) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.delenv("VAST_API_KEY", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("VASTAI" + "_API_KEY", "another-name")  # not a name the vastai CLI reads: ignored
    with pytest.raises(VastError, match="no Vast.ai API key: pass api_key_file=FILE, set VAST_API_KEY"):
        find_api_key()
    (tmp_path / ".vast_api_key").write_text("legacy-key\n")
    assert find_api_key() == "legacy-key"
    (tmp_path / "config" / "vastai").mkdir(parents=True)
    (tmp_path / "config" / "vastai" / "vast_api_key").write_text("xdg-key\n")
    assert find_api_key() == "xdg-key"
    monkeypatch.setenv("VAST_API_KEY", "env-key")
    assert find_api_key() == "env-key"
    (tmp_path / "key").write_text("file-key\n")
    assert find_api_key(str(tmp_path / "key")) == "file-key"  # api_key_file comes first
    with pytest.raises(VastError, match=r"api_key_file=\S+/nokey: no such file"):
        find_api_key(str(tmp_path / "nokey"))


def test_the_key_goes_only_to_api_url_never_to_an_address_from_the_environment(registry, serve, tmp_path,  # type: ignore[no-untyped-def]
                                                                                monkeypatch) -> None:
    """An earlier CI step can set VAST_URL (through $GITHUB_ENV): the key would go to its listener."""
    import socket

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    listener.settimeout(0.5)
    monkeypatch.setenv("VAST_URL", f"http://127.0.0.1:{listener.getsockname()[1]}")
    (tmp_path / "key").write_text(API_KEY + "\n")
    try:
        s = VastSession(registry=registry, progress=lambda m: None, api_key_file=str(tmp_path / "key"),
                        **{**session_options(), "api_url": "https://console.vast.ai"})
        with pytest.raises(VastError) as err:
            s.start()
        msg = str(err.value)
        assert "VAST_URL=http://127.0.0.1:" in msg and "sends the Vast.ai key only to api_url" in msg, msg
        assert API_KEY not in msg and "\n" not in msg
        with pytest.raises(socket.timeout):
            listener.accept()  # nothing ever connected
    finally:
        listener.close()
    api = serve([offer(5)])  # VAST_URL and api_url agree: the stand-in gets the key read from the file
    s = VastSession(registry=registry, progress=lambda m: None, api_key_file=str(tmp_path / "key"),
                    **session_options(budget_min="1", max_cost="0.001"))
    with pytest.raises(VastError, match="over max_cost"):
        s.start()
    assert ("search", None, "") in api.requests


def _project_text() -> Iterator[tuple[Path, str]]:
    for folder in ("docs", ".github", "wfbench_core", "wfbench_transports", "wfbench_cases", ".ci"):
        for path in sorted((ROOT / folder).rglob("*")):
            if path.is_file() and path.suffix in (".md", ".py", ".yml", ".yaml", "") and "__pycache__" not in str(path):
                yield path, path.read_text(errors="replace")
    yield ROOT / "README.md", (ROOT / "README.md").read_text()


def test_every_cleanup_command_is_unattended_and_one_key_name_is_used() -> None:
    """``vastai destroy instance ID`` asks for confirmation and aborts unattended: every mention has ``-y``."""
    from wfbench_transports.vast import destroy_command

    assert destroy_command(42) == "vastai destroy instance 42 -y"
    mentions = bad = 0
    for path, text in _project_text():
        for m in re.finditer(r"vastai destroy instances? ([^\n`]*)", text):
            mentions += 1
            if not re.search(r"(^|\s)(-y|--yes)\b", m.group(1)):
                bad += 1
                print(f"{path.relative_to(ROOT)}: {m.group(0)!r} lacks -y")
        assert "VASTAI" + "_API_KEY" not in text, f"{path}: the vastai CLI reads VAST_API_KEY only"
    assert mentions >= 1 and bad == 0


def _requirement(dist: str) -> Any:
    from packaging.requirements import Requirement

    from pyproject_data import load

    extra = load(ROOT / "pyproject.toml")["project"]["optional-dependencies"]["vast"]
    found = [Requirement(r) for r in extra if Requirement(r).name == dist]
    assert len(found) == 1, f"the vast extra must name {dist} once: {extra}"
    return found[0]


def test_the_installed_sdk_meets_the_vast_extra() -> None:
    """The extra's floor is what the signature test below runs against (CI installs the extra as declared)."""
    pytest.importorskip("vastai")
    from importlib.metadata import version

    req = _requirement("vastai")
    assert req.specifier.contains(version("vastai")), f"installed vastai {version('vastai')} is outside {req}"
    assert req.specifier.contains("1.5.6") and not req.specifier.contains("1.5.5")  # ssh=/direct= came in 1.5.6


# -------------------------------------------------------------------------------------------------
# a whole rental through the real SDK: the bundle runs; every SDK call fits the installed signatures
# -------------------------------------------------------------------------------------------------


Calls = list[tuple[str, tuple[Any, ...], dict[str, Any]]]


def spy_on_the_sdk(monkeypatch: pytest.MonkeyPatch) -> tuple[Calls, type]:
    """Record every call the transport makes on ``vastai.VastAI`` (the real class still does the work)."""
    import vastai

    real = vastai.VastAI
    calls: Calls = []

    class Recorded(real):  # type: ignore[misc, valid-type]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            calls.append(("__init__", args, kwargs))
            super().__init__(*args, **kwargs)

        def __getattribute__(self, name: str) -> Any:
            attr = super().__getattribute__(name)
            if name.startswith("_") or not callable(attr) or not hasattr(real, name):
                return attr

            def call(*args: Any, **kwargs: Any) -> Any:
                calls.append((name, args, kwargs))
                return attr(*args, **kwargs)

            return call

    monkeypatch.setattr(vastai, "VastAI", Recorded)
    return calls, real


def assert_calls_fit_the_installed_sdk(calls: Calls, sdk: type) -> None:
    """Each recorded call binds to the real method's signature, every keyword by name (not via ``**kwargs``)."""
    from vastai.api.client import VastClient

    for name, args, kwargs in calls:
        sig = inspect.signature(getattr(sdk, name))
        sig.bind(None, *args, **kwargs)  # TypeError when the installed SDK would reject the call
        named = {p.name for p in sig.parameters.values() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
        assert set(kwargs) <= named, f"VastAI.{name}{sig} takes {sorted(set(kwargs) - named)} only through **kwargs"
    assert "timeout" in inspect.signature(VastClient.__init__).parameters  # the per-request timeout the session sets
    source = "".join(p.read_text() for p in sorted((ROOT / "wfbench_transports").glob("vast*.py")))
    used = set(re.findall(r"\bsdk\.(\w+)", source)) - {"client"}
    assert used == SDK_METHODS, f"the transport calls {sorted(used)}; this test knows {sorted(SDK_METHODS)}"
    assert {name for name, _, _ in calls} == SDK_METHODS | {"__init__"}


def test_rental_runs_the_bundle_through_the_real_sdk(sshd, registry, host_bundle, tmp_path, serve,  # type: ignore[no-untyped-def]
                                                     monkeypatch) -> None:
    """H100 SXM: Vast's name and NVML's share no suffix, so only the table can pin it (the fixed bug)."""
    result_file = tmp_path / "gpu-result.json"
    result_file.write_text(gpu_result(PROTOCOL, host_bundle, gpu_name="NVIDIA H100 80GB HBM3", cc="9.0"))
    py = fake_gpu_python(tmp_path / "host", f'cp {shlex.quote(str(result_file))} "$out"; exit 0')
    api = serve([offer(5, "H100 SXM", cc=900, dph=0.30, gpu_ram=81559.0)], sshd)
    calls, sdk = spy_on_the_sdk(monkeypatch)
    lines: list[str] = []
    t = VastTransport(registry=registry, progress=lines.append, api_key=API_KEY,
                      **session_options(sshd, python=str(py), gpu_name="H100_SXM", max_dph="2"))
    assert t.gpu_arch() == "sm_90"  # known before renting: the bundle is built for the pinned GPU
    try:
        result = t.execute(host_bundle, ExecuteRequest(case_ids=("scale_i64",), protocol=PROTOCOL), progress=lines.append)
    finally:
        t.close()
    iid = api.created[0]
    extra = result.environment.extra
    assert extra["transport"] == "vast" and extra["vast_instance_id"] == str(iid)
    assert extra["vast_offer_id"] == "5" and extra["vast_machine_id"] == "50005" and extra["vast_gpu_name"] == "H100 SXM"
    assert extra["vast_dph_total"] == f"{0.30 + 0.10 * 20 / vast_api.HOURS_PER_MONTH:.4f}"
    assert extra["ssh_host_key_sha256"].startswith("SHA256:") and result.environment.gpu_uuid == "GPU-1234"
    create = api.bodies["create"][0]
    assert create["label"] == "wfbench" and create["image"] == "nvidia/cuda:12.4.0-devel-ubuntu22.04"
    assert create["disk"] == 20.0 and create["runtype"] == "ssh_direc ssh_proxy"
    search = api.bodies["search"][0]
    assert search["allocated_storage"] == 20.0 and search["disk_space"] == {"gte": "20"}
    assert_destroyed_once(api)
    assert api.destroy_requests(iid) == 1 and sshd.leftovers() == []
    t.close()  # closing again destroys nothing more
    assert api.destroy_requests(iid) == 1
    assert API_KEY not in dumps(result) + "\n".join(lines)
    assert_calls_fit_the_installed_sdk(calls, sdk)
    init = calls[0][2]
    assert init["server_url"] == api.url and init["api_key"] == API_KEY


def test_a_result_from_another_gpu_model_is_discarded(sshd, registry, host_bundle, tmp_path, serve) -> None:  # type: ignore[no-untyped-def]
    result_file = tmp_path / "gpu-result.json"
    result_file.write_text(gpu_result(PROTOCOL, host_bundle, gpu_name="NVIDIA GeForce RTX 4090 D"))
    py = fake_gpu_python(tmp_path / "host", f'cp {shlex.quote(str(result_file))} "$out"; exit 0')
    api = serve([offer(5)], sshd)
    with pytest.raises(VastError, match=r"ran on NVIDIA GeForce RTX 4090 D .* not the pinned RTX_4090 "
                                        r"\(NVIDIA GeForce RTX 4090, 8.9\); the result is not canonical"):
        with make(sshd, registry, python=str(py)) as s:
            s.execute(host_bundle, ExecuteRequest(case_ids=("scale_i64",), protocol=PROTOCOL))
    assert_destroyed_once(api)


# -------------------------------------------------------------------------------------------------
# before renting: pricing at the rental's disk, cost cap, orphans, a wrong key
# -------------------------------------------------------------------------------------------------


def test_the_cap_covers_the_offers_network_prices(registry, serve) -> None:  # type: ignore[no-untyped-def]
    """Set-up downloads gigabytes: an offer's $/GB counts. Offer 1 is cheapest by the hour and dearest in all;
    an offer without network prices is not taken."""
    api = serve([offer(1, dph=0.20, inet_down_cost=0.05, inet_up_cost=0.05),
                 offer(2, dph=0.30, inet_down_cost=0.001, inet_up_cost=0.001),
                 offer(3, dph=0.10, inet_down_cost=None)])
    lines: list[str] = []
    with pytest.raises(VastError, match=r"cost estimate \$0.17 \(\$0.303/h for 30 min, network \$0.02 for 15 GB "
                                        r"down and 1 GB up\) is over max_cost=\$0.10"):
        make(None, registry, lines, budget_min="30", max_cost="0.10").start()
    assert any(ln.startswith("vast: offer 2: ") for ln in lines) and api.created == []
    del api.offers[2]
    with pytest.raises(VastError, match=r"cost estimate \$0.90 .*network \$0.80 for 15 GB down"):
        make(None, registry, budget_min="30", max_cost="0.50").start()
    del api.offers[1]
    with pytest.raises(VastError, match=r"offer 3 'RTX 4090': no network prices"):
        make(None, registry, budget_min="30", max_cost="0.50").start()
    assert api.created == []


def test_offers_are_priced_with_the_rentals_disk(registry, serve) -> None:  # type: ignore[no-untyped-def]
    """Cheapest with Vast's default 5 GB is offer 1; with the 20 GB the rental takes it is offer 2."""
    api = serve([offer(1, dph=0.30, storage_cost=2.0), offer(2, dph=0.32, storage_cost=0.05),
                 offer(3, dph=0.10, disk_space=10.0)])  # cheapest of all, but its disk cannot hold the rental
    at = {n: {o["id"]: o["dph_base"] + o["storage_cost"] * n / vast_api.HOURS_PER_MONTH for o in api.offers.values()}
          for n in (5, 20)}
    assert at[5][1] < at[5][2] and at[20][2] < at[20][1]
    lines: list[str] = []
    s = make(None, registry, lines, budget_min="120", max_cost="0.10")
    with pytest.raises(VastError, match=rf"cost estimate \$0.64 \(\${at[20][2]:.3f}/h for 120 min, network \$0.00 "
                                        r"for 15 GB down and 1 GB up\) is over max_cost=\$0.10"):
        s.start()
    assert any(ln.startswith(f"vast: offer 2: RTX 4090 sm_89, machine 50002, ${at[20][2]:.3f}/h") for ln in lines)
    assert api.bodies["search"][0]["allocated_storage"] == 20.0 and api.created == []


def test_orphans_with_our_label_are_destroyed_first(registry, serve) -> None:  # type: ignore[no-untyped-def]
    api = serve([], existing=[{"id": 11, "label": "wfbench"}, {"id": 12, "label": "someone-else"}])
    with pytest.raises(VastError, match="the search returned none"):
        make(None, registry).start()
    assert api.destroyed == {11: 1} and 12 in api.instances
    routes = [r for r, _, _ in api.requests]
    assert routes.index("destroy") < routes.index("search")


def test_a_wrong_api_key_is_one_line_without_the_key(registry, serve) -> None:  # type: ignore[no-untyped-def]
    api = serve([offer(1)])
    wrong = "vk_wrong_0123456789abcdef"
    s = VastSession(registry=registry, progress=lambda m: None, api_key=wrong, **session_options())
    with pytest.raises(VastError) as err:
        s.start()
    assert str(err.value) == ("Vast.ai listing instances failed: HTTP 401 Unauthorized (please log in or sign up); "
                              "check the API key (VAST_API_KEY)")
    assert api.created == [] and wrong not in str(err.value)


# -------------------------------------------------------------------------------------------------
# faults at the API: every one ends with nothing leaked, each instance destroyed exactly once
# -------------------------------------------------------------------------------------------------

# name: (faults as (route, kind, times), offer's rentals available, options, expected: error text, None when the
# rental must come up anyway, or KeyboardInterrupt; instances the stand-in must have created)
API_FAULTS: dict[str, tuple[list[tuple[str, Any, Any]], int, dict[str, str], Any, int]] = {
    "search: HTTP 401": ([("search", 401, 1)], 1, {}, "Vast.ai offer search failed: HTTP 401 Unauthorized (injected HTTP 401); "
                                                      "check the API key (VAST_API_KEY)", 0),
    "search: HTTP 429 throughout": ([("search", 429, None)], 1, {},
                                    "Vast.ai offer search failed: HTTP 429 Too Many Requests (injected HTTP 429); Vast.ai is "
                                    "rate-limiting this key, try again later", 0),
    "search: HTTP 429 once (the SDK retries)": ([("search", 429, 1)], 1, {}, None, 1),
    "search: HTTP 500": ([("search", 500, 1)], 1, {}, "Vast.ai offer search failed: HTTP 500 Internal Server Error (injected "
                                                      "HTTP 500); a Vast.ai server error, try again later", 0),
    "search: slow reply": ([("search", "slow", None)], 1, {"api_timeout_s": "0.3"},
                           "Vast.ai offer search failed: no reply within api_timeout_s=0.3 s", 0),
    "create: HTTP 500": ([("create", 500, 1)], 1, {}, "Vast.ai renting failed: HTTP 500", 0),
    "create: success false": ([("create", "refuse", 1)], 1, {},
                              "Vast.ai refused to rent offer 5: injected refusal of create", 0),
    "create: HTTP 503 once (the SDK retries)": ([("create", 503, 1)], 1, {}, None, 1),
    "create: reply lost, retry finds the offer taken": ([("create", "lost", 1)], 1, {},
                                                        "Vast.ai renting failed: HTTP 400 Bad Request (offer 5 is no longer "
                                                        "available)", 1),
    "create: reply lost, retry rents a duplicate": ([("create", "lost", 1)], 3, {}, None, 2),
    "create: slow replies, every retry rents": ([("create", "slow", None)], 3, {"api_timeout_s": "0.3"},
                                                "Vast.ai renting failed: no reply within api_timeout_s=0.3 s", 3),
    "status: HTTP 500 throughout": ([("show", 500, None)], 1, {}, "Vast.ai instance status failed: HTTP 500", 1),
    "status: lost replies throughout": ([("show", "lost", None)], 1, {}, "Vast.ai instance status failed: ConnectionError", 1),
    "status: slow reply once": ([("show", "slow", 1)], 1, {"api_timeout_s": "0.3"}, None, 1),
    "attach: success false": ([("attach", "refuse", 1)], 1, {},
                              "Vast.ai refused to attach the SSH key to instance 9001: injected refusal of attach", 1),
    "attach: HTTP 404, destroy HTTP 503 twice": ([("attach", 404, 1), ("destroy", 503, 2)], 1, {},
                                                 "Vast.ai attaching the SSH key failed: HTTP 404 Not Found", 1),
    "attach: HTTP 500, destroy reply lost": ([("attach", 500, 1), ("destroy", "lost", 1)], 1, {},
                                             "Vast.ai attaching the SSH key failed: HTTP 500", 1),
    "ctrl-c while searching": ([("search", "sigint", 1)], 1, {}, KeyboardInterrupt, 0),
    "ctrl-c while renting": ([("create", "sigint", 1)], 1, {}, KeyboardInterrupt, 1),
    "ctrl-c while waiting": ([("show", "sigint", 1)], 1, {}, KeyboardInterrupt, 1),
}


@pytest.fixture
def ctrl_c_raises() -> Iterator[None]:
    """SIGINT raises KeyboardInterrupt, as at a user's terminal, even where pytest started with SIGINT ignored
    (a background job of a shell without job control inherits SIG_IGN, and then the stand-in's Ctrl-C does nothing)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


@pytest.mark.parametrize("name", list(API_FAULTS))
@pytest.mark.usefixtures("ctrl_c_raises")
def test_api_fault_leaks_nothing(name, sshd, registry, serve, capsys) -> None:  # type: ignore[no-untyped-def]
    faults, available, options, expected, rented = API_FAULTS[name]
    api = serve([offer(5, available=available)], sshd)
    for route, kind, times in faults:
        api.fault(route, kind, times, delay=3.0)
    s = make(sshd, registry, **options)
    if expected is None:
        s.start()
        assert s.transport is not None and s.instance_id in api.instances  # came up despite the fault
        s.stop()
    else:
        with pytest.raises(KeyboardInterrupt if expected is KeyboardInterrupt else VastError) as err:
            s.start()
        if isinstance(expected, str):
            assert str(err.value).startswith(expected) and "\n" not in str(err.value), str(err.value)
    assert len(api.created) == rented, api.requests
    assert_destroyed_once(api)
    s.stop()
    s.destroy()
    assert_destroyed_once(api)  # never twice
    assert "could NOT be destroyed" not in capsys.readouterr().err


@pytest.mark.usefixtures("ctrl_c_raises")
def test_ctrl_c_while_destroying_waits_for_the_destroy(sshd, registry, serve, capsys) -> None:  # type: ignore[no-untyped-def]
    """A Ctrl-C that comes while the instance is being destroyed is held: the destroy ends, then Ctrl-C works again."""
    api = serve([offer(5)], sshd)
    api.fault("destroy", "sigint", 1, delay=0.5)  # the stand-in destroys, then this process gets SIGINT
    s = make(sshd, registry)
    s.start()
    s.stop()  # no KeyboardInterrupt out of the destroy
    assert_destroyed_once(api)
    assert "wfbench: destroying the Vast.ai instance first, please wait" in capsys.readouterr().err
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    with pytest.raises(KeyboardInterrupt):
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(5)


def test_an_instance_that_never_runs_is_destroyed(sshd, registry, serve) -> None:  # type: ignore[no-untyped-def]
    api = serve([offer(5)], sshd, ready_after=None)
    with pytest.raises(VastError, match=r"^instance 9001 was not running after 0.3 s \(status loading\)$"):
        make(sshd, registry, wait_running_s="0.3").start()
    assert len(api.created) == 1 and api.destroy_requests(9001) == 1
    assert_destroyed_once(api)


def test_an_unreachable_sshd_is_destroyed(sshd, registry, serve) -> None:  # type: ignore[no-untyped-def]
    api = serve([offer(5)], sshd, port=free_port())
    with pytest.raises(VastError, match=r"sshd of instance 9001 at 127.0.0.1:\d+ did not accept the key within 0.5 s: "
                                        r".*connection refused"):
        make(sshd, registry, wait_ssh_s="0.5").start()
    assert_destroyed_once(api)


def test_destroy_that_never_succeeds_is_loud(sshd, registry, serve, capsys) -> None:  # type: ignore[no-untyped-def]
    api = serve([offer(5)], sshd, port=0)
    api.fault("show", 500, None)
    api.fault("destroy", "refuse", None)
    with pytest.raises(VastError, match="Vast.ai instance status failed"):
        make(sshd, registry, destroy_retries="3").start()
    err = capsys.readouterr().err
    assert "instance 9001 could NOT be destroyed (Vast.ai refused to destroy instance 9001: injected refusal" in err
    assert "vastai destroy instance 9001 -y" in err
    assert API_KEY not in err
    assert api.destroy_requests(9001) == 3 and api.leaked() == [9001]


# -------------------------------------------------------------------------------------------------
# faults on the host, and the time budget
# -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("fault", ["remote run", "fetch", "ctrl-c during the run"])
def test_host_fault_during_the_run_leaks_nothing(fault, sshd, registry, host_bundle, tmp_path, serve) -> None:  # type: ignore[no-untyped-def]
    result_file = tmp_path / "gpu-result.json"
    result_file.write_text(gpu_result(PROTOCOL, host_bundle))
    body = {
        "remote run": 'echo "RuntimeError: CUDA_ERROR_ILLEGAL_ADDRESS" >&2; exit 1',
        "fetch": f'head -c 100 {shlex.quote(str(result_file))} > "$out"; exit 0',
        "ctrl-c during the run": 'echo "timing" >&2; sleep 300',
    }[fault]
    py = fake_gpu_python(tmp_path / "host", body)
    api = serve([offer(5)], sshd)

    def progress(line: str) -> None:
        if line.endswith("] timing"):
            raise KeyboardInterrupt

    t = VastTransport(registry=registry, progress=progress, api_key=API_KEY, **session_options(sshd, python=str(py)))
    expected = KeyboardInterrupt if fault.startswith("ctrl-c") else WfbenchError
    with pytest.raises(expected) as err:
        try:
            t.execute(host_bundle, ExecuteRequest(case_ids=("scale_i64",), protocol=PROTOCOL), progress=progress)
        finally:
            t.close()
    if fault == "remote run":
        assert "CUDA_ERROR_ILLEGAL_ADDRESS" in str(err.value)
    if fault == "fetch":
        assert "not a wfbench result (truncated JSON" in str(err.value)
    assert_destroyed_once(api)
    assert sshd.leftovers() == []


def test_the_time_budget_stops_the_run_on_the_host(sshd, registry, host_bundle, tmp_path, serve) -> None:  # type: ignore[no-untyped-def]
    """The ssh transport gets the rental's deadline at construction: the run is stopped there, then cleaned up."""
    py = fake_gpu_python(tmp_path / "host", 'echo "timing" >&2; sleep 300')
    api = serve([offer(5)], sshd)
    started = time.monotonic()
    with pytest.raises(VastError, match=r"^the time budget of 0.1 min ran out during the run \(it was stopped\); "
                                        r"raise budget_min$"):
        with make(sshd, registry, python=str(py), budget_min="0.1") as s:
            s.execute(host_bundle, ExecuteRequest(case_ids=("scale_i64",), protocol=PROTOCOL))
    # the deadline (0.1 min) was reached, and the run was stopped there (the message), not after its 300 s sleep
    assert time.monotonic() - started >= 6.0
    assert_destroyed_once(api)
    assert sshd.leftovers() == []  # the cleanup ran after the deadline


# -------------------------------------------------------------------------------------------------
# signals and interpreter exit, in a real subprocess (the stand-in serves it from this process)
# -------------------------------------------------------------------------------------------------

CHILD = """
import json, sys
from pathlib import Path
from wfbench_core.discover.registry import Registry
from wfbench_core.record.request import ExecuteRequest
from wfbench_core.record.results import TimingProtocol
from wfbench_transports.vast import VastSession
cfg = json.loads(sys.argv[1])
s = VastSession(registry=Registry.load(), api_key=cfg["key"], **cfg["options"])
if cfg["how"] in ("exit", "hold"):
    s.start()
    print("rented", flush=True)
    if cfg["how"] == "hold":  # until it is killed
        import time
        time.sleep(600)
    sys.exit(0)  # no stop(): the exit guard must destroy
with s:
    s.execute(Path(cfg["bundle"]), ExecuteRequest(case_ids=("scale_i64",),
                                                  protocol=TimingProtocol(warmup_s=0.0, min_sample_ms=12.5, samples=7)))
"""


def _child(how: str, sshd, host_bundle, tmp_path, python: str, **options: str):  # type: ignore[no-untyped-def]
    cfg = {"how": how, "key": API_KEY, "bundle": str(host_bundle),
           "options": session_options(sshd, python=python, **options)}
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    return subprocess.Popen([sys.executable, str(script), json.dumps(cfg)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": str(ROOT)})  # this tree's code


def test_sigterm_during_the_run_destroys_once(sshd, host_bundle, tmp_path, serve) -> None:  # type: ignore[no-untyped-def]
    api = serve([offer(5)], sshd)
    started = tmp_path / "started"
    py = fake_gpu_python(tmp_path / "host", f'touch {shlex.quote(str(started))}; sleep 300')
    proc = _child("run", sshd, host_bundle, tmp_path, str(py))
    deadline = time.monotonic() + 60
    while not started.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert started.exists(), proc.communicate(timeout=30)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert len(api.created) == 1, api.requests
    assert_destroyed_once(api)
    assert "got SIGTERM; destroying instance" in err and "Traceback" not in err
    assert sshd.leftovers() == []


def test_a_controller_killed_with_sigkill_leaves_an_instance_that_destroys_itself(sshd, host_bundle, tmp_path,  # type: ignore[no-untyped-def]
                                                                                  serve) -> None:
    """kill -9 runs no handler: the instance is left, billing, until its own deadline (the budget left when it
    was rented, plus grace_s); then its onstart destroys it with the instance's own key."""
    api = serve([offer(5)], sshd)
    proc = _child("hold", sshd, host_bundle, tmp_path, sys.executable, budget_min="0.1", grace_s="0")
    assert proc.stdout is not None and proc.stdout.readline().strip() == "rented", proc.communicate(timeout=30)
    proc.kill()
    proc.wait(30)
    iid = api.created[0]
    create = api.bodies["create"][0]
    assert create["onstart"] == vast_selfstop.ONSTART and create["env"]["WFBENCH_VAST_API"] == api.url
    assert 1 <= int(create["env"]["WFBENCH_DESTROY_AFTER_S"]) <= 6
    assert api.leaked() == [iid] and api.destroy_requests(iid) == 0  # what the kill leaves: the instance
    deadline = time.monotonic() + 120  # a bound on the wait only: the instance's own deadline is 6 s
    while iid not in api.destroyed and time.monotonic() < deadline:
        time.sleep(0.2)
    assert api.destroyed == {iid: 1} and api.destroyed_by == {iid: "instance"}
    assert api.leaked() == []
    proc.communicate(timeout=30)


def test_interpreter_exit_destroys_once(sshd, host_bundle, tmp_path, serve) -> None:  # type: ignore[no-untyped-def]
    api = serve([offer(5)], sshd)
    proc = _child("exit", sshd, host_bundle, tmp_path, sys.executable)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0 and "rented" in out, err
    assert len(api.created) == 1, api.requests
    assert_destroyed_once(api)
    assert "interpreter exiting; destroying instance" in err


def test_sigterm_destroys_even_when_the_caller_catches_system_exit(sshd, registry, host_bundle, tmp_path,  # type: ignore[no-untyped-def]
                                                                   serve) -> None:
    """A pytest session holding the rental turns SystemExit into one failed test: the instance must be gone."""
    py = fake_gpu_python(tmp_path / "host", 'echo "timing" >&2; sleep 300')
    api = serve([offer(5)], sshd)

    def progress(line: str) -> None:
        if line.endswith("] timing"):
            os.kill(os.getpid(), signal.SIGTERM)

    before = signal.getsignal(signal.SIGTERM)
    s = VastSession(registry=registry, progress=progress, api_key=API_KEY, **session_options(sshd, python=str(py)))
    s.start()
    with pytest.raises(SystemExit) as err:
        s.execute(host_bundle, ExecuteRequest(case_ids=("scale_i64",), protocol=PROTOCOL), progress=progress)
    assert err.value.code == 128 + signal.SIGTERM
    iid = api.created[0]
    assert_destroyed_once(api)  # before anyone calls stop()
    assert sshd.leftovers() == []
    with pytest.raises(VastError, match="the Vast.ai rental is not available: ended by SIGTERM"):
        s.execute(host_bundle, ExecuteRequest(case_ids=("scale_i64",), protocol=PROTOCOL))
    s.stop()
    assert api.destroy_requests(iid) == 1
    assert signal.getsignal(signal.SIGTERM) == before  # the session's handler is gone again


def test_bad_options_and_a_missing_key_fail_before_anything_is_built(monkeypatch, tmp_path) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("vastai")
    monkeypatch.delenv("VAST_API_KEY", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    with pytest.raises(VastError, match="no Vast.ai API key"):
        VastTransport(registry=None)
    with pytest.raises(WfbenchError, match=r"vast transport: option max_dph='cheap' is not a number"):
        VastTransport(registry=None, api_key=API_KEY, max_dph="cheap")
    with pytest.raises(WfbenchError, match=r"option mode='fast' is not one of: canonical, broad"):
        VastTransport(registry=None, api_key=API_KEY, mode="fast")
    with pytest.raises(VastError, match=r"gpu_name='RTX 4090 D' is not a GPU model wfbench can pin; known: RTX_4090"):
        VastTransport(registry=None, api_key=API_KEY, gpu_name="RTX 4090 D")
