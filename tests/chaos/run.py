"""Run the chaos scenarios and print one table.

    python tests/chaos/run.py            the quick tier (the sizes the test suite uses)
    python tests/chaos/run.py --full     the full tier: more jobs, more faults, longer outages
    python tests/chaos/run.py --full redis-outage frozen-worker     only these scenarios

Exit status 0 when every scenario passed, 1 otherwise. PostgreSQL scenarios are skipped (with the
reason) when PostgreSQL does not answer. A scenario that reproduces one of the known faults says
so in the last column.
"""

from __future__ import annotations

import argparse
import logging
import pathlib
import sys
import time

TESTS = pathlib.Path(__file__).resolve().parent.parent
sys.path[:0] = [str(TESTS), str(TESTS.parent)]

from chaos.catalogue import BY_NAME, CATALOGUE  # noqa: E402
from chaos.scenarios import Unavailable  # noqa: E402
from chaos.scene import Result  # noqa: E402

COLUMNS = ("scenario", "enqueued", "executed once", "lost", "duplicated", "stranded", "recovery", "result", "fault")


def row(result: Result, fault: int | None, seconds: float) -> tuple[str, ...]:
    rec = "-" if result.recovery is None else ("never" if result.recovery == float("inf") else f"{result.recovery:.1f}s")
    verdict = "pass" if result.passed else "FAIL"
    return (result.scenario, str(result.enqueued), str(result.executed_once), str(result.lost),
            str(result.duplicated), str(result.stranded), rec, f"{verdict} ({seconds:.0f}s)",
            "" if fault is None else str(fault))


def table(rows: list[tuple[str, ...]]) -> str:
    widths = [max(len(r[i]) for r in [COLUMNS, *rows]) for i in range(len(COLUMNS))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in [COLUMNS, *rows]]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--full", action="store_true", help="the full tier (more iterations)")
    parser.add_argument("names", nargs="*", metavar="SCENARIO", help=f"any of: {', '.join(BY_NAME)}")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    unknown = [n for n in args.names if n not in BY_NAME]
    if unknown:
        parser.error(f"unknown scenario {', '.join(unknown)}")
    chosen = [BY_NAME[n] for n in args.names] if args.names else CATALOGUE
    rows, details, ok = [], [], True
    started = time.monotonic()
    for scenario in chosen:
        print(f"running {scenario.name} ...", file=sys.stderr, flush=True)
        t0 = time.monotonic()
        try:
            result = scenario.run(not args.full)
        except Unavailable as exc:
            rows.append((scenario.name, *["-"] * 6, "skipped", "" if scenario.fault is None else str(scenario.fault)))
            details.append(f"{scenario.name}: skipped: {exc}")
            continue
        rows.append(row(result, scenario.fault, time.monotonic() - t0))
        ok = ok and result.passed
        details.append(result.summary())
        details += [f"    failed check {line}" for line in result.failures()]
    print(table(rows))
    print()
    print("\n".join(details))
    print(f"\n{'full' if args.full else 'quick'} tier, {len(chosen)} scenarios in {time.monotonic() - started:.0f}s")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
