"""Rewrite the golden files: the manifests/ and helm/ folders `make plan` writes for each shipped stack
(dev, prod, and existing for the existing-cluster mode).

They come from the offline plan the program really produces (the stack run under Pulumi's mocks), so a
change anywhere between the stack file and a component shows up here. Run `make golden` after a deliberate
change, then review the diff.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from tests.conftest import PLAN_DATE
from tools.plan import build_plan, read_stack_file, write_plan

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "golden"
STACKS = ("dev", "prod", "existing")
PLAN_FOLDERS = ("manifests", "helm")


def plan_files(stack: str) -> dict[str, str]:
    """Relative path -> content of every file `make plan` writes under manifests/ and helm/ for `stack`, planned
    for the tests' fixed day so the files never depend on when they were written."""
    _, plan = build_plan(read_stack_file(ROOT / f"Pulumi.{stack}.yaml"), stack, PLAN_DATE)
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch) / stack
        write_plan(plan, folder)
        return {
            path.relative_to(folder).as_posix(): path.read_text()
            for sub in PLAN_FOLDERS
            for path in sorted((folder / sub).glob("*.yaml"))
        }


def golden_files(stack: str) -> dict[str, str]:
    """Relative path -> content of the reviewed golden files of `stack`."""
    folder = GOLDEN / stack
    return {path.relative_to(folder).as_posix(): path.read_text() for path in sorted(folder.rglob("*.yaml"))}


def main() -> None:
    for stack in STACKS:
        folder = GOLDEN / stack
        files = plan_files(stack)
        if folder.exists():
            shutil.rmtree(folder)
        for name, content in files.items():
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            (folder / name).write_text(content)
        print(f"wrote {len(files)} files under {folder.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
