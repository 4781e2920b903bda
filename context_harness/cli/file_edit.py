"""Client files edited in place, keeping what the user wrote: JSON with comments (Zed's and Gemini
CLI's settings) and TOML (Codex's config.toml). ``set_jsonc`` and ``set_toml`` set one server entry
in a file's text and return the new text; every comment, key, blank line and layout outside that
entry stays byte for byte. Both check their own work: the new text is parsed again and must hold
exactly the data meant, else ``EditError`` (and ``ctx setup`` writes nothing).

Plain text and data; the client table, backups and writing are in ``clients``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

MAX_DEPTH = 256  # as clients.CLIENT_FILE_DEPTH: no settings file nests past about 10 levels


class EditError(ValueError):
    """The text cannot be read (``line``/``column`` when known), or not edited safely."""

    def __init__(self, message: str, line: int | None = None, column: int | None = None) -> None:
        where = f" at line {line}, column {column}" if line is not None else ""
        super().__init__(f"{message}{where}")


# -- JSON with comments ----------------------------------------------------------------------------

@dataclass
class _Object:
    """Where an object lies in the text: its braces, and each member's key and value spans."""

    open: int
    close: int  # the index of "}"
    members: dict[str, tuple[int, int, int]] = field(default_factory=dict)  # key -> (key start, value start, end)
    children: dict[str, _Object] = field(default_factory=dict)  # key -> the member's object, if one
    last_end: int | None = None  # end of the last member's value


_SPACE = re.compile(r"(?:\s+|//[^\n]*|/\*.*?\*/)*", re.S)
_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?")
_STRING = re.compile(r'"(?:[^"\\\x00-\x1f]|\\.)*"', re.S)


class _Reader:
    """A recursive-descent reader of JSON with ``//`` and ``/* */`` comments and trailing commas
    (what Zed and Gemini CLI accept), nesting bounded by ``MAX_DEPTH``. ``value()`` returns the
    data and, for an object, where its parts lie."""

    def __init__(self, text: str, parse_float: Any, parse_int: Any) -> None:
        self.text, self.pos = text, 0
        self.parse_float, self.parse_int = parse_float, parse_int

    def fail(self, message: str, at: int | None = None) -> EditError:
        at = self.pos if at is None else at
        line = self.text.count("\n", 0, at) + 1
        return EditError(message, line, at - (self.text.rfind("\n", 0, at) + 1) + 1)

    def skip(self) -> None:
        self.pos = _SPACE.match(self.text, self.pos).end()  # type: ignore[union-attr]
        if self.text.startswith("/*", self.pos):
            raise self.fail("a /* comment that never ends")

    def value(self, depth: int = 0) -> tuple[Any, _Object | None]:
        if depth > MAX_DEPTH:
            raise self.fail(f"nested more than {MAX_DEPTH} levels deep")
        self.skip()
        char = self.text[self.pos:self.pos + 1]
        if char == "{":
            return self.object(depth)
        if char == "[":
            return self.array(depth), None
        if char == '"':
            return self.string(), None
        for word, data in (("true", True), ("false", False), ("null", None)):
            if self.text.startswith(word, self.pos):
                self.pos += len(word)
                return data, None
        number = _NUMBER.match(self.text, self.pos)
        if number and number.end() > self.pos:
            self.pos = number.end()
            token = number.group()
            return (self.parse_float(token) if any(c in token for c in ".eE") else self.parse_int(token)), None
        raise self.fail("expected a value" if char else "the text ends where a value was expected")

    def string(self) -> str:
        match = _STRING.match(self.text, self.pos)
        if not match:
            raise self.fail("a string that is not closed, or holds a control character")
        self.pos = match.end()
        try:
            return str(json.loads(match.group()))
        except json.JSONDecodeError as exc:
            raise self.fail(f"a string with a bad escape ({exc.msg})", match.start()) from None

    def array(self, depth: int) -> list[Any]:
        self.pos += 1
        items: list[Any] = []
        while True:
            self.skip()
            if self.text.startswith("]", self.pos):
                self.pos += 1
                return items
            items.append(self.value(depth + 1)[0])
            self.skip()
            if self.text.startswith(",", self.pos):
                self.pos += 1
            elif not self.text.startswith("]", self.pos):
                raise self.fail("expected ',' or ']'")

    def object(self, depth: int) -> tuple[dict[str, Any], _Object]:
        where = _Object(open=self.pos, close=-1)
        self.pos += 1
        data: dict[str, Any] = {}
        while True:
            self.skip()
            if self.text.startswith("}", self.pos):
                where.close = self.pos
                self.pos += 1
                return data, where
            if not self.text.startswith('"', self.pos):
                raise self.fail("expected a property name in double quotes")
            key_start = self.pos
            key = self.string()
            self.skip()
            if not self.text.startswith(":", self.pos):
                raise self.fail("expected ':'")
            self.pos += 1
            self.skip()
            start = self.pos
            data[key], child = self.value(depth + 1)
            where.members[key] = (key_start, start, self.pos)
            where.last_end = self.pos
            if child is not None:
                where.children[key] = child
            self.skip()
            if self.text.startswith(",", self.pos):
                self.pos += 1
            elif not self.text.startswith("}", self.pos):
                raise self.fail("expected ',' or '}'")


def read_jsonc(text: str, parse_float: Any = float, parse_int: Any = int) -> tuple[Any, _Object | None]:
    """The data of ``text`` (JSON with comments and trailing commas) and where its top object lies."""
    reader = _Reader(text, parse_float, parse_int)
    data, where = reader.value()
    reader.skip()
    if reader.pos != len(text):
        raise reader.fail("more text after the value")
    return data, where


