"""Text analysis for keyword search, by script: the terms a document is indexed under and a query looks for.

Both keyword backends index exactly ``index_terms(...)`` and search ``query_terms(...)`` /
``phrase_terms(...)``, so they rank alike. Words of alphabetic scripts go through Tantivy's own
analysers (Rust: the simple tokenizer, lowercasing, the Snowball stemmer of the document's language);
English text gives exactly the terms of Tantivy's ``en_stem``. Python handles only what Tantivy
cannot: runs of Han, Hiragana, Katakana and Hangul become overlapping character bigrams (a lone
character stays itself; Lucene's ``CJKBigramFilter`` does the same), and Thai, Lao, Khmer and
Myanmar, written without spaces, are split into words by ICU (the ``icu4py`` wheel; character bigrams
where it is not installed). A text is checked for those scripts with one regex first, so text
without them never leaves Rust. Nothing is dropped: a token longer than ``MAX_TERM_CHARS`` is cut
into pieces of that length instead (Tantivy's ``remove_long`` discarded it).

The language of a text, when the source does not set one, is detected offline by ``py3langid``
(loaded on first use) from its first ``DETECT_CHARS`` characters.
"""

from __future__ import annotations

import functools
import re
import threading
import unicodedata
from collections.abc import Iterable
from itertools import zip_longest
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tantivy import TextAnalyzer

AUTO = "auto"
UNDETERMINED = "und"
DEFAULT = "en"  # the analysis of a query when the index holds no document yet
MAX_TERM_CHARS = 40  # a longer token is indexed as pieces of this many characters
SLICE_CHARS = 1 << 20  # index_text analyses a long text this many characters at a time
DETECT_CHARS = 400  # the prefix of a text its language is told from (py3langid walks it byte by byte in Python)
# Below this probability a detection is a guess ("Quokkas live on Rottnest island": Estonian, 0.17) and the
# text is analysed as DEFAULT: a wrong guess leaves its words unstemmed, so "quokka" missed "Quokkas".
# XQuAD paragraphs of 7 languages: 99.6-100 % kept and right, none kept wrong (zh: 4 % kept as ja/wuu, harmless).
CONFIDENT = 0.5

STEMMERS = {  # ISO 639-1 code -> the Snowball stemmer Tantivy ships for it (tantivy.Filter.stemmer)
    "ar": "arabic", "da": "danish", "de": "german", "el": "greek", "en": "english", "es": "spanish",
    "fi": "finnish", "fr": "french", "hu": "hungarian", "it": "italian", "nb": "norwegian", "nl": "dutch",
    "nn": "norwegian", "no": "norwegian", "pt": "portuguese", "ro": "romanian", "ru": "russian",
    "sv": "swedish", "ta": "tamil", "tr": "turkish",
}

DETECTED = frozenset((  # the labels py3langid 0.4.0 can return (its model's classes)
    "ace af am an ar ary arz as az ba bcl be bg bn br bs ca crh cs cy da de dz el en eo es et eu ext fa fi "
    "fo fr fuv fy ga gcf gcr gd gl gom grc gu gug guw ha hbo he hi hr ht hu hy id ig is it ja jv ka kab "
    "kik kk km kn ko ku ky la lb lg lij ln lo lt ltg lv mg mk ml mn mr ms mt my ne nl nn no nso oc om or pa "
    "pcm pl ps pt qu ro ru rw sa sdh se si sk sl sn so sq sr st sv sw ta te tg th tk tl tr tt ug uk ur uz "
    "uzs vec vi vo wa wuu xh yo yue zh zu zxx").split())

LANGUAGES = frozenset(DETECTED | set(STEMMERS) | {UNDETERMINED})
"""The codes a source may set as its ``language`` (besides ``"auto"``)."""

# Han (with radicals, ideographic marks, extensions), Bopomofo, Hiragana, Katakana (half-width too) and Hangul.
_CJK_CHARS = ("\u1100-\u11ff\u2e80-\u2fdf\u3005-\u3007\u3021-\u3029\u3031-\u3035\u3038-\u303c"
              "\u3040-\u309f\u30a0-\u30fa\u30fc-\u30ff\u3100-\u312f\u3130-\u318f\u31a0-\u31bf\u31f0-\u31ff"
              "\u3400-\u4dbf\u4e00-\u9fff\ua960-\ua97f\uac00-\ud7ff\uf900-\ufaff\uff66-\uff9f\uffa0-\uffdc"
              "\U00020000-\U0003ffff")
