"""What the runs a verdict can lean on say about a kernel family's variation: its between-run variance
components and the A/A floor of its board.

A **family** is every series of one case on one platform whatever the compiler label: the canonical series
and the ``base`` / ``head`` series of base/head runs share one board effect and one process effect. Its
observations are one per process: the gap of a run, or of each fresh process of a ``--repeat`` run, grouped
by the code it timed (WarpForth and CUDA code identity) and the board it ran on; the base and head of a
base/head run that timed identical code are one process, so they make one observation. Only stable points
count. :func:`variance_components` (a one-way random-effects model per code, pooled) turns them into the process and new-board components,
and where too few were measured, into the stated defaults.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import attrs

from wfbench_core import stats
from wfbench_core.record.results import MODE_AA, MODE_PAIRED
from wfbench_core.review.series import Point, SeriesKey

if TYPE_CHECKING:  # pragma: no cover
    from wfbench_core.review.history import History

__all__ = [  # internal to wfbench, not the plugin API (README: Layout)
    "DEFAULT_BOARD_SD", "DEFAULT_PROCESS_SD", "MEASURED_BOARD_SD", "MIN_COMPONENT_DF", "ONE_PLACEMENT_BOARD_SD",
    "ONE_PLACEMENT_PROCESS_SD", "Components", "Observation", "aa_run_floor", "board_aa_floor", "board_sd",
    "change_against_reference", "components", "family", "family_points", "observations", "repeat_observations",
    "variance_components",
]


# Stated defaults of the components until measured (docs/history.md, "Verdicts"): what a fresh process on one
# board, and another board of one GPU model beyond that, move a gap by (standard deviations, log terms). Runs
# timed at a single placement (the protocol before placements; placement_of not recorded) moved far more.
DEFAULT_PROCESS_SD = 0.001
# The board component of each GPU model measured (docs/history.md, "Between two runs"): the upper end of the
# 95 % interval of the between-board spread of one bundle's gaps, one plain run per board. Boards of one model
# differ by a model's own amount (H100 boards three times as much as H200 boards), so a model not measured
# gets the largest measured one.
MEASURED_BOARD_SD = {
    "NVIDIA H200": 0.0018,  # docs/results/boards
    "NVIDIA H100 80GB HBM3": 0.0058,  # docs/results/boards-h100
}
DEFAULT_BOARD_SD = max(MEASURED_BOARD_SD.values())
ONE_PLACEMENT_PROCESS_SD = 0.003
ONE_PLACEMENT_BOARD_SD = 0.02
MIN_COMPONENT_DF = 3  # a measured variance component replaces its default from this many degrees of freedom


def board_sd(gpu_name: str) -> tuple[float, str]:
    """The stated board component of boards of ``gpu_name`` and what it rests on: the one measured for that
    model, else the largest measured (:data:`MEASURED_BOARD_SD`)."""
    if gpu_name in MEASURED_BOARD_SD:
        return MEASURED_BOARD_SD[gpu_name], f"measured on {gpu_name} boards"
    return DEFAULT_BOARD_SD, "the largest measured: this GPU model's boards were not measured"


# --------------------------------------------------------------------------------------------------------
# variance components (statistics; numpy-free)


@attrs.frozen
class Observation:
    """One process's gap of one kernel (a code identity) on one board."""

    code: str
    board: str
    log_gap: float


@attrs.frozen
class Components:
    """What a fresh process adds to a gap on a board already measured, and on a board not yet measured (the
    board's own effect plus the process's), each as a zero-valued :class:`LogEstimate`."""

    process: stats.LogEstimate
    new_board: stats.LogEstimate


def _mean_squares(obs: Sequence[Observation]) -> tuple[float, int, float, int, float]:
    """One-way random-effects ANOVA of boards within each code, pooled over codes: (MS within boards, its df,
    MS between boards, its df, n0 the effective replicates per board)."""
    cells: dict[tuple[str, str], list[float]] = {}
    for o in obs:
        cells.setdefault((o.code, o.board), []).append(o.log_gap)
    ssw = sum(sum((y - sum(ys) / len(ys)) ** 2 for y in ys) for ys in cells.values())
    dfw = sum(len(ys) - 1 for ys in cells.values())
    ssb, dfb, n0_sum = 0.0, 0, 0.0
    for code in {c for c, _ in cells}:
        groups = [ys for (c, _), ys in cells.items() if c == code]
        if len(groups) < 2:
            continue
        total = sum(len(ys) for ys in groups)
        grand = sum(sum(ys) for ys in groups) / total
        ssb += sum(len(ys) * (sum(ys) / len(ys) - grand) ** 2 for ys in groups)
        dfb += len(groups) - 1
        n0_sum += total - sum(len(ys) ** 2 for ys in groups) / total
    return (ssw / dfw if dfw else 0.0), dfw, (ssb / dfb if dfb else 0.0), dfb, (n0_sum / dfb if dfb else 1.0)


