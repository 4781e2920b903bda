"""Secrets never leave the process: the one place that knows them and scrubs them from text.

What counts as a secret, learnt when a config is read (``remember``, called by ``config.from_dict``):

- every value a ``${VAR}`` reference expanded to (``${VAR:-default}`` too, when the variable is set),
  except where it names a file or folder (a key such as ``path`` or ``root``, or an absolute path
  that exists): paths are not secrets, and hiding them would blind every message naming a file;
- every string under a key that names a secret (``auth_token``, ``api_key``, ``password`` ...);
- the credentials in any URL of the config (``https://user:pass@host``);
- the values of the variables Lua scripts may read (``[lua] env_allow``).

Where it is applied: every ``HarnessError`` message (so every error on every rim: MCP, REST, the
CLI, ``sources``' ``last_error``), and every log record (a record factory, so every logger and
handler, tracebacks included). Besides the secrets it knows, ``redact`` always hides the
credentials of any URL (``scheme://user:pass@`` -> ``scheme://***@``, up to the last ``@`` before the
host, as a URL parser reads it), whoever wrote the text (git's own error lines, say). Values shorter
than ``MIN_LENGTH`` are not treated as secrets (they would hide ordinary words).

A secret is hidden in the forms an echo gives it too (a model endpoint quoting the request back): JSON
escapes of any of its characters (``\\/``, ``\\u0073``, with the backslashes a ``repr`` doubles), and
base64 (standard or URL-safe, at any of the three alignments inside a longer base64 text, as a
``Basic`` header holds ``user:pass``: the groups that the secret alone decides, when they make at
least ``MIN_BASE64`` characters).

The secrets are process-wide on purpose: a log line from any thread, or an error raised before a
``Harness`` exists, must be scrubbed too. One process serves one user's configs, so hiding one
config's secrets in another's output can only hide more, never less.
"""

from __future__ import annotations

import base64
import logging
import os
import re
import threading
from collections.abc import Iterable
from typing import Any

MASK = "***"
MIN_LENGTH = 6
MIN_BASE64 = 8  # characters of a base64 fragment hidden as a secret's (4 would hide ordinary words)
SECRET_KEYS = re.compile(r"(^|_)(token|secret|password|passwd|credentials?|auth|(api|access|private|secret)_?key)($|_)",
                         re.IGNORECASE)