# Thai, Lao, Myanmar (and its extensions), Khmer (and its symbols): written without spaces between words.
_SEA_CHARS = "\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u19e0-\u19ff\ua9e0-\ua9ff\uaa60-\uaa7f"
UNSPACED_CHARS = _CJK_CHARS + _SEA_CHARS  # for a regex character class: the scripts written without spaces
_SPECIAL = re.compile(f"([{_CJK_CHARS}]+|[{_SEA_CHARS}]+)")
_CJK = re.compile(f"[{_CJK_CHARS}]")
# A word for Tantivy's regex tokenizer: what the simple tokenizer keeps (alphabetic or numeric characters)
# plus combining marks, so that a Devanagari virama or a decomposed accent does not cut a word in two.
_WORD = r"[\p{Alphabetic}\p{Nd}\p{Nl}\p{No}\p{M}]+"

_local = threading.local()  # per-thread analysers: Tantivy's need exclusive use while analysing
_detector_lock = threading.Lock()
_detector: Any = None


def stemmer_of(language: str) -> str | None:
    """The name of Tantivy's Snowball stemmer for ``language`` (an ISO code), or None when it has none."""
    return STEMMERS.get(language.lower().split("-")[0].split("_")[0])


def _analyzer(stemmer: str | None, ascii_only: bool) -> TextAnalyzer:
    """This thread's analyser: tokenise, lowercase, stem. ASCII text takes the simple tokenizer (the one
    ``en_stem`` uses); other text the regex tokenizer of ``_WORD`` (the same words, marks kept in them)."""
    cache: dict[tuple[str | None, bool], TextAnalyzer] | None = getattr(_local, "analyzers", None)
    if cache is None:
        cache = _local.analyzers = {}
    key = (stemmer, ascii_only)
    analyzer = cache.get(key)
    if analyzer is None:
        from tantivy import Filter, TextAnalyzerBuilder, Tokenizer  # not at import: config imports this module

        builder = TextAnalyzerBuilder(Tokenizer.simple() if ascii_only else Tokenizer.regex(_WORD))
        builder = builder.filter(Filter.lowercase())
        if stemmer is not None:
            builder = builder.filter(Filter.stemmer(stemmer))
        analyzer = cache[key] = builder.build()
    return analyzer


def _bounded(terms: list[str]) -> list[str]:
    """``terms`` with every one longer than ``MAX_TERM_CHARS`` cut into pieces of that length, in place."""
    if not terms or max(map(len, terms)) <= MAX_TERM_CHARS:
        return terms
    out: list[str] = []
    for term in terms:
        if len(term) <= MAX_TERM_CHARS:
            out.append(term)
        else:
            out.extend(term[i:i + MAX_TERM_CHARS] for i in range(0, len(term), MAX_TERM_CHARS))
    return out


def bigrams(run: str) -> list[str]:
    """The overlapping character pairs of ``run`` in order; a run of one character is itself."""
    if len(run) < 2:
        return [run] if run else []
    return [run[i:i + 2] for i in range(len(run) - 1)]


@functools.cache
def _word_breaker() -> Any:
    """ICU's word breaker class (``icu4py``), or None where the package is not installed."""
    try:
        from icu4py.breakers import WordBreaker
    except ImportError:  # a platform without its wheel: character bigrams instead
        return None
    return WordBreaker


def segment(run: str) -> list[str]:
    """The words of a run of Thai, Lao, Khmer or Myanmar (ICU's dictionary word breaks), every character
    kept; character bigrams where ICU is not available."""
    breaker = _word_breaker()
    if breaker is None:
        return bigrams(run)
    return _bounded([word for word in breaker(run, "th") if not word.isspace()])


def _words(text: str, stemmer: str | None, ascii_only: bool) -> list[str]:
    """The words of ``text`` through Tantivy's analyser, each at most ``MAX_TERM_CHARS`` long. A word
    the stemmer empties (Greek "όταν", Turkish "ları", a run of Arabic tatweel) stays as it was written,
    lower-cased: an empty term would be no term (PostgreSQL refuses it in a tsvector)."""
    words = _analyzer(stemmer, ascii_only).analyze(text)
    if stemmer is not None and "" in words:
        plain = _analyzer(None, ascii_only).analyze(text)
        words = ([word or written for word, written in zip(words, plain, strict=True)] if len(plain) == len(words)
                 else [word for word in words if word])
    return _bounded(words)


def _terms(text: str, stemmer: str | None) -> list[str]:
    """The analysed terms of ``text`` with ``stemmer`` (None: not stemmed)."""
    if text.isascii():
        return _words(text, stemmer, True)
    if not unicodedata.is_normalized("NFC", text):
        text = unicodedata.normalize("NFC", text)
    if not _SPECIAL.search(text):
        return _words(text, stemmer, False)
    out: list[str] = []
    for i, part in enumerate(_SPECIAL.split(text)):
        if i % 2 == 0:
            if part and not part.isspace():
                out.extend(_words(part, stemmer, False))
        elif _CJK.match(part):
            out.extend(bigrams(part))
        else:
            out.extend(segment(part))
    return out