def between_boards(obs: Sequence[Observation], level: float = 0.95) -> tuple[float, int, float, float]:
    """What boards alone differ by, from one process per board and code (the measurement behind
    :data:`DEFAULT_BOARD_SD`): the pooled between-board standard deviation of the log gap, its degrees of
    freedom and its ``level`` interval (chi-square). It holds the process component too, as a new board does."""
    from scipy import stats as sps

    _, _, msb, dfb, _ = _mean_squares(obs)
    if not dfb:
        return 0.0, 0, 0.0, math.inf
    ss = msb * dfb
    lo, hi = (math.sqrt(ss / sps.chi2.ppf(q, dfb)) for q in (0.5 + level / 2.0, 0.5 - level / 2.0))
    return math.sqrt(msb), dfb, lo, hi


def _trusted(var: float, df: float, default_sd: float, min_df: int) -> bool:
    """A measured component replaces its default when it is larger (a conservative change on any evidence),
    or, smaller, once it has ``min_df`` degrees of freedom."""
    return df >= 1 and (var > default_sd ** 2 or df >= min_df)


def variance_components(obs: Sequence[Observation], *, process_sd: float = DEFAULT_PROCESS_SD,
                        board_sd: float = DEFAULT_BOARD_SD, board_basis: str = "",
                        min_df: int = MIN_COMPONENT_DF) -> Components:
    """The between-run variance components of one kernel family, from observations of several codes, boards and
    processes (moment estimates of a one-way random-effects model per code, pooled over codes).

    The process component is the spread of processes of one code on one board (runs repeated there, the
    processes of a --repeat run). The new-board component is what a run on an unseen board deviates by: the
    board's effect plus its process's, (MSB - MSW) / n0 + MSW, with Welch-Satterthwaite degrees of freedom;
    where no board was measured twice it is the spread between boards itself. A measured component replaces
    its stated default (known, infinite df) when it is larger, or once it has ``min_df`` degrees of freedom;
    the new-board one is never taken below the process one. ``board_basis`` says what the board default rests on.
    """
    msw, dfw, msb, dfb, n0 = _mean_squares(obs)
    if _trusted(msw, dfw, process_sd, min_df):
        process = stats.LogEstimate(0.0, math.sqrt(msw), float(dfw),
                                    f"process {math.sqrt(msw):.3%} measured ({dfw} degrees of freedom)")
    else:
        process = stats.LogEstimate(0.0, process_sd, math.inf, f"process {process_sd:.2%} default")
    var, df = msb, float(dfb)
    if dfb and dfw:
        a, b = 1.0 / n0, 1.0 - 1.0 / n0
        var = max(a * msb + b * msw, msw)
        den = (a * msb) ** 2 / dfb + (b * msw) ** 2 / dfw
        df = min(var ** 2 / den, float(dfb + dfw)) if den > 0 else float(dfb)
    if _trusted(var, float(dfb), math.hypot(board_sd, process.se), min_df):
        var = max(var, process.se ** 2)
        new_board = stats.LogEstimate(0.0, math.sqrt(var), df,
                                      f"board and process {math.sqrt(var):.3%} measured ({dfb} degrees of freedom "
                                      f"between boards)")
    else:
        new_board = stats.combine([stats.LogEstimate(0.0, board_sd, math.inf), process], 0.0,
                                  f"board {board_sd:.2%} default{f' ({board_basis})' if board_basis else ''}, "
                                  f"{process.basis}")
    return Components(process=process, new_board=new_board)


