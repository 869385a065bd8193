"""The pack's layout: one rule per module under rules/, found by the registry; rules import the model modules
beside them, never each other; every finding comes from rule.py's constructors."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

from policies.gpushare_policies import registry, rules
from policies.gpushare_policies.registry import RULES
from policies.gpushare_policies.rule import Rule

PACK = Path(registry.__file__).parent
RULE_FILES = sorted(path for path in (PACK / "rules").glob("*.py") if path.name != "__init__.py")


def _module(path: Path) -> object:
    return importlib.import_module(f"{rules.__name__}.{path.stem}")


@pytest.mark.parametrize("path", RULE_FILES, ids=lambda path: path.stem)
def test_each_rules_module_exports_one_rule_named_after_it(path):
    module = _module(path)
    exported = [value for value in vars(module).values() if isinstance(value, Rule)]
    assert isinstance(getattr(module, "RULE", None), Rule), f"{path.name} exports no RULE"
    assert exported == [module.RULE], f"{path.name} defines {len(exported)} rules"
    assert module.RULE.name.replace("-", "_") == path.stem
    assert module.RULE.check.__module__ == module.__name__  # its check lives in its own module


def test_registry_picks_up_every_rules_module_in_order():
    assert sorted(rule.name.replace("-", "_") for rule in RULES) == [path.stem for path in RULE_FILES]
    orders = [rule.order for rule in RULES]
    assert orders == sorted(orders) and len(set(orders)) == len(orders)


def _imported(path: Path) -> list[tuple[int, str]]:
    """(relative level, dotted name) of every module a file imports, `from . import x` counting as `.x`."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [(0, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            found.append((node.level, base))
            found += [(node.level, f"{base}.{alias.name}".lstrip(".")) for alias in node.names]
    return found


@pytest.mark.parametrize("path", RULE_FILES, ids=lambda path: path.stem)
def test_rules_never_import_each_other(path):
    for level, name in _imported(path):
        sibling = level == 1 and name != ""  # `from .x import ...` inside rules/
        via_package = (level == 2 and name.split(".")[0] == "rules") or "gpushare_policies.rules" in name
        assert not (sibling or via_package), f"{path.name} imports {'.' * level}{name}"


def test_model_modules_never_import_rules():
    for path in sorted(PACK.glob("*.py")):
        if path.name == "registry.py":  # discovers them
            continue
        for level, name in _imported(path):
            assert not (level == 1 and name.split(".")[0] == "rules"), f"{path.name} imports .{name}"


# The gpushare modules the pack may import: facts about charts, names, the catalog, capacity, EKS support windows,
# Karpenter's API and what each exporter exports, which the offline cluster checks against the real upstream code
# where it can. Never config, the loader or a renderer: the pack judges those.
FACT_MODULES = frozenset(
    {
        "names",
        "catalog",
        "compat",
        "images",
        "errors",
        "wording",  # how errors tells a validation error, below errors
        "files",
        "hami",
        "capacity",
        "quota",  # the one table of team quota resources, below capacity
        "pins",
        "eks",
        "metrics",
        "karpenter_api",
        "tiers",
        "alertmanager",
        "versions",
    }
)


@pytest.mark.parametrize(
    "path",
    [PACK.parent / "__main__.py", *sorted(PACK.rglob("*.py"))],
    ids=lambda path: str(path.relative_to(PACK.parent)),
)
def test_the_pack_imports_only_gpushare_facts(path):
    for level, name in _imported(path):
        parts = name.split(".")
        if level == 0 and parts[0] == "gpushare" and len(parts) > 1:
            assert parts[1] in FACT_MODULES, f"{path.name} imports {name}, which is no fact module"


def test_importing_the_pack_loads_only_gpushare_facts():
    """What the modules import at run time, indirect imports included (the static check above sees only the pack's
    own lines); in a fresh interpreter, as this one holds whatever other tests imported."""
    loaded = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, policies.gpushare_policies.pulumi_pack, policies.gpushare_policies.registry; "
            "print(*sorted(sys.modules))",
        ],
        cwd=PACK.parent.parent,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    gpushare = {name.split(".")[1] for name in loaded if name.startswith("gpushare.")}
    assert gpushare and gpushare <= FACT_MODULES, f"the pack loads {sorted(gpushare - FACT_MODULES)}"


def test_findings_are_built_only_by_the_constructors():
    for path in sorted(PACK.rglob("*.py")):
        if path.name == "rule.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                assert node.func.id != "Finding", f"{path.relative_to(PACK)}:{node.lineno} builds a Finding directly"


@pytest.fixture
def extra_rules_module(tmp_path, monkeypatch):
    """Write a module into an extra directory of the rules package; unloaded afterwards."""
    monkeypatch.setattr(rules, "__path__", [*rules.__path__, str(tmp_path)])
    written: list[str] = []

    def write(name: str, text: str) -> None:
        (tmp_path / f"{name}.py").write_text(text)
        written.append(f"{rules.__name__}.{name}")

    yield write
    for module in written:
        sys.modules.pop(module, None)


def test_discovery_refuses_a_rules_module_without_a_rule(extra_rules_module):
    extra_rules_module("forgot_its_rule", "CHECK = None\n")
    with pytest.raises(TypeError, match="forgot_its_rule: exports no RULE"):
        registry.discover()


def test_discovery_refuses_two_rules_at_one_position(extra_rules_module):
    first = RULES[0]
    extra_rules_module(
        "same_place",
        f"from {Rule.__module__} import Rule\n"
        f"from {first.check.__module__} import RULE as _first\n"
        "RULE = Rule(name='same-place', order=_first.order, description='d', why='w', remediation='r', "
        "enforcement='advisory', severity='low', check=_first.check)\n",
    )
    with pytest.raises(ValueError, match="two rules share an order"):
        registry.discover()