def _detector_instance() -> Any:
    global _detector
    with _detector_lock:
        if _detector is None:
            from py3langid.langid import MODEL_FILE, LanguageIdentifier

            _detector = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
        return _detector


def detect_language(text: str) -> str:
    """The language of ``text`` as py3langid's code ("en", "zh", "th", ...), ``DEFAULT`` when the
    detector is not ``CONFIDENT`` (short notes), or "und" when it holds no letters. Offline and
    deterministic; reads the first ``DETECT_CHARS`` characters only."""
    head = text[:DETECT_CHARS]
    if not any(ch.isalpha() for ch in head):
        return UNDETERMINED
    language, probability = _detector_instance().classify(head)
    if language == "zxx":
        return UNDETERMINED
    return str(language) if probability >= CONFIDENT else DEFAULT


def resolve_language(text: str, language: str = AUTO) -> str:
    """``language``, or the detected language of ``text`` when it is "auto"."""
    return detect_language(text) if language == AUTO else language


def index_terms(text: str, language: str = AUTO) -> list[str]:
    """The indexed terms of ``text`` in order (list index = position), analysed for ``language``
    (an ISO code; "auto": detected). See the module notes."""
    return _terms(text, stemmer_of(resolve_language(text, language)))


def index_text(text: str, language: str = AUTO) -> str:
    """``index_terms(text, language)`` joined by spaces (what a whitespace-tokenised field is fed),
    analysed ``SLICE_CHARS`` at a time, so a 50 MB body never becomes one list of millions of terms
    (its peak RSS went from 511 MB to 1,169 MB that way). Slices end at a whitespace; a run without
    any for ``SLICE_CHARS`` is cut where it is (its one pair across the cut is not indexed)."""
    stemmer = stemmer_of(resolve_language(text, language))
    if len(text) <= SLICE_CHARS:
        return " ".join(_terms(text, stemmer))
    parts: list[str] = []
    start = 0
    while start < len(text):
        stop = min(start + SLICE_CHARS, len(text))
        if stop < len(text):
            space = max(text.rfind(" ", start, stop), text.rfind("\n", start, stop))
            stop = space + 1 if space > start else stop
        if terms := _terms(text[start:stop], stemmer):
            parts.append(" ".join(terms))
        start = stop
    return " ".join(parts)


def phrase_terms(text: str, language: str = AUTO) -> list[str]:
    """The terms of a quoted phrase, in order, as ``index_terms`` makes them for ``language``."""
    return index_terms(text, language)


def query_terms(text: str, languages: Iterable[str]) -> list[str]:
    """The terms a query looks for, given the languages of the indexed documents: each word as each of
    their analyses makes it, de-duplicated, in order of position (the first language's form first).
    With no languages (an empty index), English: what snippets of text never indexed stem with."""
    return list(dict.fromkeys(term for forms in query_words(text, languages) for term in forms))


def query_words(text: str, languages: Iterable[str]) -> list[tuple[str, ...]]:
    """Each term position of a query with its forms, one per language's analysis (the first language's
    first, de-duplicated): ``query_terms`` grouped by the word they come from, so a word counts once.
    A query the detector is sure of, in a language of the index, is analysed in that language alone."""
    languages = list(languages)
    stemmers = list(dict.fromkeys(stemmer_of(language) for language in languages)) or [stemmer_of(DEFAULT)]
    if len(stemmers) > 1 and (own := _own_language(text, languages)):
        stemmers = [stemmer_of(own)]
    return [tuple(dict.fromkeys(term for term in same_place if term is not None))
            for same_place in zip_longest(*(_terms(text, stemmer) for stemmer in stemmers))]


def _own_language(text: str, languages: list[str]) -> str | None:
    """The language of a query when the detector is ``CONFIDENT`` of it and documents in it are
    indexed: its words are then looked for in that language's forms alone, not also as other
    languages stem them ("older" is not also German "old"). None otherwise (a word or two, a name)."""
    head = text[:DETECT_CHARS]
    if not any(ch.isalpha() for ch in head):
        return None
    language, probability = _detector_instance().classify(head)
    return str(language) if probability >= CONFIDENT and language in languages else None


def has_cjk(text: str) -> bool:
    """Whether ``text`` holds a Han, Kana or Hangul character (indexed as character bigrams)."""
    return _CJK.search(text) is not None


def has_unspaced(text: str) -> bool:
    """Whether ``text`` holds a character of a script written without spaces (CJK, Thai, Lao, Khmer, Myanmar)."""
    return _SPECIAL.search(text) is not None


__all__ = ["AUTO", "DEFAULT", "LANGUAGES", "MAX_TERM_CHARS", "STEMMERS", "UNDETERMINED", "UNSPACED_CHARS",
           "bigrams", "detect_language", "has_cjk", "has_unspaced", "index_terms", "phrase_terms", "query_terms",
           "query_words", "resolve_language", "segment", "stemmer_of"]
