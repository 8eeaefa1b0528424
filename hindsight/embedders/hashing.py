"""The offline default embedder: deterministic feature hashing, no model, no download.

:class:`HashEmbedder` turns a text into a bag of weighted features, hashes each feature into
one of ``dimension`` buckets with a sign, and L2-normalises the result. It knows nothing about
meaning beyond a small built-in concept lexicon; it finds texts that share words, word stems,
identifier parts and (for Chinese, Japanese and Korean) characters. That is what lessons and
queries about the same tools, arguments and errors share, and the vectors are the same on
every machine and in every process.

Features of one text, after Unicode NFKC normalisation and case folding:

=====================  ==========================================================  ========
feature                example                                                     weight
=====================  ==========================================================  ========
word (stemmed)         ``paying``/``payment`` -> ``pay``, ``booking`` -> ``book``      1.0
identifier, whole      ``book_reservation`` (its parts are words too)               1.0
English stopword       ``the``, ``with``, ``not`` ...                               0.15
content-word bigram    ``travel certificat`` (stems; stopwords skipped)             0.6
char 3-grams           ``<bo boo ook oki kin ing ng>`` (words of 4+ chars)      0.3/sqrt(k)
CJK char unigram       ``用``, ``户``                                               0.5
CJK char bigram        ``用户``                                                     1.0
concept                ``credit``/``card``/``支付`` -> money, ``超时``/``timed out``    0.7
                       -> timeout, ``偏好``/``喜欢``/``prefer`` -> prefer, ...
=====================  ==========================================================  ========

Words are runs of letters and digits; ``_`` joins the parts of an identifier. The stemmer is a
light English suffix stripper (:func:`_stem`). The ``k`` char 3-grams of one word share a
total weight of 0.3, so long words do not outweigh short ones. Concepts come from a small
lexicon of generic agent-log vocabulary in English and Chinese (``_CONCEPTS``: money,
timeout, rate_limit, retry, auth, cancel, booking, search, order, prefer, install, file,
network); each member word adds one occurrence of its concept. A feature seen ``n`` times
gets ``weight * (1 + ln n)`` (sublinear tf). Texts with no word or CJK character but other
visible characters (``"?!"``, emoji) use those characters, so only empty or whitespace-only
text gives the zero vector.

Hashing uses :func:`hashlib.blake2b` (8-byte digest; bucket = digest mod ``dimension``,
sign = top bit), never Python's per-process randomised :func:`hash`, so vectors are identical
across processes, machines and ``PYTHONHASHSEED`` values. Changing any feature rule changes
the vectors; that would need a new :attr:`HashEmbedder.name` (e.g. ``hash2-384``) so stores
built with the old rules are re-embedded (docs/concepts.md#embedders-and-their-floors).
"""

from __future__ import annotations

import hashlib
import math
import re
import unicodedata
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from hindsight._errors import UsageError
from hindsight.embedders._common import FloatMatrix, check_texts

__all__ = ["DEDUP_THRESHOLD", "SIMILARITY_FLOOR", "HashEmbedder"]

# --- Thresholds (measured; see docs in HashEmbedder) ------------------------------------------

#: Default recall floor (cosine) at 384 dimensions, measured on the 2-core reference machine:
#: - related lesson/query pairs (English paraphrases, Chinese pairs, Chinese-English pairs
#:   sharing identifiers, tau-bench airline lessons vs user requests): 0.30-0.64;
#: - hand-picked unrelated pairs: -0.11-0.08;
#: - 4 million random pairs of tau-bench airline chat lines x Python stdlib docstring
#:   sentences (different domains; the score is hash-collision noise plus shared common
#:   words): mean 0.01, std 0.057, 1.5% above 0.15, 0.4% above 0.2.
#: 0.15 keeps every related pair of that set and drops 98.5% of cross-domain pairs. The floor
#: of about 0.7 suggested for learned embedders would drop almost everything here.
SIMILARITY_FLOOR = 0.15

#: Cosine above which two lessons are near-duplicates. Measured on the 24 distinct tool
#: errors of the tau-bench airline file ("<tool> failed with <error>"): the same error with
#: other ids, dates or amounts scores 0.81-0.95 (44 pairs); different errors score at most
#: 0.71, except one error text shared by two tools (0.82). Reworded lessons: 0.82-0.95.
DEDUP_THRESHOLD = 0.8


