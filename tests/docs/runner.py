"""Run a documentation page's command blocks the way a reader would, and compare what they print with
the output the page shows. The conventions (CONTRIBUTING.md, "Docs that run"):

- A fenced block whose language is ``bash``, ``sh``, ``shell`` or ``console`` is a command block: it
  runs, in order with the page's other blocks, in one shell session per page (the working folder and
  exported variables carry over from block to block) under ``set -eo pipefail``.
- ``<!-- not-run: REASON -->`` on the line before the opening fence keeps a block from running; the
  reason is required (it installs something, needs a client GUI, a cloud account, a server that runs
  until Ctrl-C, ...).
- ``<!-- append-to: PATH -->`` before a block of any language appends the block's text to PATH
  (relative to the session's working folder) instead of running it: a config snippet the page asks
  the reader to add.
- A block without a language, or ``text``, right after a command block (blank lines between at most)
  is the output the command block must print (stdout and stderr together). Matched loosely: runs of
  spaces count as one; a number with a decimal point (a time, a score) matches any such number; a hex
  string of 7 or more digits, letters and digits both (an id, a version, a commit) any such string;
  ``…`` inside a line any text; a line that is only ``...`` or ``…`` any number of lines.
  Progress lines (``embed: 240/853 (28%), …``, ``…: done in 4.2 s``) are left out first.
  ``/home/me`` and ``/home/you`` stand for the scratch HOME, ``/home/me/.local/share/uv/tools/
  context-harness/bin`` for the folder of the installed commands and ``/home/me/context-harness`` for
  the checkout.
- Placeholders in capitals (``ID``, ``CHUNK``, ``VERSION``, ``TRASH_ID``) in a command take the value
  the page's latest output showed for them (``id …``, ``chunk N``, ``version …``, ``in the trash as
  …``); a placeholder with no value yet stays as written, and the command fails on it.
"""

from __future__ import annotations

import difflib
import os
import re
import shlex
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

