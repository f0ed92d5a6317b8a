"""The engine imports only the standard library and itself (never Django)."""

import ast
import sys
from pathlib import Path

import scheduler.engine
import scheduler.whatif.sim

ENGINE_DIR = Path(scheduler.engine.__file__).parent
# The what-if replay runs the engine offline: it may import the engine, never Django.
WHATIF_SIM_DIR = Path(scheduler.whatif.sim.__file__).parent


def _imports(path: Path):
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: inside the package by construction
                continue
            yield node.module or ""


def test_engine_modules_import_only_stdlib_and_engine():
    modules = sorted(ENGINE_DIR.rglob("*.py"))
    assert len(modules) > 5
    offenders = []
    for path in modules:
        for name in _imports(path):
            top = name.split(".")[0]
            if name.startswith("scheduler.engine") or top in sys.stdlib_module_names:
                if top == "django":  # pragma: no cover - stdlib never has it, be explicit
                    offenders.append((path.name, name))
                continue
            offenders.append((path.name, name))
    assert offenders == []


def test_whatif_replay_modules_import_only_stdlib_engine_and_themselves():
    modules = sorted(WHATIF_SIM_DIR.rglob("*.py"))
    assert len(modules) >= 4
    offenders = [(path.name, name) for path in modules for name in _imports(path)
                 if not (name.startswith(("scheduler.engine", "scheduler.whatif.sim"))
                         or name.split(".")[0] in sys.stdlib_module_names)]
    assert offenders == []


def test_the_check_would_catch_django(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("from django.db import models\nimport numpy\n")
    assert list(_imports(bad)) == ["django.db", "numpy"]


def test_engine_keeps_no_function_caches():
    """No process-wide caches (CONVENTIONS): a cycle's memo lives in its own objects (reasons.Reasons), so no
    `functools.lru_cache` / `functools.cache` in the engine, not even on a per-object wrapper."""
    caches = {"lru_cache", "cache", "cached_property"}
    offenders = []
    for path in sorted(ENGINE_DIR.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.ImportFrom) and node.module == "functools":
                offenders += [(path.name, node.lineno, a.name) for a in node.names if a.name in caches]
            elif isinstance(node, ast.Attribute) and node.attr in caches and isinstance(node.value, ast.Name) \
                    and node.value.id == "functools":
                offenders.append((path.name, node.lineno, node.attr))
    assert offenders == []
