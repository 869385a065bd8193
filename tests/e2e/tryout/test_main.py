"""make try's command line: the team, the stack and the manifests are judged before the rig is built."""

from __future__ import annotations

import pytest

from e2e.run import parse_args
from e2e.tryout.main import checked
from tests.conftest import ROOT


def test_try_and_team_go_together_and_alone():
    assert parse_args(["--try", "examples/try", "--team", "ml-research"]).stack == "dev"
    for argv in (["--try", "x"], ["--team", "ml-research"], ["--try", "x", "--team", "t", "--scenario", "quota"]):
        with pytest.raises(SystemExit):
            parse_args(argv)


def test_a_team_or_stack_the_rig_does_not_run_is_bad_input():
    manifests, problems = checked(ROOT / "examples" / "try", "nobody", "dev")
    assert manifests is None
    assert problems == ["--team nobody: not a team of the dev stack; its teams: ml-research, inference"]
    assert checked(ROOT / "examples" / "try", "ml-research", "existing")[1] == [
        "--stack existing: the offline cluster runs dev or prod"
    ]
    manifests, problems = checked(ROOT / "examples" / "try", "ml-research", "dev")
    assert problems == [] and len(manifests.workloads) == 12