def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


# --- Feature weights ----------------------------------------------------------------------------

_W_WORD = 1.0
_W_STOPWORD = 0.15
_W_BIGRAM = 0.6
_W_CHARGRAM = 0.3
_W_CJK_UNI = 0.5
_W_CJK_BI = 1.0
_W_SYMBOL = 1.0
_W_CONCEPT = 0.7
_CHARGRAM_N = 3
_CHARGRAM_MIN_WORD = 4

# A light English stopword list: function words that carry no topic. Negations are in it on
# purpose: "not" occurs in most error messages and would otherwise pull unrelated lessons up.
_STOPWORDS = frozenset(
    _words(
        """
        a about above after again against all am an and any are as at be because been before
        being below between both but by can could did do does doing down during each few for
        from further had has have having he her here hers herself him himself his how i if in
        into is it its itself just me more most my myself no nor not of off on once only or
        other our ours ourselves out over own same she should so some such than that the their
        theirs them themselves then there these they this those through to too under until up
        very was we were what when where which while who whom why will with would you your
        yours yourself yourselves s t d ll m re ve don doesn didn isn wasn aren weren won
        wouldn shouldn couldn cannot please also via per
        """
    )
)

# CJK ideographs, kana, Hangul syllables and compatibility ideographs: scripts written without
# spaces between words (Korean has spaces, but character bigrams still help it).
_CJK = (
    "\u3040-\u30ff"  # Hiragana, Katakana
    "\u3400-\u4dbf"  # CJK Extension A
    "\u4e00-\u9fff"  # CJK Unified Ideographs
    "\uac00-\ud7af"  # Hangul syllables
    "\uf900-\ufaff"  # CJK compatibility ideographs
    "\U00020000-\U0003134f"  # CJK Extensions B-G
)
_CJK_RUN = re.compile(f"([{_CJK}]+)")
_WORD = re.compile(r"[^\W_]+(?:_+[^\W_]+)*")
_PART = re.compile(r"[^\W_]+")

# A small concept lexicon for vocabulary that agent tool logs and lessons share across wording
# and across English and Chinese: a word of a group adds the group's feature (once per text),
# so "paying with a credit card" meets "payment amount" and "超时" meets "timed out". Kept to
# generic groups on purpose; words are stemmed with _stem before lookup.
_CONCEPTS: dict[str, tuple[str, ...]] = {
    "money": _words(
        "pay payment paid price cost fee fees charge charged refund balance credit debit card "
        "certificate voucher coupon gift invoice bill billing amount total money cash wallet "
        "paypal dollar dollars usd eur 支付 付款 付费 价格 费用 退款 余额 信用卡 金额 代金券"
    ),
    "timeout": _words("timeout timeouts latency slow hang hung deadline 超时 延迟 卡住"),
    "rate_limit": _words("throttle throttled throttling quota 429 限流 配额 频率"),
    "retry": _words("retry retries retried 重试"),
    "auth": _words(
        "auth authentication login logged password token credential credentials permission "
        "unauthorized forbidden 401 403 权限 登录 密码 令牌"
    ),
    "cancel": _words("cancel cancellation cancelled canceled 取消 退订"),
    "booking": _words("book booking reserve reservation reservations 预订 预定 订票"),
    "search": _words("search find lookup query 查询 搜索 查找"),
    "order": _words("order orders 订单"),
    "prefer": _words("prefer preference preferred favorite favourite 偏好 喜欢 喜好"),
    "install": _words(
        "install installed installing package packages dependency dependencies 安装 依赖"
    ),
    "file": _words("file files directory folder path 文件 目录 路径"),
    "network": _words("network connection connect dns http https url 网络 连接"),
}


@lru_cache(maxsize=1 << 18)
def _bucket(feature: str, dimension: int) -> int:
    """Signed bucket of ``feature``: ``index + 1`` or ``-(index + 1)`` (never 0)."""
    h = int.from_bytes(hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest(), "little")
    index = h % dimension
    return -(index + 1) if h >> 63 else index + 1


