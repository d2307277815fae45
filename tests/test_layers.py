"""The house in layers (docs/architecture.md): imports only go down, and never in a circle.

Every import of every product module counts, at the top or inside a function (a
late import is still a dependency). Run alone with:

    .venv/bin/python -m pytest tests/test_layers.py
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Bottom to top. A package may import its own modules and those of packages on
# lower rows; packages on one row do not import each other.
LAYERS: list[tuple[str, ...]] = [
    ("core",),
    ("presence", "accounts"),
    ("games",),
    ("competitions",),
    ("archive",),
    ("moderation",),
    ("webhooks",),
    ("live", "embed"),
    ("leaderboard_site",),
]
RANK = {package: rank for rank, row in enumerate(LAYERS) for package in row}


def _modules() -> Iterator[tuple[str, Path]]:
    for package in RANK:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            yield ".".join(parts[:-1] if parts[-1] == "__init__" else parts), path


def _imports(name: str, path: Path) -> set[str]:
    """The product modules a module imports (absolute names)."""
    package_parts = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = ".".join(package_parts[: len(package_parts) - node.level + 1])
                target = f"{base}.{node.module}" if node.module else base
            else:
                target = node.module or ""
            found.add(target)
            # "from pkg import module" names a module too.
            found.update(f"{target}.{alias.name}" for alias in node.names)
    return {module for module in found if module.split(".")[0] in RANK}


def _graph() -> dict[str, set[str]]:
    modules = dict(_modules())
    known = set(modules)
    return {name: {m for m in _imports(name, path) if m in known and m != name} for name, path in modules.items()}


def test_it_only_imports_down_the_layers() -> None:
    upward = []
    for module, targets in _graph().items():
        here = module.split(".")[0]
        for target in targets:
            there = target.split(".")[0]
            if there != here and RANK[there] >= RANK[here]:
                upward.append(f"{module} -> {target}")
    assert upward == [], "imports that do not go down a layer:\n" + "\n".join(sorted(upward))


def test_it_has_no_import_cycles() -> None:
    graph = _graph()
    # Tarjan's strongly connected components: any with more than one module is a cycle.
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for node in graph:
        if node not in index:
            visit(node)
    assert cycles == [], f"import cycles: {cycles}"


def test_it_knows_every_package_of_the_product() -> None:
    """A new app must take a row in LAYERS (and in INSTALLED_APPS, in the same order)."""
    from django.conf import settings

    apps = [app for app in settings.INSTALLED_APPS if app.split(".")[0] in RANK or (ROOT / app).is_dir()]
    assert [app for app in apps if app not in RANK] == []
    assert apps == sorted(apps, key=lambda app: RANK[app])
    on_disk = {p.parent.name for p in ROOT.glob("*/apps.py")}
    assert on_disk <= set(RANK)
