"""The architecture, as a test: which package may import which, and no import cycles between
modules or between packages.

Every import counts, including imports inside functions and under ``TYPE_CHECKING``:
``from pkg import name`` imports ``pkg`` (its ``__init__`` runs) and, when ``name`` is a module,
that module too. A cycle hidden inside a function is still a cycle.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

from devtools.architecture import ALLOWED, LAYERS, LOWER, PAGE, RIMS, layer_of, page_with_map, unit

PACKAGE = Path(__file__).resolve().parents[1] / "context_harness"
ROOT = "context_harness"

THIRD_PARTY_RIMS = {"mcp.server": {"server"}, "starlette": {"server", "console"}, "uvicorn": {"server"},
                    "click": {"cli"}, "rich": {"cli"}, "jinja2": {"console"}}


@cache  # the tree does not change during a run: parse it once for every test here
def modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def imports_of(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """Every module ``name`` imports (project modules by name; others by their top-level name)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([node.module] if node.module else [])])
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names if f"{base}.{alias.name}" in known)
    return found


@cache
def graph() -> dict[str, set[str]]:
    known = modules()
    return {name: imports_of(name, path, known) for name, path in known.items()}


def test_each_package_imports_only_what_its_layer_allows() -> None:
    offenders = []
    for module, imported in graph().items():
        mine = unit(module)
        allowed = ALLOWED[mine] | {mine, "__init__"}
        for target in imported:
            if target.startswith(ROOT + ".") and unit(target) not in allowed:
                offenders.append(f"{module} imports {target}")
            for prefix, rims in THIRD_PARTY_RIMS.items():
                if (target == prefix or target.startswith(prefix + ".")) and mine not in rims:
                    offenders.append(f"{module} imports {target} (only {', '.join(sorted(rims))} may)")
    assert offenders == []


def test_every_unit_is_placed_in_a_layer() -> None:
    assert sorted({unit(m) for m in modules()} - set(ALLOWED)) == []


def test_each_unit_imports_only_its_own_layer_or_below() -> None:
    order = list(LAYERS)
    upward = [f"{name} ({layer_of(name)}) may import {other} ({layer_of(other)})" for name, allowed in ALLOWED.items()
              for other in allowed if order.index(layer_of(other)) > order.index(layer_of(name))]
    assert upward == []
    assert sorted(ALLOWED) == sorted(u for units in LAYERS.values() for u in units)


def test_the_architecture_page_draws_this_table() -> None:
    """docs/explanation/architecture.md holds the map drawn from ALLOWED and LAYERS; redraw it with
    ``python -m devtools.architecture --write``."""
    text = PAGE.read_text(encoding="utf-8")
    assert page_with_map(text) == text, "the map in architecture.md is stale: python -m devtools.architecture --write"


def test_at_most_six_modules_stay_loose() -> None:
    loose = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(loose) <= 6, loose


def test_no_import_cycles() -> None:
    known = modules()
    edges = {m: {t for t in targets if t in known and t != m} for m, targets in graph().items()}
    cycles = strongly_connected(edges)
    assert cycles == []


