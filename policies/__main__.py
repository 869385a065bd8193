"""gpushare-policies: started by `pulumi preview --policy-pack policies`; prints its port and serves gRPC."""

import sys
from pathlib import Path

# The rules import the project's own model (gpushare/), which lives beside this folder.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gpushare_policies.pulumi_pack import policies
from gpushare_policies.registry import PACK_NAME
from pulumi_policy import EnforcementLevel, PolicyPack

PolicyPack(name=PACK_NAME, policies=policies(), enforcement_level=EnforcementLevel.MANDATORY)