PATH_KEYS = re.compile(r"(^|_)(path|paths|root|dir|folder|folders|file|files)$", re.IGNORECASE)
ENV_LISTS = ("env_allow", "env")
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-(.*?))?\}")
# A database URL's lone user (postgresql://postgres@host/db) names a role, not a secret: masking it
# hid the word "postgres" in every message.
DATABASE_SCHEMES = ("postgres", "mysql", "mariadb")
_ESCAPES = re.compile(r'\\(?:u[0-9a-fA-F]{4}|[/"\\])')  # a JSON escape: a secret may hide behind one
_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<userinfo>[^/?#@\s'\"]+(?:@[^/?#@\s'\"]*)*)@")


class Redactor:
    """The known secrets and ``redact``; one per process (``REDACTOR``)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._secrets: set[str] = set()
        self._encoded: set[str] = set()  # the secrets' base64 pieces
        self._pattern: re.Pattern[str] | None = None  # the secrets and their base64 pieces, as they are
        self._escaped: re.Pattern[str] | None = None  # the secrets with any character JSON-escaped

    def add(self, values: Iterable[str]) -> None:
        fresh = {v for v in values if isinstance(v, str) and len(v.strip()) >= MIN_LENGTH} - self._secrets
        if not fresh:
            return
        with self._lock:
            self._secrets |= fresh
            self._encoded |= {piece for secret in fresh for piece in _base64_pieces(secret)}
            ordered = sorted(self._secrets, key=len, reverse=True)  # longest first: no partial leftovers
            literal = sorted(self._secrets | self._encoded, key=len, reverse=True)
            self._pattern = re.compile("|".join(re.escape(s) for s in literal))
            self._escaped = re.compile("|".join(_escapable(s) for s in ordered))

    def redact(self, text: str) -> str:
        if not isinstance(text, str) or not text:
            return text
        if "@" in text:
            text = _USERINFO.sub(lambda m: f"{m['scheme']}{MASK}@", text)
        pattern = self._pattern
        if pattern is None:
            return text
        text = pattern.sub(MASK, text)
        escaped = self._escaped
        return escaped.sub(MASK, text) if escaped is not None and _ESCAPES.search(text) else text

    def forget_all(self) -> None:
        """For tests: start again knowing no secrets."""
        with self._lock:
            self._secrets.clear()
            self._encoded.clear()
            self._pattern = self._escaped = None


def _escapable(secret: str) -> str:
    """A pattern of ``secret`` with any character as it is or JSON-escaped (``\\u0073``, ``\\/``), the
    backslash doubled any number of times (a ``repr`` of JSON text)."""
    parts = []
    for char in secret:
        forms = [re.escape(char)]
        code = ord(char)
        if code < 0x10000:
            forms.append(r"\\+u" + "".join(f"[{h}{h.upper()}]" if h.isalpha() else h for h in f"{code:04x}"))
        if char in "/\"\\":
            forms.append(r"\\+" + re.escape(char))
        parts.append("(?:" + "|".join(forms) + ")")
    return "".join(parts)


def _base64_pieces(secret: str) -> set[str]:
    """The base64 characters that ``secret`` alone decides wherever it lies in a longer encoded text
    (one run per alignment, standard and URL-safe alphabets), each at least ``MIN_BASE64`` long."""
    data = secret.encode("utf-8", "surrogatepass")
    pieces = set()
    for skip in range(3):  # the secret's first bytes that share a group with what comes before it
        whole = data[skip:][:(len(data) - skip) // 3 * 3]
        piece = base64.b64encode(whole).decode("ascii")
        if len(piece) >= MIN_BASE64:
            pieces |= {piece, piece.replace("+", "-").replace("/", "_")}
    return pieces


REDACTOR = Redactor()


def redact(text: str) -> str:
    """``text`` without any secret this process knows, nor any URL's credentials."""
    return REDACTOR.redact(text)


def remember(raw: Any, expanded: Any, environ: dict[str, str] | None = None) -> None:
    """Learn the secrets of a config: ``raw`` is the parsed TOML before ``${VAR}`` expansion,
    ``expanded`` after. Installs the log record scrubber on first use."""
    env = os.environ if environ is None else environ
    found: list[str] = []
    _walk(raw, expanded, "", env, found)
    REDACTOR.add(found)
    install_log_scrubber()


def _walk(raw: Any, expanded: Any, key: str, env: Any, found: list[str]) -> None:
    if isinstance(raw, dict) and isinstance(expanded, dict):
        for k, v in raw.items():
            _walk(v, expanded.get(k), str(k), env, found)
    elif isinstance(raw, list) and isinstance(expanded, list):
        if key in ENV_LISTS:  # names of variables scripts may read (``[lua] env_allow``)
            found.extend(env[name] for name in expanded if isinstance(name, str) and name in env)
        for r, e in zip(raw, expanded, strict=False):
            _walk(r, e, key, env, found)
    elif isinstance(raw, str) and isinstance(expanded, str):
        if SECRET_KEYS.search(key):
            found.append(expanded)
        elif not PATH_KEYS.search(key):
            for match in _VAR.finditer(raw):
                value = env.get(match.group(1))
                if value is not None and not (os.path.isabs(value) and os.path.exists(value)):
                    found.append(value)
        for match in _USERINFO.finditer(expanded):
            user, _, password = match["userinfo"].partition(":")
            if password:
                found.extend([match["userinfo"], password])
            elif not match["scheme"].lower().startswith(DATABASE_SCHEMES):
                found.append(user)  # a lone userinfo (https://TOKEN@host) is a token; a database's is a role


# -- log records ---------------------------------------------------------------------------------

_installed = False
_install_lock = threading.Lock()


def install_log_scrubber() -> None:
    """Wrap the logging record factory once: each record's message (arguments merged) and
    traceback text are redacted when the record is made, before any handler sees it."""
    global _installed
    with _install_lock:
        if _installed:
            return
        previous = logging.getLogRecordFactory()

        def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
            record = previous(*args, **kwargs)
            return scrub(record)

        logging.setLogRecordFactory(factory)
        _installed = True


def scrub(record: logging.LogRecord) -> logging.LogRecord:
    try:
        message = record.getMessage()
    except Exception:  # a malformed record: leave it to logging's own error report
        return record
    clean = redact(message)
    if clean != message:
        # Keep the record's shape where possible (formatters such as uvicorn's read ``args``).
        if isinstance(record.msg, str):
            record.msg = redact(record.msg)
        if isinstance(record.args, tuple):
            record.args = tuple(redact(a) if isinstance(a, str) else a for a in record.args)
        try:
            still = record.getMessage() != clean
        except Exception:
            still = True
        if still:
            record.msg, record.args = clean, None
    if record.exc_info and record.exc_info[1] is not None:
        record.exc_text = redact(logging.Formatter().formatException(record.exc_info))
    if record.stack_info:
        record.stack_info = redact(record.stack_info)
    return record


__all__ = ["MASK", "REDACTOR", "Redactor", "install_log_scrubber", "redact", "remember", "scrub"]
