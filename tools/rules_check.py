"""Check the monitoring rules and dashboard with Prometheus's own tools (`make rules-test`).

Renders the prod stack's PrometheusRule and dashboard, then:
- `promtool check rules` on the rule groups;
- `promtool test rules` with gpushare/monitoring/rules-test.yaml (series that make each alert fire and stay
  silent, and the HAMi-WebUI's own queries returning data from the series its backend exports);
- promqlnames (Prometheus's PromQL parser) on every alert and panel expression: each must parse and select
  only metrics listed in gpushare/monitoring/metrics.yaml.
Needs Go: monitoring/tools/build-promtool.sh builds both binaries once. Without Go: one line, exit 2.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from gpushare import metrics
from gpushare.eks import FIXED_PLAN_DAY
from gpushare.errors import EXIT_BAD_INPUT
from gpushare.loader import load_stack_config
from gpushare.paths import PROJECT_ROOT
from gpushare.render import alerts
from gpushare.render.yamlio import dump
from gpushare.stackfile import read_stack_file

STACK_FILE = PROJECT_ROOT / "Pulumi.prod.yaml"
OUT = PROJECT_ROOT / "build" / "monitoring"
RULES_FILE = "gpushare-gpu.rules.yaml"


def build_tools() -> Path:
    result = subprocess.run(
        [PROJECT_ROOT / "monitoring" / "tools" / "build-promtool.sh"], capture_output=True, text=True
    )
    if result.returncode != 0:
        sys.stderr.write(result.stderr)
        sys.exit(result.returncode)
    return Path(result.stdout.strip())


def main() -> int:
    config = load_stack_config(read_stack_file(STACK_FILE), today=FIXED_PLAN_DAY)
    if not config.monitoring.enabled:
        print(f"{STACK_FILE.name}: gpushare:monitoring is not enabled; nothing to test", file=sys.stderr)
        return EXIT_BAD_INPUT
    bin_dir = build_tools()
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / RULES_FILE).write_text(dump({"groups": alerts.rule_groups(config)}))
    shutil.copy(alerts.RULES_TEST_PATH, OUT / "rules-test.yaml")
    promtool = str(bin_dir / "promtool")
    steps = [
        ([promtool, "check", "rules", RULES_FILE], None),
        ([promtool, "test", "rules", "rules-test.yaml"], None),
        (
            [str(bin_dir / "promqlnames")],
            json.dumps(
                {
                    "metrics": sorted(metrics.known_metrics()),
                    "expressions": [list(item) for item in alerts.all_expressions(config)],
                }
            ),
        ),
    ]
    for command, stdin in steps:
        print("+", " ".join(Path(command[0]).name if i == 0 else c for i, c in enumerate(command)), flush=True)
        if subprocess.run(command, cwd=OUT, input=stdin, text=True).returncode != 0:
            return 1
    print(f"rules-test: {len(list(alerts.all_expressions(config)))} expressions parse and use known metrics")
    return 0


if __name__ == "__main__":
    sys.exit(main())
