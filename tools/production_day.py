"""The shipped production-shaped day (`examples/workloads/production-day.csv`): a synthetic pod list in the format a
cluster's export has (e2e.simulator.replay), for `make simulate` and `make bench`.

    python -m tools.production_day [--pods N] [--out FILE]

Its shape, for the prod stack (quotas and pool limits as shipped, so every pod can run):
- `chat` (team inference, pool g6-shared): a diurnal service peaking at 14:00, a quarter or half of an L4 each,
  2-6 vCPUs and 8-24 GiB (several per node only on the larger types), living 2-5 hours;
- `rerank` (inference, g5-shared): 6-12 GiB of an A10G and 20-50% of its cores, 6-10 vCPUs, 16-48 GiB, 1-3 hours;
- `train` (ml-research, g5-shared): a whole A10G, 12-18 vCPUs and 48-100 GiB (only a g5.8xlarge holds one),
  2-6 hours, day and night;
- `eval` (ml-research, g5-shared): half an A10G, 4-8 vCPUs, 16-32 GiB, 20-90 minutes;
- `notebook` (analytics, g6-shared): a quarter of an L4, 2 vCPUs, 8 GiB, opened 08:00-18:00 for 1-3 hours.
Some pods were created the evening before (the 00:00 state), some were still alive at the export (no deletion).
The same seed gives the same day; `--pods` scales every kind together (make bench sizes).
"""

from __future__ import annotations

import argparse
import csv
import io
import math
import random
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

from gpushare.paths import PROJECT_ROOT

SHIPPED = PROJECT_ROOT / "examples" / "workloads" / "production-day.csv"
DAY_START = datetime(2026, 11, 18, tzinfo=UTC)  # a Wednesday
SEED = 28
COLUMNS = ("namespace", "name", "created", "deleted", "cpu", "memory", "gpus", "gpuShare", "gpuMemoryMib", "gpuCores")
# Pods of each kind in the shipped day (250 in all).
KINDS = {"chat": 70, "rerank": 45, "train": 30, "eval": 60, "notebook": 45}


def _diurnal_minute(rng: random.Random, peak_minute: int) -> float:
    """A time of day drawn from a cosine curve peaking at `peak_minute` (ten times the trough)."""
    while True:
        minute = rng.uniform(-120, 24 * 60)
        weight = (1 + 9 * (1 + math.cos(2 * math.pi * (minute - peak_minute) / (24 * 60))) / 2) / 10
        if rng.random() < weight:
            return minute


# Per kind: sizes to draw from (vCPUs, memory GiB, GPU share or memory MiB and cores), what a few real services
# and jobs of each kind ask; the CPU and memory asks are what push Karpenter to the larger types.
SIZES = {
    "chat": [(2, 8, {"gpuShare": "0.25"}), (4, 16, {"gpuShare": "0.25"}), (6, 24, {"gpuShare": "0.5"})],
    "rerank": [
        (6, 16, {"gpuMemoryMib": "6144", "gpuCores": "20"}),
        (8, 32, {"gpuMemoryMib": "10240", "gpuCores": "30"}),
        (10, 48, {"gpuMemoryMib": "12288", "gpuCores": "50"}),
    ],
    "train": [(12, 48, {"gpuShare": "1"}), (16, 80, {"gpuShare": "1"}), (18, 100, {"gpuShare": "1"})],
    "eval": [(4, 16, {"gpuShare": "0.5"}), (8, 32, {"gpuShare": "0.5"})],
    "notebook": [(2, 8, {"gpuShare": "0.25"})],
}
NAMESPACES = {"chat": "inference", "rerank": "inference", "train": "ml-research", "eval": "ml-research"}


def _lifetime(rng: random.Random, kind: str) -> tuple[float, float]:
    """(minute of the day it was created, minutes it lived) for a pod of `kind`."""
    if kind == "chat":
        return _diurnal_minute(rng, 14 * 60), rng.uniform(120, 300)
    if kind == "rerank":
        return _diurnal_minute(rng, 13 * 60), rng.uniform(60, 180)
    if kind == "train":
        return rng.uniform(-180, 22 * 60), rng.uniform(120, 360)
    if kind == "eval":
        return _diurnal_minute(rng, 11 * 60), rng.uniform(20, 90)
    return rng.uniform(8 * 60, 18 * 60), rng.uniform(60, 180)


def _pod(rng: random.Random, kind: str) -> dict[str, str]:
    """One pod of `kind`: when it lived and what it asked."""
    start, minutes = _lifetime(rng, kind)
    cpu, memory_gib, share = rng.choice(SIZES[kind])
    created = DAY_START + timedelta(seconds=round(start * 60))
    ended = created + timedelta(seconds=round(minutes * 60))
    still_alive = ended >= DAY_START + timedelta(hours=24) and rng.random() < 0.5
    return {
        "namespace": NAMESPACES.get(kind, "analytics"),
        "created": _rfc3339(created),
        "deleted": "" if still_alive else _rfc3339(ended),
        "cpu": str(cpu),
        "memory": f"{memory_gib}Gi",
        "gpus": "1",
        **share,
    }


def _rfc3339(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def pod_list(pods: int = sum(KINDS.values())) -> str:
    """The day as CSV text, `pods` pods in the shipped mix of kinds (sorted by creation, as an export is)."""
    rng = random.Random(SEED)
    scale = pods / sum(KINDS.values())
    rows = []
    for kind, count in KINDS.items():
        for index in range(round(count * scale)):
            rows.append({"name": f"{kind}-{index:03d}", **_pod(rng, kind)})
    rows.sort(key=lambda row: (row["created"], row["name"]))
    text = io.StringIO()
    writer = csv.DictWriter(text, COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return text.getvalue()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.production_day", description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=sum(KINDS.values()), help="pods in the day (default 250)")
    parser.add_argument("--out", type=Path, help="write here instead of standard output")
    args = parser.parse_args(argv)
    if args.pods < len(KINDS):
        parser.error(f"--pods {args.pods}: at least {len(KINDS)}, one of each kind")
    text = pod_list(args.pods)
    if args.out is None:
        sys.stdout.write(text)
    else:
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
