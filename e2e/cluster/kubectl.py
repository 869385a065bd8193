"""kubectl against the rig, for what it does best: server-side apply and delete of YAML streams."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import yaml

FIELD_MANAGER = "gpushare"


class KubectlError(Exception):
    """kubectl exited non-zero; the message is its stderr."""


class Kubectl:
    APPLY = ("apply", "--server-side", f"--field-manager={FIELD_MANAGER}", "--force-conflicts", "-f", "-")

    def __init__(self, binary: Path, kubeconfig: Path) -> None:
        self.base = [str(binary), f"--kubeconfig={kubeconfig}"]

    def run(self, *args: str, objects: list[dict[str, Any]] | None = None, stream: str | None = None) -> str:
        if objects is not None:
            stream = yaml.safe_dump_all(objects, sort_keys=True)
        result = subprocess.run([*self.base, *args], input=stream, capture_output=True, text=True)
        if result.returncode != 0:
            raise KubectlError(result.stderr.strip() or result.stdout.strip())
        return result.stdout

    def apply(self, objects: list[dict[str, Any]]) -> str:
        """Server-side apply, as `pulumi up` with server-side apply (the pulumi-kubernetes default) does."""
        return self.run(*self.APPLY, objects=objects)

    def apply_stream(self, stream: str) -> str:
        return self.run(*self.APPLY, stream=stream)

    def get(self, objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
        listed = json.loads(self.run("get", "-o", "json", "-f", "-", objects=objects))
        return listed.get("items", [listed])

    def versions(self, objects: list[dict[str, Any]]) -> dict[str, str]:
        """Per object what a change of ours would bump: `generation` where the kind has one (so status
        written by controllers, e.g. admission policy type checking, does not count), else resourceVersion."""
        return {
            f"{item['kind']}/{item['metadata'].get('namespace', '')}/{item['metadata']['name']}": str(
                item["metadata"].get("generation", item["metadata"]["resourceVersion"])
            )
            for item in self.get(objects)
        }

    def delete(self, objects: list[dict[str, Any]]) -> None:
        self.run("delete", "--ignore-not-found", "--wait=true", "--timeout=120s", "-f", "-", objects=objects)
