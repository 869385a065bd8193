"""The project's layout: production code (everything outside tests/) never imports the tests, which need pytest and
read the stack files as they load; the arrow goes from tests to production only."""

from __future__ import annotations

import ast
from pathlib import Path

from gpushare.paths import PROJECT_ROOT

# Not production code: the tests themselves, the virtualenv, what the tools write.
NOT_PRODUCTION = frozenset({"tests", ".venv", "build"})


def production_sources() -> list[Path]:
    """Every Python file of the project outside tests/, hidden folders left out."""
    sources = []
    for entry in sorted(PROJECT_ROOT.iterdir()):
        if entry.name in NOT_PRODUCTION or entry.name.startswith("."):
            continue
        sources += sorted(entry.rglob("*.py")) if entry.is_dir() else [entry] if entry.suffix == ".py" else []
    return sources


def imports_of_tests(source: str) -> list[str]:
    """The import lines of `source` that reach the tests package (absolute imports only: a relative import cannot
    leave its own package, and no production package lives under tests/)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        found += [f"line {node.lineno}: {name}" for name in names if name.split(".")[0] == "tests"]
    return found


def test_the_check_sees_every_way_to_import_the_tests():
    source = "import tests\nimport os, tests.conftest\nfrom tests.conftest import ROOT\nfrom tests import conftest\n"
    assert imports_of_tests(source) == [
        "line 1: tests",
        "line 2: tests.conftest",
        "line 3: tests.conftest",
        "line 4: tests",
    ]
    assert imports_of_tests("import testsuite\nfrom e2e.suites import tests\nfrom .tests import x\n") == []


def test_production_code_never_imports_the_tests():
    sources = production_sources()
    folders = {path.relative_to(PROJECT_ROOT).parts[0] for path in sources}
    assert {"__main__.py", "gpushare", "components", "policies", "tools", "e2e"} <= folders
    offenders = {
        str(path.relative_to(PROJECT_ROOT)): found for path in sources if (found := imports_of_tests(path.read_text()))
    }
    assert offenders == {}
