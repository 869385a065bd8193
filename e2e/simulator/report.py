"""The report of `make simulate` with a day (a trace or a replayed pod list): one plot per run, a comparison of
the variants, the speed check, Markdown.

Each run of a day (one speed, one stack variant, one repetition) yields a run document: its cost raw and
latency-corrected against the oracle and the policy-aware bound, a timeline sampled every few real seconds, waits,
disruptions, NodeClaims, pods served, refused and never placed. This module only reads those documents (no rig,
no Pulumi), so the report can be tested without a cluster.

- Variants are compared at one speed (the one most runs used; the slowest on a tie) on the corrected cost. A
  variant is ranked against the stack only when the difference is beyond the runs' spread and no duration it
  changes was compressed below Karpenter's own floor; otherwise it is marked unresolved, with the reason.
- The speed check: the same day at several `secondsPerHour`. The raw cost is fit as C + A / secondsPerHour
  (least squares); C is the full-scale estimate, to hold against the corrected figure. Which decisions changed
  with speed (NodeClaims launched, pods evicted) is listed per speed.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from e2e.simulator.demand import clock
from e2e.simulator.variants import BASELINE

# Where the terminal says the plots are: the directory e2e.run writes the report into, relative to the repository.
REPORT_DIR = "build/e2e"
MIB_PER_GIB = 1024
# 10 x 8 in at 100 dpi: a 1000 x 800 px PNG whatever the machine's matplotlib defaults.
FIGURE_INCHES = (10, 8)
FIGURE_DPI = 100
NOT_AVAILABLE = "n/a"
# The least time in which Karpenter can act on a node it finds empty or underused: its disruption loop polls
# every 10 s (pkg/controllers/disruption/controller.go pollingPeriod) and re-checks a decision 15 s later before it
# acts (consolidation.go commandValidationDelay). A compressed consolidateAfter below it cannot show its effect.
KARPENTER_FLOOR_S = 25.0

Stats = dict[str, float | None]


def run_stem(run: dict[str, Any]) -> str:
    """The run's file name without suffix: its document, its plot."""
    return f"simulate-{run['variant']}-{run['seconds_per_hour']}s-run{run['run']}"


def png_name(run: dict[str, Any]) -> str:
    """The plot's file name, beside the Markdown report that links it."""
    return f"{run_stem(run)}.png"


