"""Source code read as code: which files are code, their syntax trees, and the symbols they define.

A file is code when its extension names one of ``LANGUAGES`` (Python, JavaScript, TypeScript and TSX,
Go, Rust, Java, C, C++, C#, Ruby, PHP, Lua). Its content type is ``text/x-code; language=NAME``
(``content_type``), which the chunker (``ingest/code_chunking.py``) and the keyword index
(``store/keyword.py``) read back with ``language_of``. Trees come from tree-sitter with the grammars of
``tree-sitter-language-pack`` (the ``code`` extra; without it code is read as text). A file is parsed
only when it is at most ``MAX_PARSE_BYTES`` long and has no line longer than ``MAX_LINE_BYTES``
(minified code has no symbols worth a chunk), and its tree is used only when tree-sitter found no
syntax error in it: anything else is read as text, and ``parse`` says why.

A *definition* is a function, method, class, struct, enum, interface, trait, impl block, namespace or
module; its *symbol path* joins the names it sits in with dots: ``harness.Harness.open`` for the method
``open`` of the class ``Harness`` in ``harness.py``. The first part is the file's module name (its
stem; the folder's name for ``__init__.py``, ``index.js``, ``mod.rs``, ``lib.rs`` and ``main.go``). Go
methods sit under their receiver's type, Rust functions under their ``impl`` block's type, C++ out-of-class
definitions (``void Foo::run()``) under their qualifier. Nested definitions are walked into only inside
containers (classes, impl blocks, namespaces): a function's inner helpers belong to it.

``identifier_words`` splits ``openStores`` and ``HTTPServer`` into their words, so that the keyword
index can find an identifier by its parts (``open_stores`` the analysis splits at its underscore).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

CODE_TYPE = "text/x-code"
MAX_PARSE_BYTES = 2_000_000  # larger files are read as text (the connectors' default max_file_size)
MAX_LINE_BYTES = 5_000  # a longer line: minified or generated code, read as text
MAX_DEPTH = 16  # containers nested deeper are kept whole inside the one above them

LANGUAGES: dict[str, str] = {  # extension -> tree-sitter-language-pack grammar
    ".py": "python", ".pyi": "python",
    ".js": "javascript", ".mjs": "javascript", ".cjs": "javascript", ".jsx": "javascript",
    ".ts": "typescript", ".mts": "typescript", ".cts": "typescript", ".tsx": "tsx",
    ".go": "go", ".rs": "rust", ".java": "java", ".c": "c",
    ".h": "cpp", ".cc": "cpp", ".cpp": "cpp", ".cxx": "cpp", ".hh": "cpp", ".hpp": "cpp", ".hxx": "cpp",
    ".cs": "csharp", ".rb": "ruby", ".php": "php", ".lua": "lua",
}
CODE_GLOBS = [f"**/*{ext}" for ext in LANGUAGES]
"""What the ``@code`` preset of ``include_globs`` stands for."""

_PACKAGE_FILES = {"__init__", "index", "mod", "lib", "main"}
_ATTACHED = {"comment", "line_comment", "block_comment", "attribute_item", "decorator"}
_NAMED = {  # language -> node types that define a symbol named by their ``name`` field
    "python": {"function_definition", "class_definition"},
    "javascript": {"function_declaration", "generator_function_declaration", "class_declaration",
                   "method_definition"},
    "go": {"function_declaration"},
    "rust": {"function_item", "struct_item", "enum_item", "union_item", "trait_item", "mod_item",
             "macro_definition", "type_item"},
    "java": {"class_declaration", "interface_declaration", "enum_declaration", "record_declaration",
             "method_declaration", "constructor_declaration", "annotation_type_declaration"},
    "c": {"struct_specifier", "enum_specifier", "union_specifier"},
    "csharp": {"namespace_declaration", "class_declaration", "interface_declaration", "struct_declaration",
               "enum_declaration", "record_declaration", "method_declaration", "constructor_declaration"},
    "ruby": {"module", "class", "method", "singleton_method"},
    "php": {"class_declaration", "interface_declaration", "trait_declaration", "enum_declaration",
            "function_definition", "method_declaration"},
    "lua": {"function_declaration"},
}
_NAMED["typescript"] = _NAMED["javascript"] | {"abstract_class_declaration", "interface_declaration",
                                               "type_alias_declaration", "enum_declaration", "internal_module",
                                               "abstract_method_definition", "function_signature"}
_NAMED["tsx"] = _NAMED["typescript"]
_NAMED["cpp"] = _NAMED["c"] | {"class_specifier", "namespace_definition"}
_CONTAINERS = {  # node types whose ``body`` field holds definitions walked into
    "class_definition", "class_declaration", "abstract_class_declaration", "internal_module", "trait_item",
    "impl_item", "mod_item", "interface_declaration", "enum_declaration", "record_declaration",
    "class_specifier", "struct_specifier", "namespace_definition", "struct_declaration", "namespace_declaration",
    "trait_declaration", "module", "class",
}
_TRANSPARENT = {"enum_body_declarations"}  # walked through as if their children stood in their parent
_WRAPPERS = {"decorated_definition": "definition", "export_statement": "declaration"}
_FUNCTION_VALUES = {"arrow_function", "function_expression", "function", "generator_function", "class"}
_DECLARATOR_NAMES = {"identifier", "field_identifier", "qualified_identifier", "destructor_name",
                     "operator_name", "type_identifier"}
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_local = threading.local()


@dataclass(frozen=True)
class Definition:
    """One definition among a container's children: its name, where its chunk starts (with the
    comments and attributes right above it), the node, and the node holding its members (None: not
    walked into)."""

    name: str
    start: int  # byte offset
    node: Any
    body: Any | None


def content_type(language: str) -> str:
    return f"{CODE_TYPE}; language={language}"


def language_of(content_type: str | None) -> str | None:
    """The grammar a content type names (``text/x-code; language=go`` -> ``go``), else None."""
    if not content_type or not content_type.startswith(CODE_TYPE):
        return None
    _, _, language = content_type.partition("language=")
    language = language.strip()
    return language if language in _NAMED else None


def language_for(path: str) -> str | None:
    """The grammar of a file by its extension (any case), else None."""
    return LANGUAGES.get(PurePosixPath(path).suffix.lower())


def module_name(path: str) -> str:
    """The first part of a file's symbol paths: its stem, or its folder's name for a package's file."""
    pure = PurePosixPath(path)
    if pure.stem in _PACKAGE_FILES and pure.parent.name:
        return pure.parent.name
    return pure.stem or pure.name


