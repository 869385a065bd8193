"""Label selectors are evaluated as the sets they select: two spellings of one set agree, a wider set does not."""

from __future__ import annotations

import pytest

from policies.gpushare_policies.selectors import names_allowed, selects, selects_only_namespace

NAME = "kubernetes.io/metadata.name"


def _expr(key, operator, *values):
    return {"key": key, "operator": operator, **({"values": list(values)} if values else {})}


@pytest.mark.parametrize(
    "selector",
    [
        {"matchLabels": {NAME: "team-a"}},
        {"matchExpressions": [_expr(NAME, "In", "team-a")]},
        {"matchExpressions": [_expr(NAME, "In", "team-a", "team-b"), _expr(NAME, "NotIn", "team-b")]},
        {"matchLabels": {NAME: "team-a"}, "matchExpressions": [_expr("gpushare.io/team", "Exists")]},
    ],
)
def test_every_spelling_of_one_namespace_selects_only_it(selector):
    assert selects_only_namespace(selector, "team-a", {"gpushare.io/team": "team-a"})


@pytest.mark.parametrize(
    "selector",
    [
        None,  # admission: a missing namespaceSelector matches every namespace
        {},
        {"matchLabels": {"gpushare.io/team": "team-a"}},  # any namespace may carry the label
        {"matchExpressions": [_expr(NAME, "In", "team-a", "team-b")]},
        {"matchExpressions": [_expr(NAME, "NotIn", "team-b")]},
        {"matchLabels": {NAME: "team-a"}, "matchExpressions": [_expr("tier", "In", "gold")]},  # selects nothing
        {"matchExpressions": [_expr(NAME, "Gt", "1")]},  # not a label-selector operator
    ],
)
def test_selectors_wider_or_narrower_than_the_namespace_do_not(selector):
    assert not selects_only_namespace(selector, "team-a", {"gpushare.io/team": "team-a"})


def test_names_allowed_intersects_in_and_removes_not_in():
    selector = {
        "matchLabels": {NAME: "a"},
        "matchExpressions": [_expr(NAME, "In", "a", "b"), _expr(NAME, "NotIn", "c")],
    }
    assert names_allowed(selector) == {"a"}
    assert names_allowed({"matchExpressions": [_expr("x", "Exists")]}) is None


def test_an_empty_selector_selects_everything_and_does_not_exist_excludes():
    assert selects({}, {"any": "label"})
    assert not selects({"matchExpressions": [_expr("any", "DoesNotExist")]}, {"any": "label"})