def plot(run: dict[str, Any], path: Path) -> None:
    """Cost (raw and corrected) against the oracle and the policy-aware bound, GPU memory used against paid, pods
    pending and running, over the simulated day.

    A Figure with its own Agg canvas, not pyplot: no global backend or figure registry is touched, so plots can
    be drawn from tests and threads alike. The PNG carries no Software tag, so it names no matplotlib version.
    """
    timeline = run["timeline"]
    hours = [sample["hour"] for sample in timeline]

    def series(key: str, scale: float = 1) -> list[float]:
        return [sample[key] / scale for sample in timeline]

    figure = Figure(figsize=FIGURE_INCHES, dpi=FIGURE_DPI, layout="constrained")
    FigureCanvasAgg(figure)
    cost, memory, pods = figure.subplots(3, 1, sharex=True)
    figure.suptitle(
        f"{Path(run['trace']).name}: stack {run['stack']}, variant {run['variant']}, run {run['run']}, "
        f"{run['seconds_per_hour']} s per simulated hour"
    )

    totals = run["cost"]
    cost.step(hours, series("usd_per_hour"), where="post", alpha=0.5, label=f"run, raw: ${totals['usd']:.2f}")
    cost.step(
        hours,
        series("corrected_usd_per_hour"),
        where="post",
        label=f"run, latency-corrected: ${totals['corrected_usd']:.2f}",
    )
    cost.step(
        hours,
        series("policy_usd_per_hour"),
        where="post",
        linestyle=":",
        color="gray",
        label=f"policy-aware bound: ${totals['policy_usd']:.2f}",
    )
    cost.step(
        hours,
        series("oracle_usd_per_hour"),
        where="post",
        linestyle="--",
        color="black",
        label=f"oracle: ${totals['oracle_usd']:.2f} (corrected ratio {_ratio(totals['corrected_ratio'])})",
    )
    cost.set_ylabel("$ per hour")
    cost.set_title("cost of the nodes against the oracle and the policy bound", loc="left", fontsize="medium")

    used, paid = series("gpu_memory_used_mib", MIB_PER_GIB), series("gpu_memory_paid_mib", MIB_PER_GIB)
    memory.fill_between(hours, used, paid, step="post", color="tab:red", alpha=0.25, label="paid, unused")
    memory.step(hours, paid, where="post", color="tab:red", label="paid (HAMi nodes' GPUs)")
    memory.step(hours, used, where="post", color="tab:green", label="used by HAMi pods")
    memory.set_ylabel("GPU memory, GiB")
    memory.set_title("GPU memory on HAMi pools: the shaded gap is waste", loc="left", fontsize="medium")

    pods.step(hours, series("pods_running"), where="post", color="tab:blue", alpha=0.35, label="running")
    pods.step(hours, series("pods_pending"), where="post", color="tab:orange", linewidth=2, label="pending")
    pods.set_ylabel("pods")
    pods.set_xlabel("simulated hour")
    horizon = run.get("horizon_hours", run["hours"])
    end = max(run["hours"], horizon, run.get("billed_end_hours", horizon))  # the whole billed span
    if end > horizon:
        tail = totals.get("tail", {})
        for axes in (cost, memory, pods):
            axes.axvspan(horizon, end, color="gray", alpha=0.1)
        cost.axvline(
            horizon,
            color="gray",
            linewidth=0.8,
            # Two dollar signs in one label would be read as mathtext: escaped.
            label=f"horizon; after it (shaded): run \\${tail.get('corrected_usd', 0):.2f} corrected, oracle "
            f"\\${tail.get('oracle_usd', 0):.2f}",
        )
    pods.set_xlim(0, end)
    pods.set_xticks(range(0, int(end) + 1, max(1, int(end) // 8)))
    if not timeline:
        cost.text(0.5, 0.5, "no samples", transform=cost.transAxes, ha="center", va="center", color="gray")

    for axes in (cost, memory, pods):
        axes.set_ylim(bottom=0)
        axes.grid(alpha=0.3)
        axes.legend(loc="upper left", fontsize="small")
    figure.savefig(path, format="png", metadata={"Software": None})


def _stats(values: Iterable[float | None]) -> Stats:
    """min, median and max of the values there are (a run without pods has no wait): all None if none."""
    present = [value for value in values if value is not None]
    if not present:
        return {"min": None, "median": None, "max": None}
    return {"min": min(present), "median": statistics.median(present), "max": max(present)}


def _worst(groups: dict[str, dict[str, Any]], key: str) -> float | None:
    """The worst team's figure: a mean over teams would hide the one team that waited."""
    return max((group[key] for group in groups.values() if group["pods"]), default=None)


def _disrupted(run: dict[str, Any]) -> int:
    return sum(run["disruptions"]["by_cause"].values())


FIGURES: dict[str, Callable[[dict[str, Any]], float | None]] = {
    "corrected_usd": lambda run: run["cost"]["corrected_usd"],
    "cost_usd": lambda run: run["cost"]["usd"],
    "compression_usd": lambda run: run["cost"]["compression_usd"],
    "oracle_usd": lambda run: run["cost"]["oracle_usd"],
    "policy_usd": lambda run: run["cost"]["policy_usd"],
    "corrected_ratio": lambda run: run["cost"]["corrected_ratio"],
    "corrected_to_policy": lambda run: run["cost"]["corrected_to_policy"],
    "ratio": lambda run: run["cost"]["ratio"],
    "p95_wait_s": lambda run: _worst(run["waits"]["by_team"], "p95_s"),
    "max_wait_s": lambda run: _worst(run["waits"]["by_team"], "max_s"),
    "beyond_launch_max_s": lambda run: _worst(run["waits"]["by_team"], "beyond_launch_max_s"),
    "disrupted_in_budget_window": lambda run: sum(run["disruptions"]["in_budget_window"].values()),
    "pods_disrupted": _disrupted,
    "nodeclaims_launched": lambda run: run["nodeclaims"]["launched"],
    "pods_served": lambda run: run["pods"]["total"]["served"],
    "pods_refused": lambda run: run["pods"]["total"]["refused"],
    "pods_never_placed": lambda run: run["pods"]["total"]["never_placed"],
    "wall_seconds_per_simulated_hour": lambda run: run["wall_seconds_per_simulated_hour"],
}


def main_speed(runs: list[dict[str, Any]]) -> int | None:
    """The speed the variants are compared at: the one most runs used, the slowest on a tie."""
    counts = Counter(run["seconds_per_hour"] for run in runs)
    return max(counts, key=lambda speed: (counts[speed], speed), default=None)


def _by_variant(runs: Iterable[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    grouped: dict[str, list[dict[str, Any]]] = {}
    for run in runs:
        grouped.setdefault(run["variant"], []).append(run)
    return grouped


def summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """At the main speed, per variant in the order the runs first name it: how many runs, each figure's
    min/median/max, the spread of the corrected cost, and (beside the stack) whether its difference is resolved;
    and the speed check of every variant run at two speeds or more."""
    speed = main_speed(runs)
    grouped = _by_variant(run for run in runs if run["seconds_per_hour"] == speed)
    variants = {}
    for variant, variant_runs in grouped.items():
        entry: dict[str, Any] = {"runs": len(variant_runs)}
        entry.update({name: _stats(figure(run) for run in variant_runs) for name, figure in FIGURES.items()})
        entry["spread_percent"] = _spread_percent([run["cost"]["corrected_usd"] for run in variant_runs])
        if variant != BASELINE and BASELINE in grouped:
            entry["verdict"] = verdict(grouped[BASELINE], variant_runs)
        variants[variant] = entry
    checks = {variant: speed_check(variant_runs) for variant, variant_runs in _by_variant(runs).items()}
    return {
        "seconds_per_hour": speed,
        "variants": variants,
        "speed_check": {variant: check for variant, check in checks.items() if check is not None},
    }


def _spread_percent(costs: list[float]) -> float | None:
    """How far apart the runs' costs are, relative to their median: None when the median cost nothing."""
    low, middle, high = min(costs), statistics.median(costs), max(costs)
    if high == low:
        return 0.0
    return round((high - low) / middle * 100, 1) if middle else None


def _below_floor(stack: dict[str, Any], variant: dict[str, Any]) -> list[str]:
    """Pools whose consolidateAfter the variant changes where either value ran below Karpenter's floor."""
    found = []
    for pool, settings in variant.get("disruption_settings", {}).items():
        base = stack.get("disruption_settings", {}).get(pool)
        if base is None or base["consolidate_after_minutes"] == settings["consolidate_after_minutes"]:
            continue
        ran = [s["rig_consolidate_after_s"] for s in (base, settings) if s["rig_consolidate_after_s"] is not None]
        if ran and min(ran) < KARPENTER_FLOOR_S:
            found.append(
                f"{pool} consolidateAfter ran as {' and '.join(f'{s:g} s' for s in ran)}, below Karpenter's "
                f"{KARPENTER_FLOOR_S:g} s floor (10 s poll + 15 s validation)"
            )
    return found


def verdict(stack_runs: list[dict[str, Any]], variant_runs: list[dict[str, Any]]) -> str:
    """Whether the variant's corrected cost can be told from the stack's: ranked only beyond the runs' spread
    and when no duration it changes was compressed below Karpenter's floor."""
    difference = statistics.median(r["cost"]["corrected_usd"] for r in variant_runs) - statistics.median(
        r["cost"]["corrected_usd"] for r in stack_runs
    )
    floor = _below_floor(stack_runs[0], variant_runs[0])
    if floor:
        return "unresolved: " + "; ".join(floor)
    spreads = [
        max(r["cost"]["corrected_usd"] for r in runs) - min(r["cost"]["corrected_usd"] for r in runs)
        for runs in (stack_runs, variant_runs)
        if len(runs) > 1
    ]
    if not spreads:
        return f"unresolved: {difference:+.2f} $ from one run each, the spread is unknown (RUNS=3)"
    spread = max(spreads)
    if abs(difference) <= spread:
        return f"unresolved: {difference:+.2f} $ is within the runs' spread ({spread:.2f} $)"
    return f"{'cheaper' if difference < 0 else 'dearer'} by {abs(difference):.2f} $ (spread {spread:.2f} $)"


def speed_check(runs: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The raw cost fit as C + A / secondsPerHour (None below two speeds): C, the full-scale estimate, beside the
    corrected cost; and per speed the medians of cost and of the decisions. A run that served fewer pods than the
    most any run served paid for a smaller day: it is left out of the fit, and said so."""
    speeds = sorted({run["seconds_per_hour"] for run in runs})
    if len(speeds) < 2:
        return None
    most_served = max(_served(run) for run in runs)
    fitted = [run for run in runs if _served(run) == most_served]
    per_speed = {}
    for speed in speeds:
        at = [run for run in runs if run["seconds_per_hour"] == speed]
        per_speed[str(speed)] = {
            "runs": len(at),
            "cost_usd": statistics.median(run["cost"]["usd"] for run in at),
            "corrected_usd": statistics.median(run["cost"]["corrected_usd"] for run in at),
            "nodeclaims_launched": statistics.median(run["nodeclaims"]["launched"] for run in at),
            "pods_disrupted": statistics.median(_disrupted(run) for run in at),
            "pods_served": statistics.median(_served(run) for run in at),
            "runs_fitted": sum(_served(run) == most_served for run in at),
        }
    check: dict[str, Any] = {
        "full_scale_usd": None,
        "per_inverse_speed_usd": None,
        "corrected_usd": round(statistics.median(run["cost"]["corrected_usd"] for run in fitted), 3),
        "agreement_percent": None,
        "per_speed": per_speed,
    }
    if len({run["seconds_per_hour"] for run in fitted}) < 2:
        return check
    xs = [1 / run["seconds_per_hour"] for run in fitted]
    ys = [run["cost"]["usd"] for run in fitted]
    mean_x, mean_y = statistics.fmean(xs), statistics.fmean(ys)
    slope = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True)) / sum((x - mean_x) ** 2 for x in xs)
    full_scale = mean_y - slope * mean_x
    check["full_scale_usd"] = round(full_scale, 3)
    check["per_inverse_speed_usd"] = round(slope, 3)
    if full_scale:
        check["agreement_percent"] = round(abs(check["corrected_usd"] - full_scale) / full_scale * 100, 1)
    return check


def _served(run: dict[str, Any]) -> int:
    return run["pods"]["total"]["served"]


def _fmt(value: float | None, digits: int) -> str:
    return NOT_AVAILABLE if value is None else f"{value:.{digits}f}"


def _usd(value: float | None) -> str:
    return _fmt(value, 2)


def _ratio(value: float | None) -> str:
    return _fmt(value, 3)


def _seconds(value: float | None) -> str:
    return _fmt(value, 1)


def _count(value: float | None) -> str:
    """Counts are whole in a run; a median of two runs may end in .5."""
    return NOT_AVAILABLE if value is None else f"{value:g}"


def _table(header: list[str], rows: Iterable[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_cell(text) for text in row) + " |" for row in rows]
    return lines


def _cell(text: str) -> str:
    """A value as one Markdown table cell: an API server's message may hold a pipe or a line break."""
    return " ".join(text.split()).replace("|", "\\|")


def comparison_table(summary_of_runs: dict[str, Any]) -> str:
    """One Markdown row per variant at the main speed: medians, the corrected cost's range over repeated runs."""
    header = [
        "variant",
        "runs",
        "corrected $",
        "raw $",
        "compression $",
        "oracle $",
        "policy bound $",
        "corrected / oracle",
        "corrected / bound",
        "pods served / refused / never placed",
        "p95 wait s",
        "max wait after node launch s",
        "pods disrupted (in budget windows)",
        "NodeClaims",
        "spread %",
        "against the stack",
    ]
    rows = []
    for variant, entry in summary_of_runs["variants"].items():
        median = {name: entry[name]["median"] for name in FIGURES}
        corrected = _usd(median["corrected_usd"])
        if entry["runs"] > 1:
            corrected += f" ({_usd(entry['corrected_usd']['min'])}-{_usd(entry['corrected_usd']['max'])})"
        rows.append(
            [
                variant,
                str(entry["runs"]),
                corrected,
                _usd(median["cost_usd"]),
                _usd(median["compression_usd"]),
                _usd(median["oracle_usd"]),
                _usd(median["policy_usd"]),
                _ratio(median["corrected_ratio"]),
                _ratio(median["corrected_to_policy"]),
                " / ".join(_count(median[key]) for key in ("pods_served", "pods_refused", "pods_never_placed")),
                _seconds(median["p95_wait_s"]),
                _seconds(median["beyond_launch_max_s"]),
                f"{_count(median['pods_disrupted'])} ({_count(median['disrupted_in_budget_window'])})",
                _count(median["nodeclaims_launched"]),
                _fmt(entry["spread_percent"], 1),
                entry.get("verdict", "the stack"),
            ]
        )
    return "\n".join(_table(header, rows)) + "\n"


def speed_table(summary_of_runs: dict[str, Any]) -> str:
    """The speed check: per variant and speed the medians, and the fit's full-scale estimate."""
    rows = []
    for variant, check in summary_of_runs["speed_check"].items():
        for speed, at in check["per_speed"].items():
            rows.append(
                [
                    variant,
                    speed,
                    str(at["runs"]),
                    _usd(at["cost_usd"]),
                    _usd(at["corrected_usd"]),
                    _count(at["nodeclaims_launched"]),
                    _count(at["pods_disrupted"]),
                    _count(at["pods_served"]),
                    "yes" if at["runs_fitted"] == at["runs"] else f"{at['runs_fitted']} of {at['runs']}",
                    _usd(check["full_scale_usd"]),
                    _fmt(check["agreement_percent"], 1),
                ]
            )
    header = [
        "variant",
        "s per simulated hour",
        "runs",
        "raw $",
        "corrected $",
        "NodeClaims",
        "pods disrupted",
        "pods served",
        "in the fit",
        "fit C $ (full scale)",
        "C vs corrected %",
    ]
    return "\n".join(_table(header, rows)) + "\n"


def _cost_line(run: dict[str, Any]) -> str:
    cost = run["cost"]
    return (
        f"${_usd(cost['corrected_usd'])} latency-corrected (raw ${_usd(cost['usd'])}, compression "
        f"${_usd(cost['compression_usd'])}) against the oracle's ${_usd(cost['oracle_usd'])} and the policy bound's "
        f"${_usd(cost['policy_usd'])}"
    )


def _span_line(run: dict[str, Any]) -> str:
    """The same figures within the day and after the horizon, apart: each ratio's sides cover the same span."""
    within, tail = run["cost"].get("within_day"), run["cost"].get("tail")
    if within is None or tail is None:
        return ""
    horizon = run["horizon_hours"] * 60
    return (
        f"Within the day (to {clock(horizon)}): ${_usd(within['corrected_usd'])} corrected against the oracle's "
        f"${_usd(within['oracle_usd'])} ({_ratio(within['corrected_ratio'])}); after the horizon, "
        f"{tail['hours']:g} simulated hours to where the bill ends (nodes still serving late jobs, and the oracle "
        f"serving the same jobs): ${_usd(tail['corrected_usd'])} corrected (raw ${_usd(tail['usd'])}) against the "
        f"oracle's ${_usd(tail['oracle_usd'])} and the policy bound's ${_usd(tail['policy_usd'])}."
    )


def _never_ran(run: dict[str, Any]) -> int:
    total = run["pods"]["total"]
    return total["refused"] + total["never_placed"]


def _waits_table(title: str, groups: dict[str, dict[str, Any]]) -> list[str]:
    if not groups:
        return ["No pods."]
    header = [title, "pods", "p50 s", "p95 s", "max s", "beyond launch max s"]
    rows = [
        [
            name,
            str(group["pods"]),
            _seconds(group["p50_s"]),
            _seconds(group["p95_s"]),
            _seconds(group["max_s"]),
            _seconds(group["beyond_launch_max_s"]),
        ]
        for name, group in groups.items()
    ]
    return _table(header, rows)


def _counts_table(title: str, counts: dict[str, int], column: str, empty: str) -> list[str]:
    if not counts:
        return [empty]
    return _table([title, column], ([name, str(count)] for name, count in counts.items()))


def _too_fast_line(run: dict[str, Any]) -> str:
    fast, speed = run["too_fast"], run["seconds_per_hour"]
    reasons = []
    if "shortest_life" in fast:
        life = fast["shortest_life"]
        reasons.append(
            f"{life['group']}'s pods added at {clock(life['minute'])} live {life['life_minutes']:g} simulated "
            f"minutes, {life['life_real_s']:g} real s at {speed} s per simulated hour, under the {life['floor_s']:g} s "
            "the rig can take from a node's launch to its pods running: pods that never ran may be the "
            "compression's, not the stack's"
        )
    if "busiest_hour" in fast:
        hour = fast["busiest_hour"]
        reasons.append(
            f"the hour from {clock(hour['minute'])} adds {hour['pods']} pods, {hour['pods_per_s']:g} a real second at "
            f"{speed} s per simulated hour, more than the {hour['rate_per_s']:g} the rig places: they queue, and "
            "their waits are the rig's"
        )
    return (
        f"Too fast for this day: {'; '.join(reasons)} (secondsPerHour {fast['seconds_per_hour_needed']} or more "
        "clears this)."
    )


def _run_section(run: dict[str, Any]) -> list[str]:
    cost, waits, disruptions, claims = run["cost"], run["waits"], run["disruptions"], run["nodeclaims"]
    lines = [f"## {run['variant']}, {run['seconds_per_hour']} s per simulated hour, run {run['run']}", ""]
    lines += [f"![{run['variant']}, run {run['run']}]({png_name(run)})", ""]
    lines += [
        f"Cost: {_cost_line(run)}; corrected / oracle {_ratio(cost['corrected_ratio'])}, corrected / bound "
        f"{_ratio(cost['corrected_to_policy'])}, raw / oracle {_ratio(cost['ratio'])}.",
        "",
    ]
    if _span_line(run):
        lines += [_span_line(run), ""]
    latency = run["latency"]
    lines += [
        f"Latency correction: {latency['nodes']} nodes waited {_seconds(latency['launch_wait_s'])} real s in all for "
        f"their pods to run (at most {_seconds(latency['launch_wait_max_s'])} s) and "
        f"{_seconds(latency['teardown_wait_s'])} s beyond consolidateAfter to go (at most "
        f"{_seconds(latency['teardown_wait_max_s'])} s); billed at full scale, plus {latency['boot_s']:g} s of boot "
        "each.",
        "",
    ]

    if run["too_fast"]:
        lines += [_too_fast_line(run), ""]

    lines += ["### Nodes by instance type", ""]
    types = sorted(cost["node_hours_by_type"].keys() | cost["usd_by_type"].keys())
    if types:
        rows = [
            [name, _fmt(cost["node_hours_by_type"].get(name), 1), _usd(cost["usd_by_type"].get(name))] for name in types
        ]
        lines += _table(["instance type", "node-hours (raw)", "$ (raw)"], rows)
    else:
        lines.append("No nodes were launched.")

    rows = [
        [
            name,
            _usd(pool["corrected_usd"]),
            _usd(pool["usd"]),
            _usd(pool["oracle_usd"]),
            _usd(pool["policy_usd"]),
            _ratio(pool["corrected_ratio"]),
        ]
        for name, pool in cost["by_pool"].items()
    ]
    lines += ["", "### Cost by pool", ""]
    header = ["pool", "corrected $", "raw $", "oracle $", "policy bound $", "corrected / oracle"]
    lines += _table(header, rows) if rows else ["No pool was paid for or asked for."]
    unproven = {name: pool.get("oracle_unproven_minutes", 0.0) for name, pool in cost["by_pool"].items()}
    lines += [
        f"\nThe oracle of {name} is not proven optimal for {minutes:g} minutes (the solver's limit stopped the "
        "proof): there it is the cheapest packing found, an achievable cost."
        for name, minutes in unproven.items()
        if minutes
    ]

    lines += ["", "### Pods", ""]
    pods = run["pods"]["by_group"]
    if pods:
        keys = ("asked", "served", "refused", "never_placed", "quota_refused_by_design", "quota_delayed_by_design")
        header = ["group", "asked", "served", "refused", "never placed", "left out by quota", "delayed by quota"]
        lines += _table(header, ([name, *(str(entry[key]) for key in keys)] for name, entry in pods.items()))
    else:
        lines.append("No pods were asked for.")

    lines += ["", "### Waits by team", "", *_waits_table("team", waits["by_team"])]
    lines += ["", "### Waits by priority", "", *_waits_table("priority class", waits["by_priority"])]

    lines += ["", "### Disruptions", "", f"{_disrupted(run)} pods disrupted.", ""]
    lines += _counts_table("cause", disruptions["by_cause"], "pods", "No disruption cause was recorded.")
    windows = disruptions["in_budget_window"]
    lines += [
        "",
        *_counts_table("team", windows, "pods evicted inside a zero-node budget window", "No team was watched."),
    ]

    lines += ["", "### NodeClaims", "", f"{claims['launched']} launched, {claims['consolidated']} consolidated.", ""]
    lines += _counts_table("disruption reason", claims["by_reason"], "NodeClaims", "No NodeClaim was disrupted.")

    lines += ["", "### Pods that never ran", ""]
    if run["never_ran"]:
        rows = [
            [entry["refused_by"], str(entry.get("pods", entry.get("workloads"))), entry["message"]]
            for entry in run["never_ran"]
        ]
        lines += _table(["refused by", "pods (workloads, for admission)", "message"], rows)
    else:
        lines.append("Every pod ran.")

    lines += ["", "### What the rig compressed", ""]
    lines.append(
        f"{run['hours']} simulated hours at {run['seconds_per_hour']} s each took {_seconds(run['wall_seconds'])} s "
        f"({_seconds(run['wall_seconds_per_simulated_hour'])} s per simulated hour); conditions: "
        + ", ".join(f"{key} {value}" for key, value in run.get("conditions", {}).items())
        + "."
    )
    lines += [""] + ([f"- {line}" for line in run["compression"]] or ["Nothing else was compressed."])
    judged = run.get("invariants") or {}
    if judged:
        counts = ", ".join(f"{kind} {count}" for kind, count in judged["checks"].items())
        verdict = "broke" if judged["failed"] else "held"
        lines += ["", f"The invariant checker {verdict} in {judged['samples']} samples over the day ({counts})."]
        lines += [f"- {message}" for message in judged["failed"]]
    return lines


def markdown(document: dict[str, Any]) -> str:
    """build/e2e/simulate.md: the comparison and the speed check first, then each run's figures behind its plot."""
    result = document["summary"]
    lines = [f"# A simulated day: {document['trace']} on stack {document['stack']}", ""]
    lines += [
        "Each run plays the day through the offline cluster (real Karpenter, real HAMi). Variants are compared at "
        f"{result['seconds_per_hour']} s per simulated hour on the latency-corrected cost (the median over a "
        "variant's runs, min-max when it ran more than once); the oracle is the cheapest packing of the admitted "
        "demand at every moment (proven by CP-SAT, make pack's solver), the policy bound the same held by the "
        "stack's consolidateAfter and zero-node budget windows; waits are real seconds, the worst team's.",
        "",
    ]
    lines.append(comparison_table(result))
    if result["speed_check"]:
        lines += ["## Speed check", "", speed_table(result)]
    for run in document["runs"]:
        lines += [*_run_section(run), ""]
    return "\n".join(lines)


def terminal(document: dict[str, Any]) -> str:
    """What `make simulate` prints: the comparison, the speed check, one line per run and where its plot is."""
    result = document["summary"]
    lines = [f"A simulated day: {document['trace']} on stack {document['stack']}", ""]
    lines.append(comparison_table(result))
    if result["speed_check"]:
        lines.append(speed_table(result))
    for run in document["runs"]:
        max_wait = _worst(run["waits"]["by_team"], "max_s")
        lines.append(
            f"{run['variant']} at {run['seconds_per_hour']} s/h run {run['run']}: {_cost_line(run)}, max wait "
            f"{NOT_AVAILABLE if max_wait is None else f'{max_wait:.1f} s'}, {_disrupted(run)} pods disrupted, "
            f"{_never_ran(run)} pods never ran; {REPORT_DIR}/{png_name(run)}"
        )
        if run["too_fast"]:
            lines.append(f"  {_too_fast_line(run)}")
    lines.append(f"report: {REPORT_DIR}/simulate.md")
    return "\n".join(lines) + "\n"
