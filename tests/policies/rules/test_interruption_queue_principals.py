"""Changes that break `interruption-queue-principals`: each is caught, and every message says the fix."""

from __future__ import annotations

import json

import pytest

from tests.policies.rules.breaking import caught


def principal(value, key="Principal"):
    def apply(resources):
        [policy] = [r["inputs"] for r in resources if r["type"] == "aws:sqs/queuePolicy:QueuePolicy"]
        document = json.loads(policy["policy"])
        document["Statement"][0].pop("Principal")
        document["Statement"][0][key] = value
        policy["policy"] = json.dumps(document)

    return apply


SUBJECT = "aws:sqs/queuePolicy:QueuePolicy gpushare-dev-karpenter: policy Statement[0] (EventBridgeWrite).Principal"

# (policy, change, every fragment one message must contain), on the dev plan
CASES = {
    "anyone may send": (
        "interruption-queue-principals",
        principal("*"),
        [f'{SUBJECT} is "*"', "allow only the services events.amazonaws.com and sqs.amazonaws.com"],
    ),
    "an account may send": (
        "interruption-queue-principals",
        principal({"Service": "events.amazonaws.com", "AWS": "arn:aws:iam::111122223333:root"}),
        [f'{SUBJECT} is "AWS:arn:aws:iam::111122223333:root"', "drained"],
    ),
    "everyone but a listed principal may send": (
        "interruption-queue-principals",
        lambda r: principal({"Service": "events.amazonaws.com"}, key="NotPrincipal")(r),
        [f'{SUBJECT} is "NotPrincipal (everyone it does not list)"'],
    ),
    "another service may send": (
        "interruption-queue-principals",
        principal({"Service": ["events.amazonaws.com", "sns.amazonaws.com"]}),
        [f'{SUBJECT} is "sns.amazonaws.com"'],
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_one_broken_field_is_caught(plans, case):
    caught(plans["dev"], case, CASES[case])
