"""``changelog``: one document per ``## <version>`` section of a Markdown changelog file.

A connector type is a factory ``(name, entry, config) -> Connector``; the class itself is one.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from context_harness.extensions import Candidate, ConfigError, ScanReport, SourceItem

_SECTION = re.compile(r"^## +(.+?)\s*$", re.MULTILINE)


class ChangelogConnector:
    type = "changelog"

    def __init__(self, name: str, entry: dict[str, Any], config: Any = None) -> None:
        self.name = name
        raw = (entry or {}).get("path")
        if not isinstance(raw, str):
            raise ConfigError(f"connectors.changelog.{name}.path: required string")
        path = Path(raw).expanduser()
        base = getattr(config, "base_dir", None)
        self.path = path if path.is_absolute() or base is None else base / path

    @property
    def label(self) -> str:
        return f"{self.type}:{self.name}"

    def scan(self, report: ScanReport) -> Iterator[Candidate]:
        try:
            text = self.path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            report.skip("unreadable", f"{self.path}: cannot read")
            return
        heads = list(_SECTION.finditer(text))
        for i, head in enumerate(heads):
            end = heads[i + 1].start() if i + 1 < len(heads) else len(text)
            version = head.group(1)
            body = text[head.start():end].strip()
            item = SourceItem(source_id=version, body=body, title=f"Changes in {version}",
                              tags=["changelog"], source_url=self.path.as_uri())
            fingerprint = hashlib.sha256(body.encode()).hexdigest()
            yield Candidate(version, fingerprint, lambda item=item: item)
