"""``language`` of a connector table: what its documents are written in, for keyword search."""

from __future__ import annotations

from pydantic import BaseModel, Field, field_validator

from context_harness.common import analysis


class LanguageField(BaseModel):
    """``language``: what the source's documents are written in, for keyword search (common/analysis.py)."""

    language: str = Field(default="auto", description='the language of this source\'s documents for keyword search: '
                          '"auto" (detected per document) or an ISO 639-1 code such as "en", "de", "zh", "th"; '
                          'words are stemmed in it where a stemmer exists')

    @field_validator("language")
    @classmethod
    def _known_language(cls, value: str) -> str:
        code = value.strip().lower()
        if code != analysis.AUTO and code not in analysis.LANGUAGES:
            stemmed = ", ".join(sorted(analysis.STEMMERS))
            raise ValueError(f'unknown language {value!r}: expected "auto" or an ISO 639-1 code such as "en", "de", '
                             f'"zh", "ja", "ko", "th" (stemmed: {stemmed})')
        return code
