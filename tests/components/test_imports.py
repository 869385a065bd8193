"""Components receive rendered objects: the GPU capacity, tenancy, headroom and existing-cluster components import
neither the config nor a renderer, so what they declare is what __main__.py hands them."""

from __future__ import annotations

import ast

import pytest

from tests.conftest import ROOT


@pytest.mark.parametrize("component", ["capacity", "tenancy", "headroom", "existing"])
def test_component_imports_neither_config_nor_renderer(component):
    tree = ast.parse((ROOT / "components" / f"{component}.py").read_text())
    imported = [node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)]
    imported += [alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names]
    assert not [
        name
        for name in imported
        if name.startswith(("gpushare.config", "gpushare.loader", "gpushare.checks", "gpushare.render"))
    ]
