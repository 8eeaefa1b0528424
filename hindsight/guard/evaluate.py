"""Honest evaluation of the guard, layer by layer: ``hindsight guard eval``
(docs/security.md#layered-detection-and-hindsight-guard-eval).

Input: labelled candidates, one JSON object per line, the schema of the dev set
(``{"id", "label": "poison"|"benign", "kind", "source", "content"}``; ``lang`` optional,
detected from the script when absent). For every candidate each layer decides on its own -
``rules`` (the rule list and, with ``existing``, the conflict test), ``semantic`` (the harm
model), ``llm`` (the LLM judge, when one is configured) - and ``all`` is their combination (any
layer flags: quarantine), as on the write path. :func:`evaluate` returns per layer the
detection rate (flagged poison / poison) and the false-positive rate (flagged benign /
benign), overall, per category (``kind``) and per language. None of the layers learns from the
file, so there is no held-out split to make: every record is a test case.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hindsight._errors import UsageError
from hindsight.guard.checker import Guard
from hindsight.guard.llm_judge import GuardJudge, JudgeItem
from hindsight.guard.semantic import SemanticLayer, load_bank

__all__ = ["EVAL_LAYERS", "EvalReport", "detect_lang", "evaluate"]

EVAL_LAYERS = ("rules", "semantic", "llm")
_KANA = re.compile(r"[\u3040-\u30ff]")
_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")
_HANGUL = re.compile(r"[\uac00-\ud7af]")
_CYRILLIC = re.compile(r"[\u0400-\u04ff]")
_STOPWORDS = {
    "es": {"el", "la", "los", "las", "de", "que", "y", "en", "para", "con", "por", "una", "del"},
    "fr": {"le", "la", "les", "des", "du", "et", "pour", "avec", "une", "est", "pas", "au"},
    "de": {"der", "die", "das", "und", "den", "mit", "für", "ist", "nicht", "ein", "eine", "zu"},
    "pt": {"o", "os", "as", "da", "do", "dos", "para", "com", "uma", "não", "ao", "em"},
    "en": {"the", "and", "to", "of", "a", "is", "for", "with", "when", "if", "it", "on"},
}


def detect_lang(text: str) -> str:
    """A language code for ``text`` by its script (``ja`` for kana, ``zh`` for Han, ``ko``,
    ``ru``) and, for Latin script, by common function words (``en``, ``es``, ``fr``, ``de``,
    ``pt``; default ``en``)."""
    if _KANA.search(text):
        return "ja"
    if _HAN.search(text):
        return "zh"
    if _HANGUL.search(text):
        return "ko"
    if _CYRILLIC.search(text):
        return "ru"
    words = re.findall(r"[a-zà-ÿ]+", text.lower())
    scores = {lang: sum(w in stop for w in words) for lang, stop in _STOPWORDS.items()}
    best = max(scores, key=lambda lang: (scores[lang], lang == "en"))
    return best if scores[best] else "en"


@dataclass
class EvalReport:
    """What :func:`evaluate` measured. ``results``: one dict per candidate (``id``,
    ``label``, ``kind``, ``lang``, ``layers`` {layer: flagged}, ``reasons``); ``layers``: the
    layer names measured (``all`` last)."""

    results: list[dict[str, Any]]
    layers: list[str]

    def rates(self, rows: Iterable[Mapping[str, Any]] | None = None) -> dict[str, Any]:
        """Per layer ``{"detection", "false_positive_rate", "detected", "poison",
        "false_positives", "benign"}`` over ``rows`` (default all); a rate is ``None`` when
        its denominator is 0."""
        rows = list(self.results if rows is None else rows)
        poison = [r for r in rows if r["label"] == "poison"]
        benign = [r for r in rows if r["label"] == "benign"]
        out = {}
        for layer in self.layers:
            hit_p = sum(1 for r in poison if r["layers"].get(layer))
            hit_b = sum(1 for r in benign if r["layers"].get(layer))
            out[layer] = {
                "detection": hit_p / len(poison) if poison else None,
                "false_positive_rate": hit_b / len(benign) if benign else None,
                "detected": hit_p,
                "poison": len(poison),
                "false_positives": hit_b,
                "benign": len(benign),
            }
        return out

    def by(self, key: str) -> dict[str, dict[str, Any]]:
        """:meth:`rates` per value of ``key`` (``"kind"`` or ``"lang"``), sorted by label
        then value."""
        groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for r in self.results:
            groups[str(r.get(key))].append(r)
        order = sorted(groups, key=lambda g: (groups[g][0]["label"] != "poison", g))
        return {g: {"label": groups[g][0]["label"], **self.rates(groups[g])} for g in order}

    def to_json(self) -> dict[str, Any]:
        """The report as JSON: ``{"layers", "overall", "by_category", "by_language",
        "missed", "false_positives"}`` (the ids the combination missed or flagged)."""
        flagged = "all"
        return {
            "layers": self.layers,
            "overall": self.rates(),
            "by_category": self.by("kind"),
            "by_language": self.by("lang"),
            "missed": [
                r["id"]
                for r in self.results
                if r["label"] == "poison" and not r["layers"].get(flagged)
            ],
            "false_positives": [
                r["id"] for r in self.results if r["label"] == "benign" and r["layers"].get(flagged)
            ],
        }


def _records(records: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for n, record in enumerate(records, start=1):
        if not isinstance(record, Mapping):
            raise UsageError(f"record {n}: expected a JSON object, got {type(record).__name__}")
        content = record.get("content")
        if not isinstance(content, str) or not content.strip():
            raise UsageError(f"record {n}: 'content' must be a non-empty string")
        label = record.get("label")
        if label not in ("poison", "benign"):
            raise UsageError(f"record {n}: 'label' must be poison or benign, got {label!r}")
        out.append(
            {
                "id": str(record.get("id", n)),
                "label": label,
                "kind": str(record.get("kind") or record.get("category") or label),
                "lang": str(record.get("lang") or detect_lang(content)),
                "source": record.get("source") if isinstance(record.get("source"), str) else None,
                "content": content,
            }
        )
    return out


def evaluate(
    records: Iterable[Mapping[str, Any]],
    *,
    layers: Sequence[str] = ("rules", "semantic"),
    judge: GuardJudge | None = None,
    guard: Guard | None = None,
) -> EvalReport:
    """Run each layer on labelled candidates (see the module docstring).

    Args:
        records: ``{"id", "label", "kind", "content", "source"?, "lang"?}`` mappings.
        layers: of ``rules``, ``semantic``, ``llm``.
        judge: the LLM judge, required for the ``llm`` layer.
        guard: the rules (default: the built-in rules).

    Raises:
        UsageError: a bad record, an unknown layer, or ``llm`` without a judge.
    """
    chosen = [layers] if isinstance(layers, str) else list(layers)
    unknown = sorted(set(chosen) - set(EVAL_LAYERS))
    if unknown or not chosen:
        raise UsageError(f"layers must be some of {', '.join(EVAL_LAYERS)}; got {chosen}")
    if "llm" in chosen and judge is None:
        raise UsageError("the llm layer needs a model: set REFLECTION_MODEL (and LLM_BASE_URL)")
    rows = _records(records)
    if not rows:
        raise UsageError("no candidates to evaluate")
    names = [layer for layer in EVAL_LAYERS if layer in chosen]
    rules = (guard or Guard(layers=("rules",))) if "rules" in names else None
    if rules is not None and "semantic" in rules.layers:
        rules = Guard(layers=("rules",))
    semantic = SemanticLayer() if "semantic" in names else None
    llm_flags = _judge_all(judge, rows) if "llm" in names and judge is not None else None
    results: list[dict[str, Any]] = []
    for i, row in enumerate(rows):
        flags: dict[str, bool] = {}
        reasons: list[str] = []
        if rules is not None:
            verdict = rules.check(row["content"], source=row["source"])
            flags["rules"] = verdict.quarantined
            reasons += verdict.reasons
        if semantic is not None:
            hits = semantic.check(row["content"])
            flags["semantic"] = bool(hits)
            reasons += [h.reason for h in hits]
        if llm_flags is not None:
            flagged, reason = llm_flags[i]
            flags["llm"] = flagged
            if reason:
                reasons.append(reason)
        flags["all"] = any(flags.get(layer) for layer in names)
        results.append(
            {
                "id": row["id"],
                "label": row["label"],
                "kind": row["kind"],
                "lang": row["lang"],
                "layers": flags,
                "reasons": reasons,
            }
        )
    return EvalReport(results=results, layers=[*names, "all"])


def _judge_all(judge: GuardJudge, rows: list[dict[str, Any]]) -> list[tuple[bool, str | None]]:
    items = [JudgeItem(content=r["content"], source=r["source"] or "unknown") for r in rows]
    out: list[tuple[bool, str | None]] = []
    for verdict in judge.judge(items):
        reason = judge.reason(verdict) if verdict is not None else None
        out.append((reason is not None, reason))
    return out


def bank_summary() -> dict[str, Any]:
    """Counts of the shipped bank: ``{"exemplars", "by_label", "by_language", "by_split"}``."""
    bank = load_bank()
    return {
        "exemplars": len(bank),
        "by_label": dict(Counter(e.label for e in bank)),
        "by_language": dict(Counter(e.lang for e in bank)),
        "by_split": dict(Counter(e.split for e in bank)),
    }