def strongly_connected(edges: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm: every strongly connected component of more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def test_the_cycle_check_finds_a_cycle() -> None:
    assert strongly_connected({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def package_edges(modules_graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The import graph between units (top-level modules and subpackages): a unit imports another
    when any of its modules imports any of the other's."""
    edges: dict[str, set[str]] = {}
    for module, targets in modules_graph.items():
        edges.setdefault(unit(module), set()).update(
            unit(t) for t in targets if t.startswith(ROOT + ".") and unit(t) != unit(module))
    return edges


def test_no_package_cycles() -> None:
    """No cycle between packages either, even one that no module cycle shows (``a.x`` imports
    ``b.y`` while ``b.z`` imports ``a.w``): each package can be read, and replaced, on its own."""
    assert strongly_connected(package_edges(graph())) == []


def test_the_package_cycle_check_finds_a_cycle_between_packages() -> None:
    planted = {f"{ROOT}.ingest.sync": {f"{ROOT}.connectors.base"},
               f"{ROOT}.connectors.files": {f"{ROOT}.lua.script"},
               f"{ROOT}.lua.script": {f"{ROOT}.ingest.markdown"},
               f"{ROOT}.ingest.markdown": set(), f"{ROOT}.harness": {f"{ROOT}.ingest.sync"}}
    module_edges = {m: {t for t in targets if t in planted} for m, targets in planted.items()}
    assert strongly_connected(module_edges) == []  # no module cycle: only the packages form one
    assert strongly_connected(package_edges(planted)) == [["connectors", "ingest", "lua"]]


def rim_offenses(module: str, path: Path, known: dict[str, Path]) -> list[str]:
    """What rim module ``module`` does that only the core may: import anything of ours but the
    core's face, the base layer and the other rims, or reach into the Harness's ``catalog``."""
    allowed = ALLOWED[unit(module)] | {unit(module), "__init__"}
    found = [f"{module} imports {target}" for target in sorted(imports_of(module, path, known))
             if target.startswith(ROOT + ".") and unit(target) not in allowed]
    found += [f"{module}:{node.lineno} reaches into .catalog"
              for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
              if isinstance(node, ast.Attribute) and node.attr == "catalog"]
    return found


def test_the_rims_reach_the_core_through_its_face_alone() -> None:
    assert all(ALLOWED[rim] - LOWER <= {"core.face"} | RIMS for rim in RIMS)
    known = modules()
    offenders = [o for m, path in known.items() if unit(m) in RIMS for o in rim_offenses(m, path, known)]
    assert offenders == []


def test_the_rim_check_finds_an_offense(tmp_path: Path) -> None:
    planted = tmp_path / "planted.py"
    planted.write_text("from context_harness.lua.tools import LuaTool\n"
                       "from context_harness.core.harness import Harness\n"
                       "from context_harness.core.face import Harness as Face\n"
                       "def f(harness):\n    return harness.catalog.tool('x')\n", encoding="utf-8")
    assert rim_offenses("context_harness.cli.planted", planted, modules()) == [
        "context_harness.cli.planted imports context_harness.core.harness",
        "context_harness.cli.planted imports context_harness.lua.tools",
        "context_harness.cli.planted:5 reaches into .catalog"]


def test_every_public_call_of_the_harness_is_in_one_part_of_the_face() -> None:
    """The face (``core/face.py``) names the Harness's parts; a new public call must join one of
    them (or the lifecycle), and no name may sit in two."""
    from context_harness.core.face import LIFECYCLE, PARTS, Harness

    placed = [name for part in PARTS for name in vars(part) if not name.startswith("_")] + list(LIFECYCLE)
    public = sorted(name for name in dir(Harness) if not name.startswith("_"))
    assert sorted(placed) == public
    assert all(len([n for n in vars(part) if not n.startswith("_")]) <= 12 for part in PARTS)


def type_checking_imports(path: Path) -> dict[str, tuple[str, str | None]]:
    """The names a module imports under ``if TYPE_CHECKING:``, as (module, attribute; None: a module)."""
    found: dict[str, tuple[str, str | None]] = {}
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for imp in node.body:
                assert isinstance(imp, ast.ImportFrom) and imp.module, ast.dump(imp)
                for alias in imp.names:
                    submodule = f"{imp.module}.{alias.name}"
                    found[alias.asname or alias.name] = (submodule, None) if submodule in modules() else \
                        (imp.module, alias.name)
    return found


def test_the_face_lends_each_name_from_where_it_lives() -> None:
    """The face imports its names on first use (``ctx search`` then imports no agents, Lua or tools):
    its table is the list mypy reads under ``TYPE_CHECKING``, and each name there is the object it names."""
    import importlib

    from context_harness.core import face

    assert face._LAZY == type_checking_imports(PACKAGE / "core" / "face.py")
    for name, (module, attribute) in face._LAZY.items():
        target = importlib.import_module(module)
        assert getattr(face, name) is (target if attribute is None else getattr(target, attribute)), name
    assert all(hasattr(face, name) for name in face.__all__)


MCP_ADAPTER = ("context_harness.server.mcp", "context_harness.server.stdio", "context_harness.server.sdk",
               "context_harness.server.rpc", "context_harness.server.compat", "mcp")


def test_the_console_reaches_the_core_not_the_mcp_adapter() -> None:
    """The web console (``console/``) shares the HTTP app with MCP but calls the Harness itself: it
    imports nothing of the MCP adapter (nor the MCP SDK), so what it shows is the core's, and the
    adapter can change without it."""
    offenders = [f"{m} imports {t}" for m, targets in graph().items() if unit(m) == "console"
                 for t in targets if any(t == a or t.startswith(a + ".") for a in MCP_ADAPTER)]
    assert offenders == []


def test_storage_imports_nothing_from_ingest_search_or_the_rims() -> None:
    """``store/`` (opening and migrating included) stands on the lowest layer and the embedder
    identity alone: nothing from ingest, search, connectors, the core services or the rims."""
    assert ALLOWED["store"] == LOWER | {"embedding"}
    offenders = [f"{m} imports {t}" for m, targets in graph().items() if unit(m) == "store"
                 for t in targets if t.startswith(ROOT + ".") and unit(t) not in LOWER | {"store", "embedding"}]
    assert offenders == []


def test_sql_schema_has_one_owner() -> None:
    """CREATE TABLE / CREATE INDEX appear only in store/schema.py."""
    owners = sorted(str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py")
                    if any(ddl in p.read_text(encoding="utf-8") for ddl in ("CREATE TABLE", "CREATE INDEX")))
    assert owners == ["store/schema.py"]


def test_no_function_is_over_80_lines_and_no_module_over_600() -> None:
    long_functions, long_modules = [], []
    for path in PACKAGE.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        if text.count("\n") > 600:
            long_modules.append(str(path.relative_to(PACKAGE)))
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno is not None:
                if node.end_lineno - node.lineno + 1 > 80:
                    long_functions.append(f"{path.relative_to(PACKAGE)}:{node.lineno} {node.name}")
    assert long_modules == [] and long_functions == []


