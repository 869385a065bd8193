"""`make bench`: how long config validation, rendering and the offline plan take (printed, never asserted)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from gpushare.config import load_stack_config
from gpushare.render.stack import helm_releases, kubernetes_objects
from tools.offline import run_program
from tools.plan import read_stack_file

ROOT = Path(__file__).resolve().parent.parent


def timed(label: str, repeat: int, work: Callable[[], object]) -> None:
    start = time.perf_counter()
    for _ in range(repeat):
        work()
    per_call_ms = (time.perf_counter() - start) / repeat * 1000
    print(f"{label:<40} {per_call_ms:9.2f} ms/run  ({repeat} runs)")


def main() -> None:
    raw = read_stack_file(ROOT / "Pulumi.prod.yaml")
    config = load_stack_config(raw)
    timed("validate prod config", 200, lambda: load_stack_config(raw))
    timed("render prod objects and Helm values", 200, lambda: (kubernetes_objects(config), helm_releases(config)))
    timed("run prod program under mocks", 1, lambda: run_program(raw, "prod"))


if __name__ == "__main__":
    main()
