"""`make bench`: how long validation, rendering, the offline plan and the policy pack take (printed, never asserted)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from gpushare.config import load_stack_config
from gpushare.render.stack import helm_releases, kubernetes_objects
from policies.gpushare_policies.registry import evaluate
from policies.gpushare_policies.stack import from_plan
from tools.offline import run_program
from tools.plan import read_stack_file

ROOT = Path(__file__).resolve().parent.parent
T = TypeVar("T")


def timed(label: str, repeat: int, work: Callable[[], T]) -> T:
    """Print the mean time of `repeat` runs; return the last result for the next step to use."""
    start = time.perf_counter()
    for _ in range(repeat):
        result = work()
    per_call_ms = (time.perf_counter() - start) / repeat * 1000
    print(f"{label:<42} {per_call_ms:9.2f} ms/run  ({repeat} runs)")
    return result


def main() -> None:
    raw = read_stack_file(ROOT / "Pulumi.prod.yaml")
    config = load_stack_config(raw)
    timed("validate prod config", 200, lambda: load_stack_config(raw))
    timed("render prod objects and Helm values", 200, lambda: (kubernetes_objects(config), helm_releases(config)))
    monitor = timed("run prod program under mocks", 1, lambda: run_program(raw, "prod"))
    timed("evaluate the policy pack on the prod plan", 20, lambda: evaluate(from_plan(monitor.recorded)))


if __name__ == "__main__":
    main()
