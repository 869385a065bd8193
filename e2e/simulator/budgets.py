"""A NodePool's disruption settings over a simulated day: its scheduled budgets as windows in simulated minutes
(the previous evening's overnight tail included), and how long a node waits before it may go (`consolidateAfter`).

Pure: the rig (e2e.simulator.day) switches each window's budget on and off at its exact second, the policy-aware
bound (e2e.simulator.oracle) keeps nodes through zero-node windows, and the figures count evictions inside them.
Karpenter reads budget schedules as UTC cron (`cron.ParseStandard("TZ=UTC " + schedule)`, kubernetes-sigs/karpenter
pkg/apis/v1/nodepool.go) and a window is open from each firing for `duration`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from e2e.cluster.stack import budget_duration
from e2e.simulator.demand import MINUTES_PER_DAY, WEEKDAYS, clock
from gpushare.karpenter_api import CronSchedule, parse_schedule
from gpushare.metrics import duration_seconds

# What Karpenter counts as consolidation when a budget names its reasons (karpenter.sh/v1 DisruptionReason).
CONSOLIDATION_REASONS = ("Underutilized", "Empty")
# Descriptors that fire at a time of day; the others (@monthly, @yearly, @annually) need a date the day has not.
DAILY_DESCRIPTORS = {"@daily": "0 0 * * *", "@midnight": "0 0 * * *", "@hourly": "0 * * * *", "@weekly": "0 0 * * 0"}


@dataclass(frozen=True)
class Window:
    """One opening of a scheduled budget, in simulated minutes of the day (negative: it opened the evening
    before), for the pool, with the budget as Karpenter reads it once its schedule is dropped."""

    pool: str
    start_minute: float
    end_minute: float
    budget: dict[str, Any]

    @property
    def zero(self) -> bool:
        return str(self.budget.get("nodes")) in ("0", "0%")

    @property
    def reasons(self) -> tuple[str, ...]:
        return tuple(self.budget.get("reasons", ()))

    def holds(self, cause: str, minute: float) -> bool:
        """Whether a disruption for `cause` at `minute` is one this zero-node window forbids."""
        applies = not self.reasons or cause in self.reasons
        return self.zero and applies and self.start_minute <= minute < self.end_minute

    def holds_consolidation(self) -> bool:
        return self.zero and (not self.reasons or any(r in self.reasons for r in CONSOLIDATION_REASONS))


def _cron(schedule: str) -> CronSchedule | None:
    parsed = parse_schedule(DAILY_DESCRIPTORS.get(schedule.strip(), schedule))
    return parsed if isinstance(parsed, CronSchedule) else None


def _opens_on(cron: CronSchedule, weekday: str) -> bool:
    return cron.any_day_of_week or WEEKDAYS.index(weekday) in cron.days_of_week


def budget_windows(
    pool: dict[str, Any], weekday: str, horizon_minutes: float, offset_minutes: float = 0.0
) -> tuple[list[Window], list[str]]:
    """Every opening of the pool's scheduled budgets that covers part of [0, horizon) of a day that starts
    `offset_minutes` into a UTC `weekday` (the day before's openings too: an overnight window is still open at the
    start), in minutes of that day; and a note per budget the rig cannot place on a dateless day."""
    name = pool["metadata"]["name"]
    windows, notes = [], []
    for budget in pool["spec"].get("disruption", {}).get("budgets", []):
        if "schedule" not in budget:
            continue
        cron = _cron(budget["schedule"])
        if cron is None or not cron.any_day_of_month or len(cron.months) < 12:
            notes.append(
                f"budget {name} {budget['schedule']!r} dropped: it depends on the date, the simulated day has none"
            )
            continue
        length = budget_duration(budget["duration"]).total_seconds() / 60
        kept = {key: value for key, value in budget.items() if key not in ("schedule", "duration")}
        day = WEEKDAYS.index(weekday)
        for offset in range(-1, math.ceil((horizon_minutes + offset_minutes) / MINUTES_PER_DAY) + 1):
            if not _opens_on(cron, WEEKDAYS[(day + offset) % 7]):
                continue
            for hour in sorted(cron.hours):
                for minute in sorted(cron.minutes):
                    start = offset * MINUTES_PER_DAY + hour * 60 + minute - offset_minutes
                    if start + length > 0 and start < horizon_minutes:
                        windows.append(Window(name, start, start + length, kept))
        opened = [w for w in windows if w.budget is kept]
        spans = ", ".join(f"{clock(max(0, w.start_minute))}-{clock(w.end_minute)}" for w in opened) or "never"
        notes.append(
            f"budget {name} nodes {budget['nodes']} {budget['schedule']!r} for {budget['duration']}: switched by the "
            f"rig at simulated {spans}"
        )
    return sorted(windows, key=lambda w: w.start_minute), notes


def consolidate_after_minutes(pool: dict[str, Any]) -> float:
    """How long (simulated minutes) a node stays unneeded before Karpenter may remove it: `Never` is forever."""
    value = pool["spec"].get("disruption", {}).get("consolidateAfter", "0s")
    return math.inf if value == "Never" else (duration_seconds(value) or 0) / 60


def always_budgets(pool: dict[str, Any]) -> list[dict[str, Any]]:
    """The pool's budgets without a schedule: in force all day."""
    return [budget for budget in pool["spec"].get("disruption", {}).get("budgets", []) if "schedule" not in budget]
