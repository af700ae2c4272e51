"""A result that contradicts itself is refused by every command that takes one in, each in one line.

The forgeries start from real H200 runs (``examples/history``): a summary changed with its samples left as they
were (the gap and a median set to 1e308), a case marked OK at twice the run's own copy bandwidth, a case
marked OK though its noise makes it unstable, and a per-launch time no case could take. ``compare``,
``check``, ``export`` and ``history add`` refuse them naming the file; the dashboard names the run file in a
warning, skips it and shows none of its figures.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any, Callable

import pytest
from click.testing import CliRunner

from wfbench_core.cli import main
from wfbench_core.errors import WfbenchError
from wfbench_core.record.consistency import TOLERANCE
from wfbench_core.record.results import dumps, load_result, parse_result

ROOT = Path(__file__).parents[1]
REAL = sorted((ROOT / "examples" / "history" / "runs").rglob("*.json"))[0]
OTHER = sorted((ROOT / "examples" / "history" / "runs").rglob("*.json"))[1]


def _case(raw: dict, case_id: str) -> dict:
    return next(c for c in raw["cases"] if c["id"] == case_id)


def _huge_summary(raw: dict) -> None:
    t = _case(raw, "axpy_f64")["timing"]
    t["gap"] = 1e308
    t["warpforth"]["median_us"] = 1e308


def _over_copy_bandwidth(raw: dict) -> None:
    """axpy_f64 at 212 % of the run's copy bandwidth: every sample and statistic scaled alike, so the summary
    agrees with its samples and only the yardstick can tell."""
    from wfbench_core import stats
    from wfbench_core.record.results import converter, Timing

    case = _case(raw, "axpy_f64")
    t = converter().structure(case["timing"], Timing)
    must = case["work_bytes"]  # rotated buffer sets of at least the L2's size: all of it moves
    factor = (must / (raw["environment"]["copy_gbps"] * 2.12 * 1e3)) / t.warpforth.median_us
    wf = [s * factor for s in t.warpforth.samples_us]
    cu = [s * factor for s in t.cuda.samples_us]
    figures = stats.paired_statistics(wf, cu, t.placement_of)
    case["timing"] = json.loads(dumps(__import__("attrs").evolve(t, **figures)))


def _ok_but_noisy(raw: dict) -> None:
    raw["protocol"]["unstable_noise"] = 0.0001


def _a_launch_of_a_day(raw: dict) -> None:
    from wfbench_core import stats
    from wfbench_core.record.results import converter, Timing
    import attrs

    case = _case(raw, "axpy_f64")
    t = converter().structure(case["timing"], Timing)
    wf = [s * 1e9 for s in t.warpforth.samples_us]
    cu = [s * 1e9 for s in t.cuda.samples_us]
    case["timing"] = json.loads(dumps(attrs.evolve(t, **stats.paired_statistics(wf, cu, t.placement_of))))


FORGERIES: dict[str, tuple[Callable[[dict], None], str]] = {
    "summary against samples": (_huge_summary, "warpforth.median_us 1e+308, but its samples give"),
    "212 % of the copy bandwidth": (_over_copy_bandwidth, "over 1.25x this run's copy bandwidth"),
    "ok at an unstable noise": (_ok_but_noisy, "status ok at a noise of"),
    "a per-launch time of a day": (_a_launch_of_a_day, "longer than the 60 s a whole case may take"),
}


def forged(tmp_path: Path, how: Callable[[dict], None], name: str = "forged.json") -> Path:
    raw = json.loads(REAL.read_text())
    how(raw)
    path = tmp_path / name
    path.write_text(json.dumps(raw, indent=1))
    return path


def _one_line(res: Any, path: Path, says: str) -> None:
    assert res.exit_code == 2, (res.exit_code, res.output)
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"wfbench: error: {path}: "), res.stderr
    assert "case '" in lines[0] and says in lines[0], lines[0]
    assert "Traceback" not in res.output


def test_real_runs_agree_with_their_samples() -> None:
    for path in sorted((ROOT / "examples" / "history" / "runs").rglob("*.json")) \
            + sorted((ROOT / "docs" / "results").glob("*.json")) + sorted((ROOT / "docs" / "results" / "boards").glob("*.json")) + sorted((ROOT / "tests" / "fixtures").glob("h200*.json")):
        load_result(path)  # no refusal: every stored run agrees with itself


@pytest.mark.parametrize("forgery", list(FORGERIES))
def test_every_command_that_takes_a_result_in_refuses_a_forged_one(tmp_path: Path, forgery: str) -> None:
    how, says = FORGERIES[forgery]
    path = forged(tmp_path, how)
    hist = tmp_path / "hist"
    CliRunner().invoke(main, ["history", "add", str(OTHER), "--history", str(hist)])
    for args in (["compare", str(path), str(OTHER)], ["compare", str(OTHER), str(path)],
                 ["check", str(path), "--history", str(hist)], ["export", str(path)],
                 ["export", str(path), "-o", str(tmp_path / "bench.json")],
                 ["history", "add", str(path), "--history", str(hist)]):
        res = CliRunner().invoke(main, args)
        _one_line(res, path, says)
    assert not (tmp_path / "bench.json").exists()
    assert len(list((hist / "runs").rglob("*.json"))) == 1  # nothing stored


def test_the_dashboard_warns_about_a_forged_run_file_and_shows_none_of_its_figures(tmp_path: Path) -> None:
    from wfbench_core.review.history import RUNS_DIR, _content_hash, _stamp

    hist = tmp_path / "hist"
    assert CliRunner().invoke(main, ["history", "add", str(OTHER), "--history", str(hist)]).exit_code == 0
    data = forged(tmp_path, _huge_summary).read_bytes()
    created = json.loads(data)["created"]
    stamp = _stamp(created, "")
    planted = hist / RUNS_DIR / stamp[:4] / f"{stamp}-{_content_hash(data)[:16]}.json"  # named as a stored run is
    planted.write_bytes(data)
    (hist / "index.json").unlink()
    res = CliRunner().invoke(main, ["dashboard", "--history", str(hist), "--out", str(tmp_path / "site")])
    assert res.exit_code == 0, res.output
    warnings = [ln for ln in res.stderr.splitlines() if ln.startswith("wfbench: warning:")]
    assert any(str(planted) in ln and "contradicts its samples" in ln for ln in warnings), res.stderr
    page = (tmp_path / "site" / "index.html").read_text()  # the data is embedded in the page
    # the figure appears only where the page lists the skipped file and why
    assert page.count("e+308") == page.count("but its samples give") >= 1 and "e+53" not in page


def test_the_tolerance_is_stated_and_a_change_within_it_is_taken() -> None:
    raw = json.loads(REAL.read_text())
    t = _case(raw, "axpy_f64")["timing"]
    t["gap"] *= 1 + TOLERANCE / 10  # another numpy's last bits
    parse_result(json.dumps(raw), "near.json")
    t["gap"] *= 1 + TOLERANCE * 10
    with pytest.raises(WfbenchError, match="near.json: .*gap .* but its samples give"):
        parse_result(json.dumps(raw), "near.json")


def test_a_statistic_an_older_wfbench_did_not_record_is_not_held_against_it() -> None:
    raw = json.loads(REAL.read_text())
    for case in raw["cases"]:
        if case.get("timing"):
            case["timing"]["pair_ratio_noise"] = None
            case["timing"]["gap_lo"] = case["timing"]["gap_hi"] = None
    parse_result(json.dumps(raw), "older.json")


def test_the_yardsticks_give_no_pass_to_an_older_schema() -> None:
    """A result of schema 1 (before the gate existed) is judged by the same rule: its copy bandwidth was
    recorded, so a figure over it is refused like a new one's."""
    raw = json.loads((ROOT / "tests" / "fixtures" / "h200-run1.json").read_text())
    assert raw["schema_version"] == 1
    parse_result(json.dumps(raw), "old.json")
    forged_raw = copy.deepcopy(raw)
    forged_raw["environment"]["copy_gbps"] = raw["environment"]["copy_gbps"] / 4
    with pytest.raises(WfbenchError, match="copy bandwidth"):
        parse_result(json.dumps(forged_raw), "old.json")
