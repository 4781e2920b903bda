"""The release check: build the sdist and wheel, check them, install the wheel into a fresh venv
and use it there the way a user would. Run by ``.ci/run``; exits 1 naming the step that broke.

    python tests/release/check.py [--keep]

Steps: ``python -m build`` (the sdist, then the wheel built FROM the sdist, so a file missing from the
sdist breaks the wheel too); ``twine check --strict``; the metadata (name, the version in
``context_harness/__init__.py``, licence, the README as a Markdown description, Python floor, the
``ctx`` and ``context-harness`` entry points, the bundled tokenizer files, nothing but the package in
the wheel); a fresh venv with only the wheel installed (pip, from the configured index or cache);
there ``ctx --version``, ``ctx demo``, ``ctx help config`` (the reference pages ship in the wheel),
``ctx registry init`` in a new workspace (so does the starter registry), the install hint's command for
the documents extra (it must install it), and an MCP handshake with the venv's ``context-harness`` over
stdio (initialize, tools/list, one search), every stdout line JSON-RPC. Nothing from the checkout
is on the installed commands' path: they run from a temporary folder with a clean environment.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import email
import json
import os
import queue
import shlex
import shutil
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
PACKAGE = "context_harness"
ENTRY_POINTS = {"ctx": "context_harness.cli:main", "context-harness": "context_harness.cli:main_server"}
TOKENIZER_DIR = "context_harness/embedding/model/all-MiniLM-L6-v2"
PACKAGED_DOCS = ("context_harness/sample/docs/reference/config.md", "context_harness/sample/docs/tutorial.md",
                 "context_harness/starter_registry/registry.toml",
                 "context_harness/starter_registry/connectors/rss/connector.lua")
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "config.json",
                   "LICENSE", "NOTICE")
NOTE = "# Release notes\n\nThe lighthouse keeper logs every passing tanker in the harbour ledger.\n"
QUERY = "who records the tankers in the harbour"
RPC_TIMEOUT = 60.0  # seconds for one JSON-RPC answer (the first search loads the model)


class CheckFailed(Exception):
    """One step broke; the message says what."""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep", action="store_true", help="Keep the temporary folder (its path is printed).")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="ctx-release-"))
    started = time.monotonic()
    try:
        run_checks(work)
    except CheckFailed as failure:
        print(f"release check FAILED: {failure}", file=sys.stderr)
        print(f"(files kept in {work})", file=sys.stderr)
        return 1
    if args.keep:
        print(f"files kept in {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)
    print(f"release check passed in {time.monotonic() - started:.0f} s")
    return 0


def run_checks(work: Path) -> None:
    version = source_version()
    dist = work / "dist"
    with step("build the sdist, then the wheel from it"):
        run([sys.executable, "-m", "build", "--outdir", str(dist), str(REPO)], cwd=work)
        sdist, wheel = one(dist, f"context_harness-{version}.tar.gz"), one(dist, f"context_harness-{version}-*.whl")
    with step("twine check --strict"):
        run([sys.executable, "-m", "twine", "check", "--strict", str(sdist), str(wheel)], cwd=work)
    with step(f"metadata: context-harness {version}, licence, README, entry points, tokenizer files"):
        check_wheel(wheel, version)
        check_sdist(sdist, version)
    venv = work / "venv"
    with step("install the wheel into a fresh venv"):
        run([sys.executable, "-m", "venv", str(venv)], cwd=work)
        # --no-compile: byte-compiling every dependency (sympy alone is large) took most of this step;
        # the commands below compile what they import, as a first run does.
        run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--no-compile", str(wheel)],
            cwd=work, env=pip_env())
    env = user_env(work)
    with step("the installed package is the wheel's"):
        where = run([str(venv / "bin" / "python"), "-c", f"import {PACKAGE}; print({PACKAGE}.__file__)"],
                    cwd=work, env=env).strip()
        expect(Path(where).is_relative_to(venv), f"{PACKAGE} was imported from {where}, not from the venv")
        shown = run([str(venv / "bin" / "ctx"), "--version"], cwd=work, env=env)
        expect(version in shown, f"`ctx --version` printed {shown.strip()!r}, not version {version}")
    with step("`ctx demo` (the bundled sample, embedded offline)"):
        payload = json.loads(run([str(venv / "bin" / "ctx"), "demo", "--json"], cwd=work, env=env))
        results = payload.get("results") or []
        expect(len(results) > 0, f"`ctx demo --json` found nothing: {payload}")
    with step("`ctx help config` (the config reference, offline)"):
        shown = run([str(venv / "bin" / "ctx"), "help", "config"], cwd=work, env=env)
        expect(shown.startswith("# Configuration reference"), f"`ctx help config` printed {shown[:200]!r}")
    with step("`ctx registry init` in a new workspace (the starter registry from the wheel)"):
        check_starter_registry(venv, work, env)
    with step("the install hint names a command that installs the documents extra here"):
        check_install_hint(venv, work, env)
    config = write_knowledge_base(work)
    with step("`ctx sync` of a notes folder"):
        run([str(venv / "bin" / "ctx"), "--config", str(config), "sync"], cwd=work, env=env)
    with step("MCP over stdio: initialize, tools/list, search"):
        handshake([str(venv / "bin" / "context-harness"), "--config", str(config)], work, env)


@contextlib.contextmanager
def step(name: str) -> Iterator[None]:
    started = time.monotonic()
    print(f"... {name}", flush=True)
    try:
        yield
    except CheckFailed as failure:
        raise CheckFailed(f"{name}: {failure}") from None
    print(f"ok  {name} ({time.monotonic() - started:.1f} s)", flush=True)


def expect(condition: bool, what: str) -> None:
    if not condition:
        raise CheckFailed(what)


def run(command: list[str], *, cwd: Path, env: dict[str, str] | None = None, timeout: float = 300) -> str:
    """stdout of ``command``; a failure quotes the command and the end of its stderr."""
    try:
        done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise CheckFailed(f"`{' '.join(command)}` could not run: {exc}") from None
    if done.returncode != 0:
        tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-25:])
        raise CheckFailed(f"`{' '.join(command)}` exited with {done.returncode}:\n{tail}")
    return done.stdout


def source_version() -> str:
    """``__version__`` from ``context_harness/__init__.py``: the one place the version lives."""
    tree = ast.parse((REPO / PACKAGE / "__init__.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__version__" for t in node.targets):
            return str(ast.literal_eval(node.value))
    raise CheckFailed(f"no __version__ in {PACKAGE}/__init__.py")


def one(folder: Path, pattern: str) -> Path:
    found = sorted(folder.glob(pattern))
    expect(len(found) == 1, f"expected one {pattern} in {folder}, found {[p.name for p in folder.iterdir()]}")
    return found[0]


def check_wheel(wheel: Path, version: str) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        info = f"context_harness-{version}.dist-info"
        meta = email.message_from_string(archive.read(f"{info}/METADATA").decode())
        entry_points = archive.read(f"{info}/entry_points.txt").decode()
    expect(meta["Name"] == "context-harness", f"Name is {meta['Name']!r}")
    expect(meta["Version"] == version, f"Version is {meta['Version']!r}, {PACKAGE}/__init__.py says {version}")
    licence = meta.get("License-Expression") or meta.get("License")
    expect(licence == "Apache-2.0", f"the licence is {licence!r}, not Apache-2.0")
    expect(meta.get("Requires-Python") == ">=3.11", f"Requires-Python is {meta.get('Requires-Python')!r}")
    expect((meta.get("Description-Content-Type") or "").startswith("text/markdown"),
           f"the description is {meta.get('Description-Content-Type')!r}, not the Markdown README")
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    expect(str(meta.get_payload()).strip() == readme.strip(), "the long description is not README.md")
    for name, target in ENTRY_POINTS.items():
        expect(f"{name} = {target}" in entry_points, f"entry point {name} = {target} missing:\n{entry_points}")
    lacking = [f for f in PACKAGED_DOCS if f not in names]
    expect(not lacking, f"the wheel lacks {lacking} (pyproject.toml [tool.hatch.build.targets.wheel.force-include])")
    missing = [f for f in TOKENIZER_FILES if f"{TOKENIZER_DIR}/{f}" not in names]
    expect(not missing, f"the wheel lacks the bundled tokenizer files {missing} (in {TOKENIZER_DIR}/)")
    stray = sorted(n for n in names if not n.startswith((f"{PACKAGE}/", f"{info}/")) or "__pycache__" in n)
    expect(not stray, f"the wheel holds files outside the package: {stray[:10]}")


def check_sdist(sdist: Path, version: str) -> None:
    top = f"context_harness-{version}"
    with tarfile.open(sdist) as archive:
        names = set(archive.getnames())
    for needed in ("pyproject.toml", "README.md", f"{PACKAGE}/__init__.py"):
        expect(f"{top}/{needed}" in names, f"the sdist lacks {needed}")
    stray = sorted(n for n in names if any(part in {".git", ".venv", "__pycache__"} for part in n.split("/")))
    expect(not stray, f"the sdist holds files it must not: {stray[:10]}")


def pip_env() -> dict[str, str]:
    """This environment (pip's index and cache settings) without anything pointing at the checkout."""
    return {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME"}}


def user_env(work: Path) -> dict[str, str]:
    """A new user's environment: a home, config, data and cache of their own; no PYTHONPATH."""
    home = work / "home"
    home.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k in {"PATH", "LANG", "LC_ALL", "TMPDIR"}}
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), XDG_DATA_HOME=str(home / ".local/share"),
               XDG_CACHE_HOME=str(home / ".cache"))
    return env


