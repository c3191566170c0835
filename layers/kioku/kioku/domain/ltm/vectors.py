"""Memory embeddings as the books keep them: 256 signed bytes, compared by cosine.

A model's vector is cut to ``DIMENSIONS`` (when the model could not be asked for that many: the first
ones, renormalised, as Matryoshka-trained models allow) and each component scaled so the largest is
127, then rounded to a signed byte. Cosine similarity does not depend on a vector's length, so no
scale is kept: 256 bytes per memory, and the cosine of the bytes is that of the vectors within ~1%.

Comparing a query with a thousand memories exactly costs a 256-term dot product each, which pure
Python pays for dearly; ``nearest`` first compares only the signs of the components (two integers
of 256 bits per vector, four ANDs and popcounts), and the exact cosine is worked out for the few that
come nearest by those.
"""

from __future__ import annotations

import math
import operator
from array import array
from collections.abc import Callable, Sequence
from functools import cache
from typing import Final

DIMENSIONS: Final = 256
VECTOR_BYTES: Final = DIMENSIONS
_INT8_MAX: Final = 127
_CACHE_LIMIT: Final = 20_000
_dot: Callable[[Sequence[int], Sequence[int]], int] = getattr(math, "sumprod", None) or (
    lambda a, b: sum(map(operator.mul, a, b))
)
"""An exact integer dot product: ``math.sumprod`` where there is one (Python 3.12+), else the same sum."""


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
    a, norm_a = _unpacked[first]
    b, norm_b = _unpacked[second]
    if len(a) != len(b) or not norm_a or not norm_b:
        return 0.0
    return _dot(a, b) / (norm_a * norm_b)


def nearest(query: bytes, vectors: Sequence[tuple[int, bytes]], count: int) -> list[int]:
    """The numbers of the (at most) ``count`` vectors whose components' signs agree best with the
    query's (a first cut, by ``sign_agreement``; equal ones in the order given)."""
    qp, qn, _ = _signs[query]
    signs = _signs
    agreement = [
        ((qp & p).bit_count() + (qn & n).bit_count() - (qp & n).bit_count() - (qn & p).bit_count()) / root
        if root
        else 0.0
        for _, data in vectors
        for p, n, root in (signs[data],)
    ]
    best = sorted(range(len(agreement)), key=agreement.__getitem__, reverse=True)[:count]
    return [vectors[place][0] for place in best]


def sign_agreement(first: bytes, second: bytes) -> float:
    """The cosine of two vectors' signs (each component +1, -1 or 0): what ``nearest`` ranks by."""
    p1, n1, root1 = _signs[first]
    p2, n2, root2 = _signs[second]
    if not root1 or not root2 or len(first) != len(second):
        return 0.0
    same = (p1 & p2).bit_count() + (n1 & n2).bit_count()
    return (same - (p1 & n2).bit_count() - (n1 & p2).bit_count()) / (root1 * root2)


class _Unpacked(dict[bytes, tuple[list[int], float]]):
    """Each vector as numbers and its norm, worked out once: a warm worker compares the same books."""

    def __missing__(self, data: bytes) -> tuple[list[int], float]:
        numbers = array("b", data).tolist()
        if len(self) >= _CACHE_LIMIT:
            self.clear()
        known = self[data] = (numbers, math.sqrt(_dot(numbers, numbers)))
        return known


class _Signs(dict[bytes, tuple[int, int, float]]):
    """Each vector's positive and negative components as bits (the top bit of each byte of the
    vector read as one integer, worked out for all its bytes at once), and the root of how many."""

    def __missing__(self, data: bytes) -> tuple[int, int, float]:
        whole = int.from_bytes(data, "big")
        high, low = _byte_masks(len(data))
        nonzero = (((whole & low) + low) | whole) & high  # a byte's top bit: set iff the byte is not 0
        negative = whole & high
        if len(self) >= _CACHE_LIMIT:
            self.clear()
        known = self[data] = (nonzero ^ negative, negative, math.sqrt(nonzero.bit_count()))
        return known


@cache
def _byte_masks(size: int) -> tuple[int, int]:
    return int.from_bytes(b"\x80" * size, "big"), int.from_bytes(b"\x7f" * size, "big")


_unpacked = _Unpacked()
_signs = _Signs()


def clear_caches() -> None:
    """Forget every unpacked vector, as a fresh worker starts (``make bench``'s cold runs)."""
    _unpacked.clear()
    _signs.clear()
