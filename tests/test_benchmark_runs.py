"""benchmarks/classroom.py --repeat: the lines that sum up several runs of the class scenarios."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from classroom import over_runs  # noqa: E402


def final(scenario: str, setup: str, p50: str, p95: str) -> str:
    return (f"scenario={scenario} setup={setup} sessions=30 views=120 errors=0 p50_s={p50} p95_s={p95} "
            "compute_floor_s=15.00 load=1.20 cpu_per_view_s=0.250 runs=46 mapped=0 peak_growth_mib=900 budget_mib=2048")


def test_the_runs_are_summed_up_by_their_medians_and_ranges_and_paired_run_by_run():
    finals = [final("start", "one", "0.20", "5.00"), final("start", "processes(2)", "0.15", "4.00"),
              final("burst", "one", "1.00", "2.00"),
              final("start", "one", "0.30", "6.00"), final("start", "processes(2)", "0.10", "3.00"),
              final("burst", "one", "-", "-"),
              final("start", "one", "0.25", "4.50"), final("start", "processes(2)", "0.20", "5.00"),
              final("burst", "one", "1.20", "2.40")]
    assert over_runs(finals) == [
        "scenario=start setup=one runs=3: p50 median 0.25 s (0.20-0.30 s), p95 median 5.00 s (4.50-6.00 s)",
        "scenario=start setup=processes(2) runs=3: p50 median 0.15 s (0.10-0.20 s), p95 median 4.00 s (3.00-5.00 s)",
        # a run that drew no view has no p50 or p95: the medians are of the runs that did
        "scenario=burst setup=one runs=3: p50 median 1.10 s (1.00-1.20 s), p95 median 2.20 s (2.00-2.40 s)",
        "scenario=start one ÷ processes(2), p95 run by run: 1.25x, 2.00x, 0.90x (median 1.25x)",
    ]


def test_one_run_alone_is_its_own_median():
    assert over_runs([final("class", "one", "0.40", "1.30")]) == [
        "scenario=class setup=one runs=1: p50 median 0.40 s (0.40-0.40 s), p95 median 1.30 s (1.30-1.30 s)"]
