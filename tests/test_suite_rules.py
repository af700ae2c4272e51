"""Rules the test suite keeps so that it passes on any machine, a loaded 2-core CI runner included."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).parent
CLOCKS = {"monotonic", "perf_counter", "time", "monotonic_ns", "perf_counter_ns"}
TIME_NAMES = {"wall", "elapsed", "took", "duration", "waited"}


def _reads_a_clock(node: ast.AST) -> bool:
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute) and sub.func.attr in CLOCKS \
                and isinstance(sub.func.value, ast.Name) and sub.func.value.id == "time":
            return True
        if isinstance(sub, ast.Name) and sub.id in TIME_NAMES:
            return True
    return False


def upper_bounds_on_wall_time(source: str) -> list[int]:
    """Lines of ``assert``s that put an upper bound on measured wall time (``elapsed < 8``, ``8 > elapsed``)."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Assert):
            continue
        for cmp in (n for n in ast.walk(node.test) if isinstance(n, ast.Compare)):
            operands = [cmp.left, *cmp.comparators]
            for i, op in enumerate(cmp.ops):
                small, large = (operands[i], operands[i + 1]) if isinstance(op, (ast.Lt, ast.LtE)) else \
                    (operands[i + 1], operands[i]) if isinstance(op, (ast.Gt, ast.GtE)) else (None, None)
                if small is not None and _reads_a_clock(small) and not _reads_a_clock(large):
                    lines.append(node.lineno)
    return lines


def test_no_test_bounds_wall_time_from_above() -> None:
    """A lower bound (a deadline was reached) holds on any machine; an upper bound fails on a slow one.
    Assert on events, their order and the deadlines that fired instead."""
    found = {f"{p.name}:{line}" for p in sorted(TESTS.glob("*.py"))
             for line in upper_bounds_on_wall_time(p.read_text())}
    assert not found, f"wall-clock upper bounds in tests: {sorted(found)}"


def test_the_rule_sees_the_shapes_it_forbids() -> None:
    bad = ("t0 = time.monotonic()\nwall = time.monotonic() - t0\nassert wall < 60\n"
           "assert time.monotonic() - t0 < 8\nassert 6.0 <= time.monotonic() - t0 < 15\nassert 1.0 > waited\n")
    assert upper_bounds_on_wall_time(bad) == [3, 4, 5, 6]
    good = "assert time.monotonic() - t0 >= 6.0\nassert waited >= 0.03 and flag == 0\nassert n < 60\n"
    assert upper_bounds_on_wall_time(good) == []
