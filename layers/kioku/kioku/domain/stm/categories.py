"""STM categories: a server may split its short-term memory into labelled sections.

With no categories configured (or only the default summary one) the system is in single-summary
fallback mode: the tool takes one ``summary`` and the memory renders as one block.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Collection, Sequence
from typing import Final

from kioku.domain.models import StmCategory

DEFAULT_SUMMARY_SLUG: Final = "summary"
MAX_SLUG_CHARS: Final = 48
MAX_LABEL_CHARS: Final = 100
_NOT_SLUG = re.compile(r"[^a-z0-9]+")


def slug_for_label(label: str, taken: Collection[str] = ()) -> str:
    """A tool-schema-safe property name for ``label`` (``[a-z0-9_]``), unique among ``taken``.

    Labels in scripts without ASCII letters (``"予定"``) fall back to ``category``.
    """
    ascii_label = unicodedata.normalize("NFKD", label).encode("ascii", "ignore").decode().casefold()
    base = _NOT_SLUG.sub("_", ascii_label).strip("_")[:MAX_SLUG_CHARS].strip("_") or "category"
    slug, suffix = base, 2
    while slug in taken:
        slug = f"{base[: MAX_SLUG_CHARS - len(str(suffix)) - 1]}_{suffix}"
        suffix += 1
    return slug


def active_categories(configured: Sequence[StmCategory], max_categories: int) -> tuple[StmCategory, ...]:
    """The categories the tool and the renderer use, in position order; () in fallback mode."""
    ordered = sorted(configured, key=lambda category: category.position)[:max_categories]
    if all(category.slug == DEFAULT_SUMMARY_SLUG for category in ordered):
        return ()
    return tuple(ordered)


def category_labels_text(categories: Sequence[StmCategory]) -> str:
    """The ``{category_labels}`` macro: the labels, comma-separated, in position order."""
    return ", ".join(category.label for category in categories)
