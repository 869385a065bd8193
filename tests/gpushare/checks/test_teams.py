"""gpushare/checks/teams.py: the teams' cross-key problems, each refused on one line naming the key."""

from __future__ import annotations

import pytest

from tests.gpushare.mutations import assert_one_line_names_the_key, both, set_key

BAD_TEAMS = [
    (
        "pool no team uses",
        both(set_key("gpushare:teams.0.pools", ["g5-shared"]), set_key("gpushare:teams.1.pools", ["g5-shared"])),
        "gpushare:pools[1].name: no team lists pool 'g4dn-shared'",
    ),
    (
        "team names unknown pool",
        set_key("gpushare:teams.0.pools.1", "a100-pool"),
        "gpushare:teams[0].pools[1]: unknown pool 'a100-pool'; allowed: g5-shared, g4dn-shared",
    ),
    (
        "duplicate team",
        set_key("gpushare:teams.1.name", "ml-research"),
        "gpushare:teams[1].name: duplicate name 'ml-research'",
    ),
    (
        "a scheduler policy on a team no HAMi pool serves",
        both(
            set_key("gpushare:teams.1.pools", ["g6-timeslice"]),
            set_key("gpushare:teams.1.quota", {"gpus": 0, "sharedGpus": 8}),
        ),
        "gpushare:teams[1].schedulerPolicy: is set but none of the team's pools (g6-timeslice) has sharing hami: only "
        "HAMi reads the policy",
    ),
]


@pytest.mark.parametrize(("mutate", "expected"), [c[1:] for c in BAD_TEAMS], ids=[c[0] for c in BAD_TEAMS])
def test_bad_teams_names_the_key(mutate, expected):
    assert_one_line_names_the_key(mutate, expected)