_SUFFIXES = ("ments", "ment", "ings", "ing", "ies", "ied", "ed", "ly", "es", "s")
_NO_STRIP_S = ("ss", "us", "is", "ous")
_VOWELS = frozenset("aeiouy")


@lru_cache(maxsize=1 << 16)
def _stem(word: str) -> str:
    """A light English suffix stripper: paying/payment/pays -> pay, cancelled -> cancel.

    Only for lower-case ASCII words of 4+ letters; the stem keeps at least 3 letters and a
    vowel. Trailing ``e`` is dropped so that update/updated/updating meet at ``updat``.
    """
    if len(word) < 4 or not word.isascii() or not word.isalpha():
        return word
    stem = word
    for suffix in _SUFFIXES:
        if not stem.endswith(suffix):
            continue
        if suffix == "s" and stem.endswith(_NO_STRIP_S):
            break
        cut = stem[: -len(suffix)]
        if len(cut) < 3 or not _VOWELS.intersection(cut):
            break
        if suffix in ("ies", "ied"):
            cut += "y"
        elif suffix == "es" and not cut.endswith(("ss", "sh", "ch", "x", "z")):
            cut += "e"  # "updates" -> "update" (then -> "updat" below), not "updat" + "es"
        if (
            suffix in ("ing", "ings", "ed")
            and len(cut) >= 4
            and cut[-1] == cut[-2]
            and cut[-1] not in _VOWELS
            and cut[-1] not in "lsz"
        ):
            cut = cut[:-1]  # "stopped" -> "stop"; "cancelled" is handled by the "ll" rule
        if suffix in ("ing", "ings", "ed") and cut.endswith("ll") and len(cut) >= 5:
            cut = cut[:-1]  # "cancelled" -> "cancel"
        stem = cut
        break
    if len(stem) >= 4 and stem.endswith("e"):
        stem = stem[:-1]
    return stem


_CONCEPT_OF_STEM: dict[str, str] = {}
_CJK_CONCEPT: dict[str, str] = {}
for _concept, _members in _CONCEPTS.items():
    for _member in _members:
        if _CJK_RUN.fullmatch(_member):
            _CJK_CONCEPT[_member] = _concept
        else:
            _CONCEPT_OF_STEM[_stem(_member)] = _concept
_CJK_CONCEPT_TERMS = re.compile(
    "|".join(sorted(map(re.escape, _CJK_CONCEPT), key=len, reverse=True))
)


def _add(features: dict[str, float], counts: dict[str, int], key: str, weight: float) -> None:
    if key in counts:
        counts[key] += 1
    else:
        counts[key] = 1
        features[key] = weight


def _features(text: str) -> dict[str, float]:
    """Weighted features of one text: ``{feature: weight * (1 + ln(count))}``."""
    text = unicodedata.normalize("NFKC", text).casefold()
    weights: dict[str, float] = {}
    counts: dict[str, int] = {}
    concepts: list[str] = []
    content_prev: str | None = None
    for i, segment in enumerate(_CJK_RUN.split(text)):
        if not segment:
            continue
        if i % 2 == 1:  # a run of CJK characters
            content_prev = None
            for j, ch in enumerate(segment):
                _add(weights, counts, "h:" + ch, _W_CJK_UNI)
                if j:
                    _add(weights, counts, "H:" + segment[j - 1 : j + 1], _W_CJK_BI)
            for term in _CJK_CONCEPT_TERMS.findall(segment):
                concepts.append(_CJK_CONCEPT[term])
            continue
        for match in _WORD.finditer(segment):
            token = match.group()
            parts = _PART.findall(token) if "_" in token else [token]
            if len(parts) > 1:
                _add(weights, counts, "i:" + "_".join(parts), _W_WORD)
            for word in parts:
                if word in _STOPWORDS:
                    _add(weights, counts, "w:" + word, _W_STOPWORD)
                    if word == "out" and content_prev == "tim":
                        concepts.append("timeout")  # "timed out", "times out"
                    continue
                stem = _stem(word)
                _add(weights, counts, "w:" + stem, _W_WORD)
                if (concept := _CONCEPT_OF_STEM.get(stem)) is not None:
                    concepts.append(concept)
                if content_prev is not None:
                    _add(weights, counts, "b:" + content_prev + " " + stem, _W_BIGRAM)
                content_prev = stem
                if len(word) >= _CHARGRAM_MIN_WORD:
                    padded = "<" + word + ">"
                    k_max = len(padded) - _CHARGRAM_N + 1
                    w = _W_CHARGRAM / math.sqrt(k_max)
                    for k in range(k_max):
                        _add(weights, counts, "c:" + padded[k : k + _CHARGRAM_N], w)
    for concept in concepts:
        _add(weights, counts, "k:" + concept, _W_CONCEPT)
    if not counts:
        for ch in text:
            if not ch.isspace():
                _add(weights, counts, "s:" + ch, _W_SYMBOL)
    return {
        key: weight if (n := counts[key]) == 1 else weight * (1.0 + math.log(n))
        for key, weight in weights.items()
    }