def expand_globs(globs: list[str], default: list[str]) -> list[str]:
    """``include_globs`` with its presets replaced: ``@code`` by the globs of every code extension,
    ``@default`` by ``default`` (the globs a source has when it sets none)."""
    out: list[str] = []
    for glob in globs:
        out.extend(CODE_GLOBS if glob.strip() == "@code" else default if glob.strip() == "@default" else [glob])
    return list(dict.fromkeys(out))


def _parser(language: str) -> Any:
    """This thread's parser for ``language`` (a tree-sitter parser is not to be shared between threads:
    the chunker and the keyword index parse at the same time)."""
    parsers: dict[str, Any] | None = getattr(_local, "parsers", None)
    if parsers is None:
        parsers = _local.parsers = {}
    if language not in parsers:
        from tree_sitter_language_pack import get_parser

        parsers[language] = get_parser(language)  # type: ignore[arg-type]
    return parsers[language]


def available() -> bool:
    """Whether the ``code`` extra (tree-sitter grammars) is installed."""
    try:
        import tree_sitter_language_pack  # noqa: F401
    except ImportError:
        return False
    return True


class Unparsed(Exception):
    """Why a file is read as text instead of as code; ``general`` when the reason is no file's own
    (the grammars are not installed), said once rather than for every file."""

    def __init__(self, reason: str, general: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.general = general


def parse(source: bytes, language: str) -> Any:
    """The syntax tree of ``source``; ``Unparsed`` when it is too large, minified, not parsable or holds
    syntax errors, or the grammars are not installed."""
    if len(source) > MAX_PARSE_BYTES:
        raise Unparsed(f"larger than {MAX_PARSE_BYTES:,} bytes")
    if any(len(line) > MAX_LINE_BYTES for line in source.split(b"\n")):
        raise Unparsed(f"a line longer than {MAX_LINE_BYTES:,} bytes (minified?)")
    try:
        parser = _parser(language)
    except ImportError:
        raise Unparsed("the code extra (tree-sitter) is not installed: pip install 'context-harness[code]'",
                       general=True) from None
    except Exception as exc:  # LookupError and the pack's own errors: a grammar it cannot load
        raise Unparsed(f"no {language} grammar ({type(exc).__name__})", general=True) from None
    tree = parser.parse(source)
    if tree is None:
        raise Unparsed("tree-sitter could not parse it")
    if tree.root_node.has_error:
        row = _first_error(tree.root_node)
        raise Unparsed("tree-sitter found a syntax error" + (f" on line {row + 1}" if row is not None else ""))
    return tree


def _first_error(node: Any) -> int | None:
    """The row of the first error or missing node (looking only where errors are)."""
    while True:
        if node.is_error or node.is_missing:
            return int(node.start_point[0])
        child = next((c for c in node.children if c.has_error or c.is_error or c.is_missing), None)
        if child is None:
            return None
        node = child


def _text(node: Any) -> str:
    return node.text.decode("utf-8", "replace") if node is not None and node.text is not None else ""


def _unwrap(node: Any) -> Any:
    """The definition a wrapper (decorators, ``export``, ``template<...>``, a TypeScript ``namespace``'s
    statement) holds, or ``node``."""
    for _ in range(4):
        field = _WRAPPERS.get(node.type)
        inner = node.child_by_field_name(field) if field else None
        if node.type == "expression_statement" and node.named_child_count == 1:
            inner = node.named_children[0] if node.named_children[0].type == "internal_module" else None
        if node.type == "template_declaration":
            inner = next((c for c in node.named_children if c.type not in ("template_parameter_list",)), None)
        if inner is None:
            return node
        node = inner
    return node


def _declarator_name(node: Any) -> str | None:
    """The name a C/C++ declarator chain ends in (``Foo::run`` as ``Foo.run``)."""
    for _ in range(16):
        if node is None:
            return None
        if node.type in _DECLARATOR_NAMES:
            return _text(node).replace("::", ".").replace(" ", "")
        node = node.child_by_field_name("declarator") or next(
            (c for c in node.named_children if c.type in _DECLARATOR_NAMES), None)
    return None


def _receiver(node: Any) -> str | None:
    """A Go method's receiver type (``func (h *Harness) Open()`` -> ``Harness``)."""
    receiver = node.child_by_field_name("receiver")
    if receiver is None:
        return None
    words = re.findall(r"[A-Za-z_]\w*", _text(receiver).strip("()"))
    return words[-1] if words else None


def _type_name(node: Any) -> str | None:
    text = _text(node)
    match = re.match(r"[A-Za-z_][\w:]*", text.split("<", 1)[0].split("[", 1)[0].strip())
    return match.group(0).replace("::", ".") if match else None


def _definition_name(node: Any, language: str) -> str | None:
    """The symbol name of ``node`` when it is a definition in ``language``, else None."""
    kind = node.type
    if kind in _NAMED[language]:
        if kind in ("struct_specifier", "enum_specifier", "union_specifier", "class_specifier") and \
                node.child_by_field_name("body") is None:
            return None  # a use of the type, not its definition
        name = node.child_by_field_name("name")  # Lua's M.open and M:close, C++'s and Ruby's A::B
        return _text(name).replace("::", ".").replace(":", ".") if name is not None else None
    if language == "go":
        if kind == "method_declaration":
            name, owner = _text(node.child_by_field_name("name")), _receiver(node)
            return f"{owner}.{name}" if owner else name
        if kind == "type_declaration":
            spec = next((c for c in node.named_children if c.type in ("type_spec", "type_alias")), None)
            return _text(spec.child_by_field_name("name")) if spec is not None else None
    if language == "rust" and kind == "impl_item":
        return _type_name(node.child_by_field_name("type"))
    if language in ("c", "cpp"):
        if kind == "function_definition":
            return _declarator_name(node.child_by_field_name("declarator"))
        if kind == "type_definition":
            return _declarator_name(node.child_by_field_name("declarator"))
        if kind == "declaration":
            inner = node.child_by_field_name("type")
            return _definition_name(inner, language) if inner is not None else None
    if language in ("javascript", "typescript", "tsx") and kind in ("lexical_declaration", "variable_declaration"):
        for declarator in node.named_children:
            value = declarator.child_by_field_name("value")
            if declarator.type == "variable_declarator" and value is not None and value.type in _FUNCTION_VALUES:
                return _text(declarator.child_by_field_name("name")) or None
    return None


def _members(node: Any) -> Any | None:
    """The node whose children are ``node``'s members, when it is a container (else None)."""
    if node.type in ("declaration", "type_definition"):
        node = node.child_by_field_name("type")
        if node is None:
            return None
    if node.type not in _CONTAINERS:
        return None
    return node.child_by_field_name("body")


def _children(node: Any) -> Iterator[Any]:
    for child in node.children:
        if child.type in _TRANSPARENT:
            yield from child.children
        else:
            yield child


def _last_row(node: Any) -> int:
    """The last line ``node`` has text on (a line comment's span may end at the next line's start)."""
    row, column = node.end_point
    return int(row) - 1 if column == 0 and row > node.start_point[0] else int(row)


def definitions(container: Any, language: str) -> Iterator[Definition]:
    """The definitions among ``container``'s children, in order, each starting at the comments and
    attributes right above it (a blank line between two of them parts them; a comment on the line
    where code ends is that code's)."""
    attached: int | None = None
    previous_row = -1  # the last line of the previous child
    for child in _children(container):
        node = _unwrap(child)
        name = _definition_name(node, language)
        row = int(child.start_point[0])
        if name is not None:
            yield Definition(name, attached if attached is not None else child.start_byte, child, _members(node))
            attached = None
        elif child.type in _ATTACHED and row > previous_row:
            if attached is None or row - previous_row > 1:
                attached = child.start_byte
        else:
            attached = None
        previous_row = _last_row(child)


def symbol_paths(tree: Any, language: str, module: str) -> list[str]:
    """Every definition's symbol path in the tree, in order (containers walked into, ``MAX_DEPTH`` deep)."""
    out: list[str] = []
    stack: list[tuple[Any, str, int]] = [(tree.root_node, module, 0)]
    while stack:
        container, path, depth = stack.pop()
        found = []
        for d in definitions(container, language):
            out.append(f"{path}.{d.name}")
            if d.body is not None and depth < MAX_DEPTH:
                found.append((d.body, f"{path}.{d.name}", depth + 1))
        stack.extend(reversed(found))
    return out


def file_symbols(body: str, language: str, path: str) -> list[str]:
    """The symbol paths of a file's text, or none when it is read as text (``parse`` raises)."""
    try:
        tree = parse(body.encode("utf-8"), language)
    except Unparsed:
        return []
    return symbol_paths(tree, language, module_name(path))


def identifier_words(text: str) -> list[str]:
    """The words of the camelCase identifiers in ``text`` (``openStores`` -> ``open Stores``,
    ``HTTPServer`` -> ``HTTP Server``), each identifier once, in order of first use. Others are left out:
    the text's own analysis splits ``open_stores`` at its underscore already, and has single words."""
    out: list[str] = []
    for identifier in dict.fromkeys(_IDENTIFIER.findall(text)):
        words = [w for part in identifier.split("_") for w in _CAMEL.findall(part)]
        if len(words) > len(identifier.strip("_").split("_")):  # a part of it splits at a capital
            out.extend(words)
    return out


__all__ = ["CODE_GLOBS", "CODE_TYPE", "LANGUAGES", "Definition", "Unparsed", "available", "content_type",
           "definitions", "expand_globs", "file_symbols", "identifier_words", "language_for", "language_of",
           "module_name", "parse", "symbol_paths"]
