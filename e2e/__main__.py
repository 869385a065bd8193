"""`make e2e`: build the rig's binaries (network: the Go module proxy), then run the scenarios offline.

    python -m e2e [--scenario NAME ...]

The build runs here; the cluster and scenarios run in `e2e.run` inside a private network namespace
(`unshare --net`), so nothing the rig starts is reachable from outside this machine's loopback.
Exit 0: every scenario passed; 1: a scenario failed; 2: the rig could not be built or started.
"""

from __future__ import annotations

import os
import shutil
import sys

from e2e.build import build
from e2e.errors import RigError
from e2e.run import REPORT_DIR, parse_args
from e2e.simulate import load_workload
from gpushare.errors import UserError


def main(argv: list[str]) -> int:
    args = parse_args(argv)  # reject bad arguments (and a bad workload file) before a long build
    if args.simulate is not None:
        try:
            load_workload(args.simulate)
        except UserError as error:
            for line in str(error).splitlines():
                print(f"e2e: {line}", file=sys.stderr)
            return 2
    if shutil.which("unshare") is None:
        print("e2e: needs unshare (util-linux) to run the rig in its own network namespace", file=sys.stderr)
        return 2
    print("e2e: building the rig's binaries (cached after the first run)", file=sys.stderr, flush=True)
    try:
        bin_dir = build(REPORT_DIR / "build.log")
    except RigError as error:
        print(f"e2e: {error}", file=sys.stderr)
        return 2
    namespace = ["unshare", "--net", "--kill-child"]
    if os.geteuid() != 0:
        namespace.append("--map-root-user")
    command = [*namespace, sys.executable, "-m", "e2e.run", "--bin-dir", str(bin_dir), *argv]
    os.execvp(command[0], command)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