class HashEmbedder:
    """Deterministic feature-hashing embedder; the offline default (``embedding_model="hash"``).

    See the module docstring for the features. Vectors are float32, shape ``(n, dimension)``,
    L2-normalised; **empty or whitespace-only text gives the all-zero vector**, whose cosine
    with anything is 0 (below :attr:`similarity_floor`, so it is never recalled). Never NaN.

    Speed (2-core reference machine, one thread): 10,000 tau-bench chat lines (135 chars on
    average) in about 1.0-1.4 s; 10,000 one-line lessons in about 0.5 s. Tokenising is pure
    Python; the hashes of repeated features are cached (LRU, 262,144 entries).

    Args:
        dimension: number of hash buckets (vector length), at least 8. Default 384 (the size of
            all-MiniLM-L6-v2). Collisions add noise of about ``1/sqrt(dimension)`` to every
            cosine (std 0.057 at 384), which is what the floor has to sit above.

    Attributes:
        name: ``"hash-<dimension>"``, recorded in the store
            (docs/concepts.md#embedders-and-their-floors).
        dimension: vector length.
        similarity_floor: default recall floor, :data:`SIMILARITY_FLOOR` (0.15, cosine); see
            that constant for how it was measured.
        dedup_threshold: cosine above which two lessons are near-duplicates,
            :data:`DEDUP_THRESHOLD` (0.8).

    Raises:
        UsageError: ``dimension`` is not an int >= 8.
    """

    def __init__(self, dimension: int = 384) -> None:
        if isinstance(dimension, bool) or not isinstance(dimension, int) or dimension < 8:
            raise UsageError(f"HashEmbedder dimension must be an int >= 8, got {dimension!r}")
        self.dimension: int = dimension
        self.name: str = f"hash-{dimension}"
        self.max_input_tokens: int | None = None  # any length: features are hashed, not cut
        self.truncated = 0
        self.similarity_floor: float = SIMILARITY_FLOOR
        self.dedup_threshold: float = DEDUP_THRESHOLD

    def __repr__(self) -> str:
        return f"HashEmbedder(dimension={self.dimension})"

    def embed(self, texts: Sequence[str]) -> FloatMatrix:
        """Embed ``texts``; returns float32 of shape ``(len(texts), dimension)``.

        Rows are L2-normalised (norm 1) except for empty/whitespace-only texts (all zeros).

        Raises:
            UsageError: ``texts`` is a bare string or holds a non-string.
        """
        items = check_texts(texts)
        n, dim = len(items), self.dimension
        flat: list[int] = []
        values: list[float] = []
        for row, text in enumerate(items):
            base = row * dim - 1
            for feature, weight in _features(text).items():
                b = _bucket(feature, dim)
                if b > 0:
                    flat.append(base + b)
                    values.append(weight)
                else:
                    flat.append(base - b)
                    values.append(-weight)
        if not flat:  # no texts, or only empty ones (bincount would return int64 here)
            return np.zeros((n, dim), dtype=np.float32)
        out = np.bincount(
            np.asarray(flat, dtype=np.int64),
            weights=np.asarray(values, dtype=np.float64),
            minlength=n * dim,
        ).reshape(n, dim)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        np.divide(out, norms, out=out, where=norms > 0)
        return out.astype(np.float32)
