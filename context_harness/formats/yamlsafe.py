"""The one YAML loader for what users and strangers write (note front matter, agent and skill files).

PyYAML's ``safe_load`` builds nothing dangerous, but it is unbounded: an alias names a node already
built, so nine lines of aliases to aliases ("billion laughs") read in milliseconds and hold 9^8
strings, which the first walk over them (a note's metadata, an agent's listing) expands into
gigabytes and minutes. ``load`` is ``safe_load`` with three bounds, each refused with ``Refused``
(a ``ValueError``) whose message says what to change:

- **no aliases** (``*name``, and so no ``<<: *name`` merges); an anchor alone is harmless and kept;
- **at most ``MAX_BYTES``** of YAML (64 KiB: front matter is a few lines);
- **at most ``MAX_DEPTH`` levels** of nested lists and mappings (the composer recurses per level).

Parsing is libyaml's where PyYAML has it (64 KiB of the densest YAML reads in ~0.2 s; PyYAML's own
scanner takes ~1.5 s). Everything else reads as ``safe_load`` reads it: dates and timestamps, lists,
numbers, booleans. A value that looks like a date but is none (``2024-02-30``) stays the string it
is rather than failing the whole document, and so does an integer past Python's 4,300-digit limit.
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.nodes import Node, ScalarNode
from yaml.resolver import Resolver

MAX_BYTES = 64 * 1024
MAX_DEPTH = 64


class Refused(ValueError):
    """YAML past one of the bounds (see the module docstring); the message names it."""


if yaml.__with_libyaml__:  # libyaml's parser (~10x faster), our composer and the safe constructor
    from yaml.cyaml import CParser

    class _Loader(Composer, CParser, SafeConstructor, Resolver):
        def __init__(self, stream: str) -> None:
            CParser.__init__(self, stream)
            Composer.__init__(self)
            SafeConstructor.__init__(self)
            Resolver.__init__(self)
else:  # pragma: no cover - a PyYAML built without libyaml: the same, in Python
    _Loader = yaml.SafeLoader  # type: ignore[misc]


class _BoundedLoader(_Loader):
    depth = 0
    first_line = 1  # the line of the file the YAML starts on, for the messages

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            line = event.start_mark.line + self.first_line
            raise Refused(f"line {line}: YAML aliases (*{event.anchor}) are not read; write the value out instead")
        self.depth += 1
        try:
            if self.depth > MAX_DEPTH:
                mark = self.peek_event().start_mark
                raise Refused(f"line {mark.line + self.first_line}: nested more than {MAX_DEPTH} levels deep")
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1

    def fetch_flow_collection_start(self, TokenClass: Any) -> None:
        # PyYAML's own scanner (without libyaml) looks ahead over every open flow collection at each
        # token (quadratic: 1,000 ``[`` took 0.4 s before the composer's bound), so it is bounded here.
        if self.flow_level >= MAX_DEPTH:
            raise Refused(f"line {self.line + self.first_line}: nested more than {MAX_DEPTH} levels deep")
        super().fetch_flow_collection_start(TokenClass)

    def construct_yaml_timestamp(self, node: ScalarNode) -> Any:
        try:
            return super().construct_yaml_timestamp(node)
        except ValueError:  # 2024-02-30, 2024-13-01: not a date, so the text it is
            return self.construct_scalar(node)

    def construct_yaml_int(self, node: ScalarNode) -> Any:
        try:
            return super().construct_yaml_int(node)
        except ValueError:  # more digits than Python converts
            return self.construct_scalar(node)


_BoundedLoader.add_constructor("tag:yaml.org,2002:timestamp", _BoundedLoader.construct_yaml_timestamp)
_BoundedLoader.add_constructor("tag:yaml.org,2002:int", _BoundedLoader.construct_yaml_int)


class _PlainDumper(yaml.SafeDumper):
    def ignore_aliases(self, data: Any) -> bool:
        return True  # a value used twice is written twice: ``load`` reads no aliases


def dump(data: Any) -> str:
    """``data`` as block YAML that ``load`` reads back: no aliases, keys in their order, Unicode as is,
    no line folding."""
    return yaml.dump(data, Dumper=_PlainDumper, sort_keys=False, allow_unicode=True, width=1_000_000)


def load(text: str, *, first_line: int = 1) -> Any:
    """``text``'s one YAML document as ``yaml.safe_load`` reads it, within the bounds; ``Refused``
    past one, ``yaml.YAMLError`` for what is not YAML. ``first_line``: the line of its file ``text``
    starts on (the refusals name lines of the file)."""
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_BYTES:
        raise Refused(f"{size:,} bytes of YAML; at most {MAX_BYTES // 1024} KiB are read")
    loader = _BoundedLoader(text)
    loader.first_line = first_line
    try:
        return loader.get_single_data()
    except Refused:
        raise
    except RecursionError:  # the bounds keep the composer well inside the stack; a belt for the braces
        raise Refused(f"nested more than {MAX_DEPTH} levels deep") from None
    except yaml.YAMLError as exc:
        if "nesting depth" in str(exc):  # libyaml's own bound (1,000 flow levels), met before ours
            raise Refused(f"nested more than {MAX_DEPTH} levels deep") from None
        raise
    except (ValueError, TypeError, OverflowError) as exc:  # a tagged value Python cannot build: !!float x
        raise Refused(f"a value YAML cannot build ({exc.__class__.__name__})") from None
    finally:
        loader.dispose()


__all__ = ["MAX_BYTES", "MAX_DEPTH", "Refused", "dump", "load"]
