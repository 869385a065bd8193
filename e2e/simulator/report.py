"""The report of `make simulate WORKLOAD=<trace>`: one plot per run, a comparison of the variants, Markdown.

Each run of a trace (one stack variant, one repetition) yields a run document: the day's cost against the
oracle's, a timeline sampled every few real seconds, waits, disruptions, NodeClaims and the pods that never ran.
This module only reads those documents (no rig, no Pulumi), so the report can be tested without a cluster.
Repeated runs of one variant differ (Karpenter's and HAMi's timing is real), hence min/median/max per variant.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

# Where the terminal says the plots are: the directory e2e.run writes the report into, relative to the repository.
REPORT_DIR = "build/e2e"
MIB_PER_GIB = 1024
# 10 x 8 in at 100 dpi: a 1000 x 800 px PNG whatever the machine's matplotlib defaults.
FIGURE_INCHES = (10, 8)
FIGURE_DPI = 100
NOT_AVAILABLE = "n/a"

Stats = dict[str, float | None]


def png_name(run: dict[str, Any]) -> str:
    """The plot's file name, beside the Markdown report that links it."""
    return f"simulate-{run['variant']}-run{run['run']}.png"


def plot(run: dict[str, Any], path: Path) -> None:
    """Cost against the oracle, GPU memory used against paid, pods pending and running, over the simulated day.

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
    figure.suptitle(f"{Path(run['trace']).name}: stack {run['stack']}, variant {run['variant']}, run {run['run']}")

    totals = run["cost"]
    cost.step(hours, series("usd_per_hour"), where="post", label=f"run: ${totals['usd']:.2f} for the day")
    cost.step(
        hours,
        series("oracle_usd_per_hour"),
        where="post",
        linestyle="--",
        color="black",
        label=f"oracle: ${totals['oracle_usd']:.2f} (ratio {_ratio(totals['ratio'])})",
    )
    cost.set_ylabel("$ per hour")
    cost.set_title("cost of the nodes against the oracle", loc="left", fontsize="medium")

    used, paid = series("gpu_memory_used_mib", MIB_PER_GIB), series("gpu_memory_paid_mib", MIB_PER_GIB)
    memory.fill_between(hours, used, paid, step="post", color="tab:red", alpha=0.25, label="paid, unused")
    memory.step(hours, paid, where="post", color="tab:red", label="paid (the nodes' GPUs)")
    memory.step(hours, used, where="post", color="tab:green", label="used by pods")
    memory.set_ylabel("GPU memory, GiB")
    memory.set_title("GPU memory: the shaded gap is waste", loc="left", fontsize="medium")

    pods.step(hours, series("pods_running"), where="post", color="tab:blue", alpha=0.35, label="running")
    pods.step(hours, series("pods_pending"), where="post", color="tab:orange", linewidth=2, label="pending")
    pods.set_ylabel("pods")
    pods.set_xlabel("simulated hour")
    pods.set_xlim(0, run["hours"])
    pods.set_xticks(range(0, run["hours"] + 1, max(1, run["hours"] // 8)))
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


def summary(runs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per variant, in the order the runs first name it: how many runs, and each figure's min/median/max."""
    by_variant: dict[str, list[dict[str, Any]]] = {}
    for run in runs:
        by_variant.setdefault(run["variant"], []).append(run)
    figures: dict[str, Callable[[dict[str, Any]], float | None]] = {
        "cost_usd": lambda run: run["cost"]["usd"],
        "ratio": lambda run: run["cost"]["ratio"],
        "p95_wait_s": lambda run: _worst(run["waits"]["by_team"], "p95_s"),
        "max_wait_s": lambda run: _worst(run["waits"]["by_team"], "max_s"),
        "beyond_launch_max_s": lambda run: _worst(run["waits"]["by_team"], "beyond_launch_max_s"),
        "disrupted_in_budget_window": lambda run: sum(run["disruptions"]["in_budget_window"].values()),
        "pods_disrupted": _disrupted,
        "nodeclaims_launched": lambda run: run["nodeclaims"]["launched"],
        "wall_seconds_per_simulated_hour": lambda run: run["wall_seconds_per_simulated_hour"],
    }
    result = {}
    for variant, variant_runs in by_variant.items():
        entry: dict[str, Any] = {"runs": len(variant_runs)}
        entry.update({name: _stats(figure(run) for run in variant_runs) for name, figure in figures.items()})
        entry["spread_percent"] = _spread_percent([run["cost"]["usd"] for run in variant_runs])
        result[variant] = entry
    return result


def _spread_percent(costs: list[float]) -> float | None:
    """How far apart the runs' day costs are, relative to their median: None when the median day cost nothing."""
    low, middle, high = min(costs), statistics.median(costs), max(costs)
    if high == low:
        return 0.0
    return round((high - low) / middle * 100, 1) if middle else None


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