COMMAND_LANGS = frozenset({"bash", "sh", "shell", "console"})
OUTPUT_LANGS = frozenset({"", "text"})
FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>```+|~~~+)\s*(?P<lang>[\w+-]*)\s*$")
DIRECTIVE = re.compile(r"^\s*<!--\s*(?P<name>not-run|append-to)\s*:\s*(?P<value>.*?)\s*-->\s*$")
STRAY_DIRECTIVE = re.compile(r"<!--\s*(not-run|append-to)\b")
UV_TOOL_BIN = "/home/me/.local/share/uv/tools/context-harness/bin"
CHECKOUT = "/home/me/context-harness"
# The lines a long step prints every few seconds when stderr is not a terminal (cli/progress.py): how many
# appear depends on the machine's speed, so they are left out of the output a page is compared with.
PROGRESS = re.compile(r"^\S.*?: (?:[\d,]+/[\d,]+ \(\d+%\).*|still working, [\d,]+ s so far|done in [\d,.]+ s"
                      r"|[\d,]+ to do)$")
CAPTURES = {
    "TRASH_ID": re.compile(r"in the trash as (\S+?) \("),
    "ID": re.compile(r"\bid:? ([0-9a-f]{16,})\b"),
    "CHUNK": re.compile(r"\bchunk (\d+)\b"),
    "VERSION": re.compile(r"\bversion:? ([0-9a-f]{16,})\b"),
}
PLACEHOLDER = {name: re.compile(rf"(?<![\w$<-]){name}(?![\w>-])") for name in CAPTURES}
BLOCK_TIMEOUT = 180.0  # seconds for one block (a first sync loads the embedding model; about 5 s here)


class PageError(Exception):
    """The page breaks a convention (a marker with no block after it, a marker without a reason)."""


@dataclass
class Block:
    page: str
    line: int  # 1-based line of the opening fence
    lang: str
    text: str
    not_run: str | None = None
    append_to: str | None = None
    expected: str | None = None  # the output block right after a command block
    expected_line: int | None = None

    @property
    def is_command(self) -> bool:
        return self.lang in COMMAND_LANGS

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


def parse(page: str, text: str) -> list[Block]:
    """Every fenced block of ``text`` with its directive; an output block is attached to the command
    block before it (and not listed itself)."""
    lines = text.splitlines()
    blocks: list[Block] = []
    directive: tuple[str, str, int] | None = None
    last_end: int | None = None  # line index after the closing fence of the latest command block
    i = 0
    while i < len(lines):
        line = lines[i]
        found = DIRECTIVE.match(line)
        if found:
            if not found["value"]:
                raise PageError(f"{page}:{i + 1}: <!-- {found['name']}: --> needs a value (a reason, a path)")
            directive = (found["name"], found["value"], i + 1)
            i += 1
            continue
        if STRAY_DIRECTIVE.search(line):
            raise PageError(f"{page}:{i + 1}: a directive must stand alone on its line: {line.strip()!r}")
        fence = FENCE.match(line)
        if not fence:
            if line.strip() and directive is not None:
                raise PageError(f"{page}:{directive[2]}: <!-- {directive[0]}: --> is not right before a fenced block")
            i += 1
            continue
        indent, marker, lang = fence["indent"], fence["fence"], fence["lang"].lower()
        body: list[str] = []
        j = i + 1
        while j < len(lines) and not (lines[j].strip().startswith(marker) and lines[j].strip().strip(marker[0]) == ""):
            body.append(lines[j][len(indent):] if lines[j].startswith(indent) else lines[j].lstrip())
            j += 1
        content = "\n".join(body) + "\n"
        follows = last_end is not None and all(not lines[k].strip() for k in range(last_end, i))
        if lang in OUTPUT_LANGS and follows and directive is None and blocks and blocks[-1].is_command \
                and blocks[-1].expected is None:
            blocks[-1].expected, blocks[-1].expected_line = content, i + 1
        else:
            block = Block(page, i + 1, lang, content)
            if directive is not None:
                name, value, _ = directive
                if name == "not-run":
                    if not block.is_command:
                        raise PageError(f"{page}:{i + 1}: not-run marks a {lang or 'plain'} block, which never runs")
                    block.not_run = value
                else:
                    block.append_to = value
            blocks.append(block)
        directive = None
        last_end = j + 1 if blocks and blocks[-1].is_command else None
        i = j + 1
    if directive is not None:
        raise PageError(f"{page}:{directive[2]}: <!-- {directive[0]}: --> is not right before a fenced block")
    return blocks


# -- matching output -------------------------------------------------------------------------------

# A hex token of 7 or more digits with a digit and a letter in it (a commit, an id, a version: "added" is no hex).
LOOSE = re.compile(r"(?P<ellipsis>…)|(?P<hex>\b(?=[0-9a-f]*[0-9])(?=[0-9a-f]*[a-f])[0-9a-f]{7,}\b)"
                   r"|(?P<decimal>\d+\.\d+)")


def _line_pattern(line: str) -> str:
    out, pos = [], 0
    for m in LOOSE.finditer(line):
        out.append(re.escape(line[pos:m.start()]))
        out.append(".*?" if m["ellipsis"] else "[0-9a-f]{7,}" if m["hex"] else r"\d+\.\d+")
        pos = m.end()
    out.append(re.escape(line[pos:]))
    return "".join(out)


def normalise(text: str) -> list[str]:
    """Lines with runs of spaces made one and trailing spaces gone; no blank lines at either end."""
    lines = [re.sub(r"[ \t]+", " ", line).rstrip() for line in text.splitlines()]
    while lines and not lines[0]:
        lines.pop(0)
    while lines and not lines[-1]:
        lines.pop()
    return lines


def matches(expected: str, actual: str) -> bool:
    """Whether ``actual`` (already normalised for paths) is the output ``expected`` shows."""
    parts = []
    for line in normalise(expected):
        if line.strip() in {"...", "…"}:
            parts.append(r"(?:[^\n]*\n)*?")
        else:
            parts.append(_line_pattern(line) + r"\n")
    body = "\n".join(normalise(actual)) + "\n"
    return re.fullmatch("".join(parts), body) is not None


# -- running a page --------------------------------------------------------------------------------

@dataclass
class Session:
    """One reader's shell at a scratch HOME: ``ctx`` and ``context-harness`` are the checkout's."""

    home: Path
    bin_dir: Path
    cwd: Path
    checkout: Path | None = None
    cache: Path | None = None  # XDG_CACHE_HOME shared by the pages of a run (the model's quantised copy)
    values: dict[str, str] = field(default_factory=dict)
    ran: int = 0

    def __post_init__(self) -> None:
        self.state = self.home.parent / f"{self.home.name}-state"
        self.state.mkdir(exist_ok=True)
        (self.state / "env").write_text("", encoding="utf-8")

    def env(self) -> dict[str, str]:
        keep = {k: v for k, v in os.environ.items() if k in {"LANG", "LC_ALL", "TMPDIR", "TERM"}}
        home = str(self.home)
        return {**keep, "HOME": home, "XDG_CONFIG_HOME": f"{home}/.config", "XDG_DATA_HOME": f"{home}/.local/share",
                "XDG_CACHE_HOME": str(self.cache or f"{home}/.cache"), "PATH": f"{self.bin_dir}{os.pathsep}/usr/local/bin:/usr/bin:/bin",
                "EDITOR": "true", "NO_COLOR": "1", "COLUMNS": "200", "GIT_CONFIG_NOSYSTEM": "1",
                "GIT_AUTHOR_NAME": "Docs Test", "GIT_AUTHOR_EMAIL": "docs@example.invalid",
                "GIT_COMMITTER_NAME": "Docs Test", "GIT_COMMITTER_EMAIL": "docs@example.invalid"}

    def substitute(self, command: str) -> str:
        for name, value in self.values.items():
            command = PLACEHOLDER[name].sub(value, command)
        return command

    def shell(self, script: str, where: str) -> str:
        """Run ``script`` as one block of the session; its output (stdout and stderr together)."""
        state = self.state
        text = (f"cd {shlex.quote(str(self.cwd))}\n. {shlex.quote(str(state / 'env'))}\n"
                f"trap 'pwd > {shlex.quote(str(state / 'cwd'))}; export -p > {shlex.quote(str(state / 'env'))}' EXIT\n"
                f"set -eo pipefail\n{script}")
        (state / "block.sh").write_text(text, encoding="utf-8")
        try:
            done = subprocess.run(["bash", str(state / "block.sh")], env=self.env(), stdin=subprocess.DEVNULL,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                  timeout=BLOCK_TIMEOUT)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"{where}: the block ran past {BLOCK_TIMEOUT:.0f} s:\n{script}") from None
        self.cwd = Path((state / "cwd").read_text(encoding="utf-8").strip() or self.cwd)
        output = done.stdout
        if done.returncode != 0:
            raise AssertionError(f"{where}: the block exited with {done.returncode}:\n{script}\n--- output:\n{output}")
        return output

    def shown(self, output: str) -> str:
        """``output`` with this machine's paths written as the docs write them."""
        output = output.replace(str(self.bin_dir), UV_TOOL_BIN)
        if self.checkout is not None:
            output = output.replace(str(self.checkout), CHECKOUT)
        output = output.replace(str(self.home), "/home/me")
        return "".join(line for line in output.splitlines(keepends=True) if not PROGRESS.match(line.rstrip("\n")))

    def run(self, block: Block) -> None:
        if block.append_to is not None:
            target = self.cwd / Path(block.append_to).expanduser() if not block.append_to.startswith("~") \
                else Path(block.append_to.replace("~", str(self.home), 1))
            if not target.is_file():
                raise AssertionError(f"{block.where}: append-to {block.append_to}: no such file "
                                     f"(in {self.shown(str(self.cwd))})")
            with target.open("a", encoding="utf-8") as out:
                out.write("\n" + block.text)
            return
        if not block.is_command or block.not_run is not None:
            return
        output, scripts = "", []
        for piece in pieces(block.text):  # a placeholder takes its value from the lines before it too
            script = self.substitute(piece)
            scripts.append(script)
            printed = self.shell(script, block.where)
            output += printed
            for name, pattern in CAPTURES.items():
                found = pattern.search(printed)
                if found:
                    self.values[name] = found[1]
        script = "".join(scripts)
        self.ran += 1
        if block.expected is not None:
            shown = self.shown(output)
            if not matches(block.expected.replace("/home/you", "/home/me"), shown):
                diff = "\n".join(difflib.unified_diff(normalise(block.expected), normalise(shown),
                                                      f"{block.page}:{block.expected_line} (the page)",
                                                      "what the commands printed", lineterm=""))
                raise AssertionError(f"{block.where}: the output differs from the page's:\n{script}\n{diff}")


def pieces(script: str) -> list[str]:
    """``script`` cut before every line holding a placeholder, so the lines before it run first."""
    out: list[str] = []
    current = ""
    for line in script.splitlines(keepends=True):
        if current.strip() and any(p.search(line) for p in PLACEHOLDER.values()):
            out.append(current)
            current = ""
        current += line
    return [*out, current] if current else out