def _indent_at(text: str, index: int) -> str:
    """The whitespace that starts the line holding ``index``."""
    start = text.rfind("\n", 0, index) + 1
    return re.match(r"[ \t]*", text[start:]).group()  # type: ignore[union-attr]


def _member_indent(text: str, where: _Object) -> str:
    """How the object's members are indented: as its first member, else its brace's line plus two."""
    if where.members:
        first = min(start for start, _, _ in where.members.values())
        if "\n" in text[where.open:first]:
            return _indent_at(text, first)
    return _indent_at(text, where.open) + "  "


def _dump(value: Any, indent: str) -> str:
    """``value`` as JSON (2-space indent), its later lines indented to sit at ``indent``."""
    return json.dumps(value, indent=2, ensure_ascii=False).replace("\n", "\n" + indent)


def _insert_member(text: str, where: _Object, key: str, value: Any) -> str:
    """``text`` with ``"key": value`` added as the object's last member."""
    indent = _member_indent(text, where)
    member = f"{json.dumps(key, ensure_ascii=False)}: {_dump(value, indent)}"
    if where.last_end is None:  # an empty object (comments inside it stay after the new member)
        closing = "\n" + _indent_at(text, where.open) if "\n" not in text[where.open:where.close] else ""
        return f"{text[:where.open + 1]}\n{indent}{member}{closing}{text[where.open + 1:]}"
    after = _SPACE.match(text, where.last_end).end()  # type: ignore[union-attr]
    if text.startswith(",", after):  # a trailing comma already there
        head, at = text[:after + 1], after + 1
    else:
        head, at = text[:where.last_end] + ",", where.last_end
    rest = text[at:]
    line_comment = re.match(r"(?:[ \t]*(?://[^\n]*|/\*[^\n]*?\*/))+", rest)  # comments ending its line stay there
    if line_comment:
        head, rest = head + line_comment.group(), rest[line_comment.end():]
    return f"{head}\n{indent}{member}{rest}"


def set_jsonc(text: str, servers_key: str, name: str, entry: Any, expected: dict[str, Any]) -> str:
    """``text`` with ``[servers_key][name]`` set to ``entry`` (replacing that value, or adding the
    member, or adding ``servers_key`` itself), everything else as it was. ``expected`` is the whole
    file's data afterwards, which the new text must read back as. A file whose every line ends in CRLF
    (Windows) gets CRLF on the lines added."""
    if "\r\n" in text and text.count("\n") == text.count("\r\n"):
        return set_jsonc(text.replace("\r\n", "\n"), servers_key, name, entry, expected).replace("\n", "\r\n")
    if not text.strip():
        return json.dumps(expected, indent=2, ensure_ascii=False) + "\n"
    _, top = read_jsonc(text)
    if top is None:
        raise EditError("the file does not hold an object")
    servers = top.children.get(servers_key)
    if servers_key not in top.members:
        new = _insert_member(text, top, servers_key, {name: entry})
    elif servers is None:
        raise EditError(f'"{servers_key}" is not an object')
    elif name in servers.members:
        key_start, start, end = servers.members[name]
        new = text[:start] + _dump(entry, _indent_at(text, key_start)) + text[end:]
    else:
        new = _insert_member(text, servers, name, entry)
    if read_jsonc(new)[0] != expected:
        raise EditError("the edit would not read back as meant")
    return new


# -- TOML ------------------------------------------------------------------------------------------

def read_toml(text: str) -> dict[str, Any]:
    """The data of a TOML text, as plain Python (``tomllib``); ``EditError`` naming line and column."""
    import tomllib

    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise EditError(f"is not valid TOML: {exc}") from None
    except (RecursionError, ValueError) as exc:  # nesting past Python's stack; an integer past its limit
        raise EditError(f"is not TOML ctx setup can read ({type(exc).__name__})") from None


def set_toml(text: str, servers_key: str, name: str, entry: dict[str, Any], drop: frozenset[str],
             expected: dict[str, Any]) -> str:
    """``text`` with the table ``[servers_key.name]`` holding ``entry``: an existing table keeps its
    other keys and comments, loses the keys in ``drop`` (another transport's) and takes ``entry``'s
    values; a new one is added. ``tomlkit`` keeps every other line as written; a file whose every line
    ends in CRLF gets CRLF on the lines added."""
    if "\r\n" in text and text.count("\n") == text.count("\r\n"):
        return set_toml(text.replace("\r\n", "\n"), servers_key, name, entry, drop, expected).replace("\n", "\r\n")
    import tomlkit
    from tomlkit.items import Table

    try:
        document = tomlkit.parse(text)
    except Exception as exc:  # tomlkit's ParseError, or RecursionError on hostile nesting
        raise EditError(f"is not TOML ctx setup can edit: {exc}") from None
    servers = document.get(servers_key)
    if servers is None:
        servers = tomlkit.table(is_super_table=True)
        document.append(servers_key, servers)
    elif not isinstance(servers, dict):
        raise EditError(f"has {servers_key} set to a {type(servers.unwrap()).__name__}, not a table of servers")
    current = servers.get(name)
    if isinstance(current, Table):
        for key in [k for k in current if k in drop and k not in entry]:
            del current[key]
        for key, value in entry.items():
            current[key] = value
    else:
        table = tomlkit.table()
        for key, value in entry.items():
            table[key] = value
        if isinstance(current, dict):  # an inline table: its other keys are kept
            for key, value in current.items():
                if key not in drop and key not in entry:
                    table[key] = value
        table.add(tomlkit.nl())
        servers[name] = table
    new = tomlkit.dumps(document)
    if new.endswith("\n\n") and not text.endswith("\n\n"):  # the blank line after a table added last
        new = new.rstrip("\n") + "\n"
    if read_toml(new) != expected:
        raise EditError("the edit would not read back as meant")
    return new