def check_starter_registry(venv: Path, work: Path, env: dict[str, str]) -> None:
    """``ctx init`` then ``ctx registry init``: the registry is the wheel's, pinned; its extensions list."""
    ctx = str(venv / "bin" / "ctx")
    folder = work / "workspace"
    folder.mkdir()
    run([ctx, "init"], cwd=folder, env=env)
    added = run([ctx, "registry", "init"], cwd=folder, env=env)
    expect("added [registries.community]" in added, f"`ctx registry init` printed {added!r}")
    listing = run([ctx, "registry", "list"], cwd=folder, env=env)
    for extension in ("connectors/rss", "tools/web-fetch", "agents/researcher"):
        expect(extension in listing, f"`ctx registry list` lacks {extension}:\n{listing}")
    expect(str(REPO) not in listing, f"the registry came from the checkout, not the wheel:\n{listing}")


def check_install_hint(venv: Path, work: Path, env: dict[str, str]) -> None:
    """The hint an installed wheel gives for a missing extra is a command that works: run it."""
    python = str(venv / "bin" / "python")
    hint = run([python, "-c", "from context_harness.config.install import install_hint; "
                "print(install_hint('documents'))"], cwd=work, env=env).strip()
    expect(hint.startswith(f"{python} -m pip install ") and "context-harness[documents]'" not in hint,
           f"the hint is {hint!r}: not the venv's pip with the installed wheel (the package is not on PyPI)")
    run(shlex.split(hint) + ["--quiet", "--no-compile"], cwd=work, env={**pip_env(), "HOME": env["HOME"]})
    run([python, "-c", "import pypdfium2, docx, lxml, pptx, openpyxl, odf, ebooklib, nbformat"], cwd=work, env=env)