def change_against_reference(value: float, components: Components, *, reference_boards: Sequence[str],
                             board: str, basis: str = "") -> stats.LogEstimate:
    """A new run's log gap minus the mean log gap of ``reference_boards`` (one entry per reference run, its
    board), with the variance the model gives it: y = mu + board effect + process effect. With f_j the share
    of the reference runs on board j, the board effects weigh (1 - f_new)^2 + sum over other boards f_j^2, and
    the process effects 1 + 1/n. The board part is the new-board component less the process one."""
    n = len(reference_boards)
    counts: dict[str, int] = {}
    for b in reference_boards:
        counts[b] = counts.get(b, 0) + 1
    same = counts.get(board, 0) / n if board else 0.0
    a = (1.0 - same) ** 2 + sum((c / n) ** 2 for b, c in counts.items() if not board or b != board)
    b_coef = 1.0 + 1.0 / n
    nb, pr = components.new_board, components.process
    # board variance = new_board - process; a x board + b x process = a x new_board + (b - a) x process
    parts = [stats.LogEstimate(0.0, math.sqrt(a) * nb.se, nb.df)]
    if b_coef > a:
        parts.append(stats.LogEstimate(0.0, math.sqrt(b_coef - a) * pr.se, pr.df))
    est = stats.combine(parts, value, basis)
    floor = math.sqrt(b_coef) * pr.se  # never below the process part alone
    return attrs.evolve(est, se=max(est.se, floor))


# --------------------------------------------------------------------------------------------------------
# a history's runs as observations


def family(key: SeriesKey) -> SeriesKey:
    return attrs.evolve(key, compiler_label="")


def family_points(history: History | None, key: SeriesKey, *, skip_runs: Iterable[str] = ()) -> list[Point]:
    """Every stable point of the family of ``key`` in ``history``, less the runs named in ``skip_runs`` (files or
    creation times)."""
    if history is None:
        return []
    skip = set(skip_runs)
    want = family(key)
    return [p for s in history.series.values() if family(s.key) == want for p in s.points
            if p.stable and p.run not in skip and p.created not in skip]


def observations(points: Iterable[Point]) -> list[Observation]:
    """One observation per process: points of one run timing the same code are one process; the processes of
    a --repeat run are one observation each. Points whose code is unknown cannot be grouped and are left out."""
    groups: dict[tuple[str, str], list[Point]] = {}
    for p in points:
        if p.code and p.gap > 0:
            groups.setdefault((p.run, f"{p.code}/{p.cuda_code}"), []).append(p)
    out = []
    for (_, code), members in groups.items():
        repeats = next((p.repeat_gaps for p in members if len(p.repeat_gaps) >= 2), ())
        values = [math.log(g) for g in repeats if g > 0] or [sum(math.log(p.gap) for p in members) / len(members)]
        out += [Observation(code=code, board=members[0].gpu_uuid, log_gap=v) for v in values]
    return out


def components(points: Sequence[Point], extra: Sequence[Observation] = (), *, gpu_name: str,
               one_placement: bool = False) -> Components:
    """The family's variance components from its points (and ``extra`` observations, such as the processes of
    a --repeat run being compared); the stated defaults where too few were measured: the board one of the
    family's GPU model (:func:`board_sd`), those of single-placement runs when a run judged was timed at one
    placement."""
    if one_placement:
        process_sd, (board, basis) = ONE_PLACEMENT_PROCESS_SD, (ONE_PLACEMENT_BOARD_SD, "timed at one placement")
    else:
        process_sd, (board, basis) = DEFAULT_PROCESS_SD, board_sd(gpu_name)
    return variance_components(observations(points) + list(extra), process_sd=process_sd, board_sd=board,
                               board_basis=basis)


def board_aa_floor(history: History | None, key: SeriesKey, board: str) -> tuple[float | None, str]:
    """The A/A floor on ``board``: how far the newest A/A run there (CUDA against itself) in which ``key``'s case
    is stable read from 1.000x at most, over its stable cases (:func:`aa_run_floor`); (None, "") when the history
    has none."""
    if history is None or not board:
        return None, ""
    aa_key = attrs.evolve(family(key), mode=key.mode.replace(MODE_PAIRED, MODE_AA, 1))
    series = history.find_series(aa_key)
    points = [p for p in series.stable_points if p.gpu_uuid == board] if series is not None else []
    if not points:
        return None, ""
    newest = points[-1]
    run = [p for s in history.series.values() for p in s.points if p.run == newest.run]
    return aa_run_floor(run), f"A/A run {newest.created} on this board"


def aa_run_floor(points: Sequence[Point]) -> float | None:
    """The floor of one A/A run: the farthest any of its stable cases reads from 1.000x. The one figure of an
    A/A run, in ``check``'s margin and on the dashboard."""
    from wfbench_core.review.verdicts import aa_floor

    return aa_floor(p.gap - 1.0 for p in points if p.stable)


def repeat_observations(code: str, board: str, repeat_gaps: Sequence[float]) -> list[Observation]:
    """The processes of one --repeat run as observations (none for fewer than two)."""
    if len(repeat_gaps) < 2 or not code:
        return []
    return [Observation(code=code, board=board, log_gap=math.log(g)) for g in repeat_gaps if g > 0]