def comparison_table(summary: dict[str, dict[str, Any]]) -> str:
    """One Markdown row per variant: medians, and the cost's min-max when the variant ran more than once."""
    header = [
        "variant",
        "runs",
        "day cost $",
        "ratio to oracle",
        "p95 wait s",
        "max wait s",
        "max wait after node launch s",
        "pods disrupted",
        "of them in budget windows",
        "NodeClaims launched",
        "cost spread %",
        "s per simulated hour",
    ]
    rows = []
    for variant, entry in summary.items():
        cost = entry["cost_usd"]
        day_cost = _usd(cost["median"])
        if entry["runs"] > 1:
            day_cost += f" ({_usd(cost['min'])}-{_usd(cost['max'])})"
        rows.append(
            [
                variant,
                str(entry["runs"]),
                day_cost,
                _ratio(entry["ratio"]["median"]),
                _seconds(entry["p95_wait_s"]["median"]),
                _seconds(entry["max_wait_s"]["median"]),
                _seconds(entry["beyond_launch_max_s"]["median"]),
                _count(entry["pods_disrupted"]["median"]),
                _count(entry["disrupted_in_budget_window"]["median"]),
                _count(entry["nodeclaims_launched"]["median"]),
                _fmt(entry["spread_percent"], 1),
                _seconds(entry["wall_seconds_per_simulated_hour"]["median"]),
            ]
        )
    return "\n".join(_table(header, rows)) + "\n"


def _cost_line(run: dict[str, Any]) -> str:
    cost = run["cost"]
    return f"${_usd(cost['usd'])} for the day against the oracle's ${_usd(cost['oracle_usd'])}"


def _never_ran(run: dict[str, Any]) -> int:
    return sum(entry["pods"] for entry in run["never_ran"])


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


def _run_section(run: dict[str, Any]) -> list[str]:
    cost, waits, disruptions, claims = run["cost"], run["waits"], run["disruptions"], run["nodeclaims"]
    lines = [f"## {run['variant']}, run {run['run']}", ""]
    lines += [f"![{run['variant']}, run {run['run']}]({png_name(run)})", ""]
    lines += [f"Cost: {_cost_line(run)}, ratio {_ratio(cost['ratio'])}.", ""]

    lines += ["### Nodes by instance type", ""]
    types = sorted(cost["node_hours_by_type"].keys() | cost["usd_by_type"].keys())
    if types:
        rows = [
            [name, _fmt(cost["node_hours_by_type"].get(name), 1), _usd(cost["usd_by_type"].get(name))] for name in types
        ]
        lines += _table(["instance type", "node-hours", "$"], rows)
    else:
        lines.append("No nodes were launched.")

    rows = [
        [name, _usd(pool["usd"]), _usd(pool["oracle_usd"]), _ratio(pool["ratio"])]
        for name, pool in cost["by_pool"].items()
    ]
    lines += ["", "### Cost by pool", ""]
    lines += _table(["pool", "$", "oracle $", "ratio"], rows) if rows else ["No pool was paid for or asked for."]

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
        rows = [[entry["refused_by"], str(entry["pods"]), entry["message"]] for entry in run["never_ran"]]
        lines += _table(["refused by", "pods", "message"], rows)
    else:
        lines.append("Every pod ran.")

    lines += ["", "### What the rig compressed", ""]
    lines.append(
        f"{run['hours']} simulated hours at {run['seconds_per_hour']} s each took {_seconds(run['wall_seconds'])} s "
        f"({_seconds(run['wall_seconds_per_simulated_hour'])} s per simulated hour)."
    )
    lines += [""] + ([f"- {line}" for line in run["compression"]] or ["Nothing else was compressed."])
    return lines


def markdown(document: dict[str, Any]) -> str:
    """build/e2e/simulate.md: the comparison first, then each run's figures behind its plot."""
    lines = [f"# A simulated day: {document['trace']} on stack {document['stack']}", ""]
    lines += [
        "Each run replays the trace's day through the offline cluster (real Karpenter, real HAMi). Day cost is the "
        "median over a variant's runs, with min-max when it ran more than once; ratio is the run's cost over the "
        "oracle's; waits are the worst team's.",
        "",
    ]
    lines.append(comparison_table(document["summary"]))
    for run in document["runs"]:
        lines += [*_run_section(run), ""]
    return "\n".join(lines)


def terminal(document: dict[str, Any]) -> str:
    """What `make simulate` prints: the comparison, one line per run and where its plot is."""
    lines = [f"A simulated day: {document['trace']} on stack {document['stack']}", ""]
    lines.append(comparison_table(document["summary"]))
    for run in document["runs"]:
        max_wait = _worst(run["waits"]["by_team"], "max_s")
        lines.append(
            f"{run['variant']} run {run['run']}: {_cost_line(run)}, ratio {_ratio(run['cost']['ratio'])}, "
            f"max wait {NOT_AVAILABLE if max_wait is None else f'{max_wait:.1f} s'}, {_disrupted(run)} pods disrupted, "
            f"{_never_ran(run)} never ran; {REPORT_DIR}/{png_name(run)}"
        )
    lines.append(f"report: {REPORT_DIR}/simulate.md")
    return "\n".join(lines) + "\n"
