"""What Karpenter's API accepts: the NodePool and EC2NodeClass CRD patterns and enums the stack file feeds, the
cron grammar Karpenter parses budget schedules with, and the form of its chart tags.

Config validation and the policy pack both judge with these, so a stack file and a hand-edited object are held
to one rule. Sources (read, not vendored): sigs.k8s.io/karpenter v1.15 `pkg/apis/crds/karpenter.sh_nodepools.yaml`
and `pkg/apis/v1/nodepool.go` (`Budget.IsActive` parses `"TZ=UTC " + schedule` with github.com/robfig/cron/v3
v3.0.1 `ParseStandard`: `parser.go`, `spec.go`); aws/karpenter-provider-aws v1.15
`pkg/apis/crds/karpenter.k8s.aws_ec2nodeclasses.yaml` (spec.tags). Patterns are written to match as Go's RE2
does.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from gpushare import names

# karpenter.sh_nodepools.yaml (v1), as the CRD writes them: RE2 (and pydantic's Rust engine) match `$` at the very
# end only; `crd_regex` compiles them so Python does too.
DURATION_PATTERN: Final = r"^([0-9]+(s|m|h))+$"  # template.spec.terminationGracePeriod
DURATION_OR_NEVER_PATTERN: Final = r"^(([0-9]+(s|m|h))+|Never)$"  # expireAfter, disruption.consolidateAfter
# Budget duration: hours and/or minutes (cron has no seconds), with the `0s` Go's Duration.String() appends.
BUDGET_DURATION_PATTERN: Final = r"^((([0-9]+(h|m))|([0-9]+h[0-9]+m))(0s)?)$"
BUDGET_NODES_PATTERN: Final = r"^((100|[0-9]{1,2})%|[0-9]+)$"
# `^` binds only the macro alternative, `$` only the five-field one (so "@daily x" passes the CRD and fails the
# cron parser: only `schedule_problem` says whether a schedule is usable).
BUDGET_SCHEDULE_PATTERN: Final = (
    r"^(@(annually|yearly|monthly|weekly|daily|midnight|hourly))|((.+)\s(.+)\s(.+)\s(.+)\s(.+))$"
)


# Karpenter parses each gate of its FEATURE_GATES (`NodeOverlay=true,...`, what its chart renders from
# settings.featureGates) with Go's strconv.ParseBool: these texts turn a gate on.
GATE_ON_TEXTS: Final = frozenset({"1", "t", "T", "true", "TRUE", "True"})


def crd_regex(pattern: str) -> re.Pattern[str]:
    """A CRD pattern for Python's `re.search`: `$` becomes `\\Z` (Python's `$` also matches before a final newline)."""
    return re.compile(pattern.replace("$", r"\Z"))


DURATION: Final = crd_regex(DURATION_PATTERN)
DURATION_OR_NEVER: Final = crd_regex(DURATION_OR_NEVER_PATTERN)
BUDGET_DURATION: Final = crd_regex(BUDGET_DURATION_PATTERN)
BUDGET_NODES: Final = crd_regex(BUDGET_NODES_PATTERN)
BUDGET_SCHEDULE: Final = crd_regex(BUDGET_SCHEDULE_PATTERN)
CONSOLIDATION_POLICIES: Final = ("WhenEmpty", "WhenEmptyOrUnderutilized", "Balanced")


def reasons_never_disrupted(consolidation_policy: str, consolidate_after: str) -> frozenset[str]:
    """Budget reasons a NodePool of this policy never disrupts a node for (sigs.k8s.io/karpenter v1.14
    pkg/controllers/disruption: emptiness.go and consolidation.go skip every candidate when consolidateAfter is Never;
    consolidation.go leaves a WhenEmpty pool's non-empty nodes alone, so nothing is Underutilized there)."""
    if consolidate_after == "Never":
        return frozenset({"Empty", "Underutilized"})
    if consolidation_policy == "WhenEmpty":
        return frozenset({"Underutilized"})
    return frozenset()


# karpenter.k8s.aws_ec2nodeclasses.yaml spec.tags: Karpenter sets these itself and refuses them (CEL), and any
# `kubernetes.io/cluster...` key (the ownership tag).
RESTRICTED_NODE_CLASS_TAGS: Final = (
    "eks:eks-cluster-name",
    names.NODEPOOL_LABEL,
    "karpenter.sh/nodeclaim",
    "karpenter.k8s.aws/ec2nodeclass",
)
CLUSTER_OWNERSHIP_TAG_PREFIX: Final = "kubernetes.io/cluster"

# Karpenter's charts are OCI artifacts on public.ecr.aws tagged `1.2.3`, never `v1.2.3`.
CHART_TAG: Final = re.compile(r"^[0-9]+\.[0-9]+\.[0-9]+\Z")


def chart_tag_problem(version: str) -> str | None:
    """Why Karpenter's OCI registry has no chart tagged `version`, or None."""
    if CHART_TAG.match(version):
        return None
    if CHART_TAG.match(version.removeprefix("v")):
        return f"Karpenter's OCI charts are tagged without a leading v; write {version.removeprefix('v')}"
    return "is not a chart tag like 1.15.1"


def node_class_tag_problem(key: str, value: str) -> str | None:
    """Why the EC2NodeClass CRD refuses the tag `key: value` in spec.tags, or None."""
    if key == "" or value == "":
        return "the EC2NodeClass CRD refuses empty tag keys and values"
    if key in RESTRICTED_NODE_CLASS_TAGS:
        return f"Karpenter sets {key} itself and the EC2NodeClass CRD refuses it"
    if key.startswith(CLUSTER_OWNERSHIP_TAG_PREFIX):
        return "Karpenter sets the cluster-ownership tag itself and the EC2NodeClass CRD refuses kubernetes.io/cluster*"
    return None


# robfig/cron/v3 spec.go: the bounds and names of the five standard fields. No 7 for Sunday, no seconds, no
# L/W/#; names are three letters in any case, and only in the month and weekday fields.
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_WEEKDAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")
_FIELDS: Final = (
    ("minute", 0, 59, {}),
    ("hour", 0, 23, {}),
    ("day of month", 1, 31, {}),
    ("month", 1, 12, {name: number for number, name in enumerate(_MONTHS, start=1)}),
    ("day of week", 0, 6, {name: number for number, name in enumerate(_WEEKDAYS)}),
)
CRON_DESCRIPTORS: Final = ("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly")
_GO_INT = re.compile(r"[+-]?[0-9]+")  # what Go's strconv.Atoi accepts (no spaces, no underscores)
_DAYS_IN_MONTH = (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


class CronError(ValueError):
    """A schedule robfig/cron's standard parser refuses."""


def schedule_problem(schedule: str) -> str | None:
    """Why Karpenter cannot use `schedule` as a disruption budget schedule, or None: the CRD's pattern, then the
    cron grammar Karpenter parses it with (a schedule it cannot parse fails closed: the budget blocks all
    disruption of the pool)."""
    if not BUDGET_SCHEDULE.search(schedule):
        return (
            "the NodePool CRD refuses it; allowed: five fields (minute hour day-of-month month day-of-week, UTC) "
            "or one of " + ", ".join(CRON_DESCRIPTORS)
        )
    try:
        parsed = parse_schedule(schedule)
    except CronError as error:
        return f"Karpenter's cron parser refuses it: {error}"
    if isinstance(parsed, CronSchedule) and not matches_a_time(parsed):
        return "it matches no time (an empty field, or a day none of its months has), so the window never opens"
    return None


@dataclass(frozen=True)
class CronSchedule:
    """A parsed five-field schedule: the values of each field, and whether the day fields were `*`/`?` (robfig
    ORs the two day fields only when both are restricted, as cron does)."""

    minutes: frozenset[int]
    hours: frozenset[int]
    days_of_month: frozenset[int]
    months: frozenset[int]
    days_of_week: frozenset[int]
    any_day_of_month: bool
    any_day_of_week: bool


def parse_schedule(schedule: str) -> CronSchedule | str:
    """Parse as Karpenter does (`cron.ParseStandard("TZ=UTC " + schedule)`): a descriptor, or a CronSchedule.
    CronError says what is wrong. (`@every <duration>`, which robfig also takes, never passes the CRD pattern.)"""
    spec = schedule.strip()  # the parser trims what follows its TZ= prefix
    if not spec:
        raise CronError("empty schedule")
    if spec.startswith("@"):
        if spec not in CRON_DESCRIPTORS:
            raise CronError(f"unrecognized descriptor {spec!r}; allowed: {', '.join(CRON_DESCRIPTORS)}")
        return spec
    fields = spec.split()
    if len(fields) != len(_FIELDS):
        hint = " (Karpenter adds TZ=UTC itself; no seconds field)" if len(fields) == 6 else ""
        raise CronError(f"expected exactly 5 fields, found {len(fields)}{hint}")
    parsed = [_field(text, *spec_of) for text, spec_of in zip(fields, _FIELDS, strict=True)]
    (minutes, _), (hours, _), (days, any_day), (months, _), (weekdays, any_weekday) = parsed
    return CronSchedule(minutes, hours, days, months, weekdays, any_day, any_weekday)


def matches_a_time(cron: CronSchedule) -> bool:
    """Whether the schedule ever fires (robfig accepts `0 0 31 2 *`, which never does)."""
    if not (cron.minutes and cron.hours and cron.months):
        return False
    fits_a_month = any(day <= _DAYS_IN_MONTH[month - 1] for day in cron.days_of_month for month in cron.months)
    if cron.any_day_of_month or cron.any_day_of_week:  # both must match; every weekday occurs in every month
        return fits_a_month and bool(cron.days_of_week)
    return fits_a_month or bool(cron.days_of_week)


def _field(text: str, name: str, low: int, high: int, names: dict[str, int]) -> tuple[frozenset[int], bool]:
    """A comma-separated list of ranges (empty items are skipped, as strings.FieldsFunc does), and whether one
    of them was a plain `*` or `?`."""
    values: set[int] = set()
    star = False
    for expr in (part for part in text.split(",") if part):
        found, is_star = _range(expr, name, low, high, names)
        values |= found
        star = star or is_star
    return frozenset(values), star


def _range(expr: str, name: str, low: int, high: int, names: dict[str, int]) -> tuple[set[int], bool]:
    """`*`, `?`, `N`, `N-M`, each optionally `/step`; `N/step` means N to the field's end."""
    range_and_step = expr.split("/")
    low_and_high = range_and_step[0].split("-")
    star = low_and_high[0] in ("*", "?")
    if star:
        start, end = low, high  # robfig ignores anything after "*-"
    else:
        start = _number(low_and_high[0], names)
        if len(low_and_high) == 1:
            end = start
        elif len(low_and_high) == 2:
            end = _number(low_and_high[1], names)
        else:
            raise CronError(f"too many hyphens in {name} {expr!r}")
    if len(range_and_step) == 1:
        step = 1
    elif len(range_and_step) == 2:
        step = _number(range_and_step[1], {})
        if len(low_and_high) == 1:
            end = high
        star = star and step <= 1
    else:
        raise CronError(f"too many slashes in {name} {expr!r}")
    if start < low:
        raise CronError(f"{name} {expr!r} starts below {low}")
    if end > high:
        raise CronError(f"{name} {expr!r} ends above {high}" + (" (Sunday is 0 or sun)" if high == 6 else ""))
    if start > end:
        raise CronError(f"{name} {expr!r} starts after it ends")
    if step == 0:
        raise CronError(f"{name} {expr!r} has a zero step")
    return set(range(start, end + 1, step)), star


def _number(text: str, names: dict[str, int]) -> int:
    if text.lower() in names:
        return names[text.lower()]
    if not _GO_INT.fullmatch(text):
        allowed = f"a number or {', '.join(names)}" if names else "a number"
        raise CronError(f"{text!r} is not {allowed}")
    number = int(text)
    if number < 0:
        raise CronError(f"negative number {text!r}")
    return number
