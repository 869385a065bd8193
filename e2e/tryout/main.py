"""`make try PODS=... TEAM=... [STACK=...]`: check the manifests and the team before the rig is built, then (inside
the rig's network namespace) place them and write build/e2e/try.json, try.md and the terminal table."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path
from types import FrameType

from e2e.cluster.api import ApiError
from e2e.cluster.errors import RigError
from e2e.cluster.kubectl import KubectlError
from e2e.cluster.start import say
from e2e.tryout import report
from e2e.tryout.manifests import Manifests, read_manifests
from e2e.tryout.reasons import team_view
from e2e.tryout.run import run_try
from gpushare.catalog import load_catalog
from gpushare.config import StackConfig
from gpushare.eks import FIXED_PLAN_DAY
from gpushare.errors import UserError
from gpushare.loader import load_stack_config
from gpushare.paths import PROJECT_ROOT
from gpushare.stackfile import read_stack_file

STACKS = ("dev", "prod")


def stack_config(stack: str) -> StackConfig:
    return load_stack_config(read_stack_file(PROJECT_ROOT / f"Pulumi.{stack}.yaml"), today=FIXED_PLAN_DAY)


def checked(path: Path, team: str, stack: str) -> tuple[Manifests | None, list[str]]:
    """The manifests, or every problem with them and with the team (one line each), before any cluster starts."""
    problems = []
    if stack not in STACKS:
        return None, [f"--stack {stack}: the offline cluster runs {' or '.join(STACKS)}"]
    teams = [t.name for t in stack_config(stack).teams]
    if team not in teams:
        problems.append(f"--team {team}: not a team of the {stack} stack; its teams: {', '.join(teams)}")
    try:
        manifests = read_manifests(path, team)
    except UserError as error:
        return None, [*problems, *str(error).splitlines()]
    return (None if problems else manifests), problems


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def main(path: Path, team: str, stack: str, bin_dir: Path, work: Path, report_dir: Path, commit: str) -> int:
    manifests, problems = checked(path, team, stack)
    if manifests is None:
        for line in problems:
            say(line)
        return 2
    view = team_view(stack_config(stack), load_catalog(), team)
    signal.signal(signal.SIGTERM, _interrupt)
    started = time.monotonic()
    try:
        seen, end, startup_s = run_try(bin_dir, work, manifests, view, stack, report_dir / "logs")
    except KeyboardInterrupt:
        say("interrupted; the rig is stopped")
        return 130
    except (RigError, KubectlError, ApiError) as error:
        say(str(error))
        return 2
    identity = {
        "manifests": str(path),
        "stack": stack,
        "commit": commit,
        "seconds_startup": round(startup_s, 1),
        "seconds_total": round(time.monotonic() - started, 1),
    }
    document = report.document(manifests, seen, end, view, load_catalog(), identity)
    report_dir.mkdir(parents=True, exist_ok=True)
    (report_dir / "try.json").write_text(json.dumps(document, indent=2, sort_keys=True) + "\n")
    (report_dir / "try.md").write_text(report.markdown(document))
    print(report.terminal(document))
    return 0
