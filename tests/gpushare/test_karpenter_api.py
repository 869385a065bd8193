"""Karpenter's API facts: budget schedules are judged as robfig/cron v3's standard parser (behind Karpenter's
`TZ=UTC ` prefix) judges them, the chart tag form and the EC2NodeClass tag restrictions."""

from __future__ import annotations

import pytest

from gpushare import karpenter_api
from gpushare.karpenter_api import CronSchedule, parse_schedule, schedule_problem

WEEKDAYS = frozenset(range(1, 6))


@pytest.mark.parametrize(
    ("schedule", "field", "values"),
    [
        ("0 15 * * mon-fri", "days_of_week", WEEKDAYS),
        ("0 15 * * MON-Fri", "days_of_week", WEEKDAYS),  # names in any case
        ("0 15 * * 1-5", "days_of_week", WEEKDAYS),
        ("0 15 * * sun", "days_of_week", frozenset({0})),  # Sunday is 0
        ("0 15 * * sun,sat", "days_of_week", frozenset({0, 6})),
        ("*/15 * * * *", "minutes", frozenset({0, 15, 30, 45})),
        ("5/15 * * * *", "minutes", frozenset({5, 20, 35, 50})),  # N/step runs to the field's end
        ("10-20/5 * * * *", "minutes", frozenset({10, 15, 20})),
        ("0 9-17/4 * * *", "hours", frozenset({9, 13, 17})),
        ("0 0 1,,15 * *", "days_of_month", frozenset({1, 15})),  # empty list items are skipped
        ("0 0 * jan-mar *", "months", frozenset({1, 2, 3})),
        ("0 0 * 12 *", "months", frozenset({12})),
        ("+5 * * * *", "minutes", frozenset({5})),  # Go's Atoi takes a sign
        ("? ? ? ? ?", "hours", frozenset(range(24))),
        ("0\t15  * * *", "hours", frozenset({15})),  # any whitespace separates fields
    ],
)
def test_schedules_parse_as_robfig_cron_does(schedule, field, values):
    parsed = parse_schedule(schedule)
    assert isinstance(parsed, CronSchedule)
    assert getattr(parsed, field) == values
    assert schedule_problem(schedule) is None


@pytest.mark.parametrize("descriptor", karpenter_api.CRON_DESCRIPTORS)
def test_every_descriptor_karpenter_takes_is_accepted(descriptor):
    assert schedule_problem(descriptor) is None


@pytest.mark.parametrize(
    ("schedule", "fragment"),
    [
        ("0 15 * * 7", "day of week '7' ends above 6 (Sunday is 0 or sun)"),
        ("0 15 * * mon-fry", "'fry' is not a number or sun, mon"),
        ("0 15 * * monday", "'monday' is not a number or sun"),
        ("0 15 * * fri-mon", "day of week 'fri-mon' starts after it ends"),
        ("0 24 * * *", "hour '24' ends above 23"),
        ("60 * * * *", "minute '60' ends above 59"),
        ("0 0 0 * *", "day of month '0' starts below 1"),
        ("0 0 * 13 *", "month '13' ends above 12"),
        ("0 0 * * jan", "'jan' is not a number or sun"),  # month names only in the month field
        ("*/0 * * * *", "minute '*/0' has a zero step"),
        ("1-2-3 * * * *", "too many hyphens"),
        ("1/2/3 * * * *", "too many slashes"),
        ("-5 * * * *", "'' is not a number"),
        ("1_0 * * * *", "'1_0' is not a number"),  # Python's int() would take it, Go's Atoi does not
        ("L * * * *", "'L' is not a number"),
        ("0 0 0 15 * * *", "expected exactly 5 fields, found 7"),
        ("0 0 15 * * *", "expected exactly 5 fields, found 6 (Karpenter adds TZ=UTC itself; no seconds field)"),
        ("TZ=Europe/Berlin 0 15 * * *", "found 6 (Karpenter adds TZ=UTC itself"),
        ("@daily 1", "unrecognized descriptor '@daily 1'"),  # the CRD pattern admits it, the parser does not
        ("@every 1h", "the NodePool CRD refuses it"),
        ("@DAILY", "the NodePool CRD refuses it"),
        ("daily", "the NodePool CRD refuses it"),
        ("0 0 31 2 *", "matches no time"),
        ("0 0 30,31 feb *", "matches no time"),
        (", * * * *", "matches no time"),
    ],
)
def test_schedules_karpenter_cannot_use_are_refused(schedule, fragment):
    problem = schedule_problem(schedule)
    assert problem is not None and fragment in problem, problem


def test_day_fields_are_ored_only_when_both_are_restricted():
    """cron's rule, robfig's dayMatches: Feb 31 or any Monday fires; Feb 31 on any weekday never does."""
    assert schedule_problem("0 0 31 2 mon") is None
    assert "matches no time" in str(schedule_problem("0 0 31 2 *"))
    assert "matches no time" in str(schedule_problem("0 0 31 2 ?"))


@pytest.mark.parametrize(
    ("version", "fragment"),
    [("v1.15.1", "without a leading v; write 1.15.1"), ("1.15", "not a chart tag"), ("latest", "not a chart tag")],
)
def test_karpenter_chart_tags(version, fragment):
    assert karpenter_api.chart_tag_problem("1.15.1") is None
    assert fragment in str(karpenter_api.chart_tag_problem(version))


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("", "x"),
        ("team", ""),
        *((tag, "x") for tag in karpenter_api.RESTRICTED_NODE_CLASS_TAGS),
        ("kubernetes.io/cluster/gpushare-dev", "owned"),
        ("kubernetes.io/clusterfoo", "x"),
    ],
)
def test_tags_the_ec2nodeclass_crd_refuses(key, value):
    assert karpenter_api.node_class_tag_problem("team", "ml") is None
    assert karpenter_api.node_class_tag_problem(key, value) is not None
