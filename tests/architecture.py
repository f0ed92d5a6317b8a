"""The import graph of the project's own modules, read from the source with ast, and the rules it
must keep: which part may import which (arrows run one way), and no cycles. Every import counts,
including one inside a function, so an import moved into a function cannot hide a cycle."""
import ast
from collections.abc import Iterable
from pathlib import Path

APPS = ("portal", "quotas", "scheduler", "audit")

# Parts, most specific first: a module belongs to the first part whose prefix it starts with.
PARTS = (
    ("engine", ("scheduler.engine",)),
    ("ledger", ("audit.chain", "audit.usage", "audit.models")),
    ("quotas", ("quotas",)),
    ("scheduler", ("scheduler",)),
    ("reports", ("audit",)),
    ("portal", ("portal",)),
)

# What each part may import besides itself. The engine is pure Python at the bottom; the audit
# chain and usage ledger import no other app; quotas builds on the ledger (and the engine's types);
# the scheduler builds on quotas; reports read everything; only portal (the web shell) sees all.
ALLOWED = {
    "engine": set(),
    "ledger": set(),
    "quotas": {"ledger", "engine"},
    "scheduler": {"quotas", "ledger", "engine"},
    "reports": {"scheduler", "quotas", "ledger", "engine"},
    "portal": {"reports", "scheduler", "quotas", "ledger", "engine"},
}


def part_of(module: str) -> str:
    for part, prefixes in PARTS:
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            return part
    raise ValueError(module)


def project_modules(root: Path) -> dict[str, Path]:
    modules = {}
    for app in APPS:
        for path in (root / app).rglob("*.py"):
            if "migrations" in path.parts:
                continue
            name = ".".join(path.relative_to(root).with_suffix("").parts)
            modules[name.removesuffix(".__init__")] = path
    return modules


def imports_of(path: Path, modules: Iterable[str]) -> set[str]:
    """The project modules one file imports (anywhere in the file)."""
    known = set(modules)
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name in known}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                child = f"{node.module}.{alias.name}"
                if child in known:
                    found.add(child)
                elif node.module in known:
                    found.add(node.module)
    return found


def import_graph(root: Path) -> dict[str, set[str]]:
    modules = project_modules(root)
    return {name: imports_of(path, modules) - {name} for name, path in modules.items()}


def arrows_against_direction(graph: dict[str, set[str]]) -> list[str]:
    wrong = []
    for source, targets in sorted(graph.items()):
        src = part_of(source)
        for target in sorted(targets):
            dst = part_of(target)
            if dst != src and dst not in ALLOWED[src]:
                wrong.append(f"{source} ({src}) imports {target} ({dst})")
    return wrong


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's algorithm)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph.get(node, ()):
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
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


# Inside the scheduler, sub-packages form layers, bottom first: a module imports its own sub-package or
# one below it, never one above, so no two sub-packages import each other. `models` is every Django
# models module (each app's `models.py` gathers its sub-packages' models, so they sit together at the
# bottom); the web tier (pages, API, admin, app config, commands) sits on top and may import any layer.
SCHEDULER_LAYERS = ("engine", "models", "notices", "queue", "backends", "runs", "preemption", "jobs", "sync",
                    "cycle", "whatif", "bench")
WEB_TIER = "web"
WEB_NAMES = {"views", "api", "urls", "api_urls", "admin", "serializers", "forms", "apps", "templatetags",
             "management"}


def scheduler_layer(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] != "scheduler":
        return None
    if len(parts) == 1 or WEB_NAMES & set(parts[1:]) or (len(parts) == 2 and parts[1] not in SCHEDULER_LAYERS):
        return WEB_TIER
    if parts[-1] == "models":
        return "models"
    return parts[1]


def scheduler_arrows_up(graph: dict[str, set[str]]) -> list[str]:
    """Imports inside the scheduler that run from a layer to one above it (or into the web tier)."""
    wrong = []
    for source, targets in sorted(graph.items()):
        src = scheduler_layer(source)
        if src in (None, WEB_TIER):
            continue
        for target in sorted(targets):
            dst = scheduler_layer(target)
            if dst in (None, src):
                continue
            if dst == WEB_TIER or SCHEDULER_LAYERS.index(dst) > SCHEDULER_LAYERS.index(src):
                wrong.append(f"{source} ({src}) imports {target} ({dst})")
    return wrong
