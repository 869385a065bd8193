"""Changes that break `hami-webhook-fails-open`: each is caught, and every message says the fix."""

from __future__ import annotations

import pytest

from tests.policies.helpers import broken, messages
from tests.policies.rules.breaking import caught, delete_at, release, set_at

WEBHOOK = ["values", "scheduler", "admissionWebhook"]

# (policy, change, every fragment one message must contain), on the dev plan
CASES = {
    "fails closed": (
        "hami-webhook-fails-open",
        lambda r: set_at(release(r, "hami"), [*WEBHOOK, "failurePolicy"], "Fail"),
        [
            'Release hami: values.scheduler.admissionWebhook.failurePolicy is "Fail"',
            "kube-system",
            'set it to "Ignore"',
        ],
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_one_broken_field_is_caught(plans, case):
    caught(plans["dev"], case, CASES[case])


def test_the_chart_default_fails_open(plans):
    """Without gpushare's explicit value the chart's own default (Ignore) holds."""
    resources = broken(plans["dev"], lambda r: delete_at(release(r, "hami"), [*WEBHOOK, "failurePolicy"]))
    assert messages(resources, "hami-webhook-fails-open") == []
