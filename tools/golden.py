"""Rewrite the golden files: rendered manifests and Helm releases of every stack file, for review in diffs.

Run `make golden` after a deliberate change to a renderer, the catalog or a stack file, then read the diff.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from gpushare.config import load_stack_config
from gpushare.render.monitoring import monitoring_objects, monitoring_releases
from gpushare.render.stack import helm_releases, kubernetes_objects
from gpushare.render.yamlio import dump, dump_all

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "golden"
STACKS = ("dev", "prod")


def render_golden(stack: str) -> dict[str, str]:
    """File name -> content for one stack."""
    raw = yaml.safe_load((ROOT / f"Pulumi.{stack}.yaml").read_text())["config"]
    config = load_stack_config(raw)
    files = {
        "manifests.yaml": dump_all(kubernetes_objects(config)),
        "helm.yaml": dump([release.as_dict() for release in helm_releases(config)]),
    }
    if config.monitoring.enabled:
        releases = [release.as_dict() for release in monitoring_releases(config)]
        files["monitoring.yaml"] = dump_all([*releases, *monitoring_objects(config)])
    return files


def main() -> None:
    for stack in STACKS:
        folder = GOLDEN / stack
        folder.mkdir(parents=True, exist_ok=True)
        for name, content in render_golden(stack).items():
            (folder / name).write_text(content)
            print(f"wrote {(folder / name).relative_to(ROOT)}")


if __name__ == "__main__":
    main()