def write_knowledge_base(work: Path) -> Path:
    notes = work / "notes"
    notes.mkdir()
    (notes / "release-notes.md").write_text(NOTE, encoding="utf-8")
    config = work / "ctx.toml"
    config.write_text('[db]\npath = "data/ctx.sqlite"\n\n[connectors.filesystem.notes]\nroot = "notes"\n',
                      encoding="utf-8")
    return config


def handshake(command: list[str], cwd: Path, env: dict[str, str]) -> None:
    """initialize, notifications/initialized, tools/list, tools/call search; every stdout line JSON-RPC."""
    started = time.monotonic()
    rpc = JsonRpc(command, cwd, env, cwd / "server-stderr.log")
    try:
        init = rpc.call("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                       "clientInfo": {"name": "release-check", "version": "1"}})
        expect(init.get("serverInfo", {}).get("name") == "context-harness", f"initialize answered {init}")
        rpc.notify("notifications/initialized")
        tools = {t["name"] for t in rpc.call("tools/list", {}).get("tools", [])}
        first_list = time.monotonic() - started
        expect({"search", "get", "sources"} <= tools, f"tools/list lacks search/get/sources: {sorted(tools)}")
        found = rpc.call("tools/call", {"name": "search", "arguments": {"query": QUERY}})
        expect(not found.get("isError"), f"search answered an error: {found}")
        titles = [r.get("title") for r in (found.get("structuredContent") or {}).get("results", [])]
        expect("Release notes" in titles, f"search for {QUERY!r} did not find the note: {titles}")
        print(f"    spawn to first tools/list answer: {first_list:.2f} s", flush=True)
    except CheckFailed as failure:
        raise CheckFailed(f"{failure}\nserver stderr (last lines):\n{rpc.stop()}") from None
    rpc.stop()


class JsonRpc:
    """Newline-delimited JSON-RPC with a child over its stdin/stdout; a timeout on each answer."""

    def __init__(self, command: list[str], cwd: Path, env: dict[str, str], stderr: Path) -> None:
        self.stderr_path = stderr
        self.stderr = stderr.open("w")
        self.process = subprocess.Popen(command, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=self.stderr, text=True, bufsize=1)
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()
        self.next_id = 0

    def _pump(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line)
        self.lines.put("")  # end of stdout

    def notify(self, method: str) -> None:
        self._send({"jsonrpc": "2.0", "method": method})

    def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.next_id += 1
        self._send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        deadline = time.monotonic() + RPC_TIMEOUT
        while True:
            message = self._read(deadline, method)
            if message.get("id") == self.next_id:
                expect("error" not in message, f"{method} failed: {message.get('error')}")
                return dict(message["result"])

    def _send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        try:
            self.process.stdin.write(json.dumps(message) + "\n")
            self.process.stdin.flush()
        except OSError as exc:
            raise CheckFailed(f"the server closed its stdin ({exc})") from None

    def _read(self, deadline: float, method: str) -> dict[str, Any]:
        try:
            line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            raise CheckFailed(f"no answer to {method} within {RPC_TIMEOUT:.0f} s") from None
        expect(line != "", f"the server exited (code {self.process.poll()}) before answering {method}")
        try:
            message = json.loads(line)
        except ValueError:
            raise CheckFailed(f"stdout carried a line that is not JSON-RPC: {line[:200]!r}") from None
        expect(isinstance(message, dict) and message.get("jsonrpc") == "2.0", f"not JSON-RPC 2.0: {line[:200]!r}")
        return dict(message)

    def stop(self) -> str:
        """Close stdin (the stdio way to stop), wait, and return the end of the server's stderr."""
        with contextlib.suppress(OSError):
            assert self.process.stdin is not None
            self.process.stdin.close()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.stderr.close()
        return "\n".join(self.stderr_path.read_text(errors="replace").splitlines()[-25:])


if __name__ == "__main__":
    sys.exit(main())
