"""Memory embeddings as the books keep them: 256 signed bytes, compared by cosine.

A model's vector is cut to ``DIMENSIONS`` (when the model could not be asked for that many: the first
ones, renormalised, as Matryoshka-trained models allow) and each component scaled so the largest is
127, then rounded to a signed byte. Cosine similarity does not depend on a vector's length, so no
scale is kept: 256 bytes per memory, and the cosine of the bytes is that of the vectors within ~1%.
"""

from __future__ import annotations

import math
import operator
from array import array
from collections.abc import Sequence
from typing import Final

DIMENSIONS: Final = 256
VECTOR_BYTES: Final = DIMENSIONS
_INT8_MAX: Final = 127
_UNPACKED_CACHE_LIMIT: Final = 20_000
_unpacked: dict[bytes, tuple[list[int], float]] = {}


def embedded_text(content: str) -> str:
    """What of a memory is embedded: its text, ``{user}`` and ``{bot}`` as pronouns, so the vector
    says what the fact means and not whom it is about (the name is matched by its words)."""
    return content.replace("{user}", "they").replace("{bot}", "I")


class InvalidVector(ValueError):
    """Not an embedding: empty, not numbers, not finite, or all zeros."""


def quantise(vector: Sequence[float]) -> bytes:
    """The first ``DIMENSIONS`` components of ``vector`` as signed bytes (see the module)."""
    head = list(vector[:DIMENSIONS])
    if not head or not all(isinstance(x, int | float) and math.isfinite(x) for x in head):
        raise InvalidVector("an embedding must be a non-empty list of finite numbers")
    largest = max(abs(x) for x in head)
    if largest == 0:
        raise InvalidVector("an embedding of zeros has no direction")
    return array("b", [round(x / largest * _INT8_MAX) for x in head]).tobytes()


def cosine(first: bytes, second: bytes) -> float:
    """Cosine similarity of two quantised vectors (0.0 for vectors of different sizes)."""
    a, norm_a = _unpack(first)
    b, norm_b = _unpack(second)
    if len(a) != len(b) or not norm_a or not norm_b:
        return 0.0
    return sum(map(operator.mul, a, b)) / (norm_a * norm_b)


def _unpack(data: bytes) -> tuple[list[int], float]:
    """``data`` as numbers and its norm, memoised: a warm worker compares the same books each turn."""
    known = _unpacked.get(data)
    if known is None:
        numbers = array("b", data).tolist()
        known = (numbers, math.sqrt(sum(x * x for x in numbers)))
        if len(_unpacked) >= _UNPACKED_CACHE_LIMIT:
            _unpacked.clear()
        _unpacked[data] = known
    return known
