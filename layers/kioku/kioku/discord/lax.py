"""A JSON number or boolean read as pydantic's lax mode read them, for the interaction's fields that
were so read (its type, its context, its channel's type, a user's ``bot``): the interaction is parsed
with the standard library (a cold ``/chat`` imports no pydantic) and takes what it took, no more.

Pydantic (pydantic-core's ``str_as_int``, ``float_as_int``, ``str_as_bool``) reads an integer from
an int, a bool, a float with no fractional part inside a signed 64-bit range, or a string that is a
JSON integer, or becomes one once cleaned (Unicode white space trimmed, a sign, leading zeros and
underscores, a ``.0`` tail, single underscores between digits), of at most 4,300 digits; a boolean
from a bool, 0 or 1 (int or float), or one of its words in any case, unstripped.
``tests/unit/test_interaction_parse.py`` holds both to pydantic over random values.
"""

from __future__ import annotations

import math
import re
from typing import Final

_WHITE_SPACE: Final = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)
"""Unicode's White_Space (what pydantic trims); ``str.strip()`` would take ``\\x1c``-``\\x1f`` too."""
_JSON_INTEGER: Final = re.compile(r"-?(?:0|[1-9][0-9]*)")
_MAX_DIGITS: Final = 4300
"""Python's limit on a decimal integer's digits (``sys.int_info``), which pydantic keeps."""
_I64: Final = 2**63
_TRUE: Final = frozenset({"1", "on", "t", "true", "y", "yes"})
_FALSE: Final = frozenset({"0", "off", "f", "false", "n", "no"})


class NotLax(ValueError):
    """A value pydantic's lax mode would not have read as the type asked for."""


def lax_int(value: object) -> int:
    """``value`` as an integer, or ``NotLax``."""
    if isinstance(value, int):  # a bool too: True is 1
        return int(value)
    if isinstance(value, float):
        if not math.isfinite(value) or not value.is_integer() or not -_I64 < value < _I64:
            raise NotLax("not a whole number in range")
        return int(value)
    if isinstance(value, str):
        number = _json_integer(value)
        cleaned = _cleaned(value) if number is None else None
        number = number if cleaned is None else _json_integer(cleaned)
        if number is None:
            raise NotLax("not an integer written in digits")
        return number
    raise NotLax("not an integer")


def lax_bool(value: object) -> bool:
    """``value`` as a boolean, or ``NotLax``."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float) and value in (0, 1):
        return value == 1
    word = value.lower() if isinstance(value, str) else None
    if word in _TRUE or word in _FALSE:
        return word in _TRUE
    raise NotLax("not a boolean")


def _json_integer(text: str) -> int | None:
    if not _JSON_INTEGER.fullmatch(text) or len(text.lstrip("-")) > _MAX_DIGITS:
        return None
    return int(text)


def _cleaned(text: str) -> str | None:
    """``text`` as pydantic cleans an integer before its second try; None when it would not."""
    written = len(text)
    text = text.strip(_WHITE_SPACE)
    if text.startswith("+"):
        text = text[1:]
        if text.startswith("-"):
            return None
    sign = "-" if text.startswith("-") else ""
    text = text[len(sign) :]
    if text.startswith(("-", "+")):
        return None
    digits = _without_leading_zeros(text)
    if digits is None:
        return None
    whole, dot, fraction = digits.partition(".")
    if dot and fraction and not fraction.strip("0"):
        digits = whole
    if "_" in digits and not digits.startswith("_") and not digits.endswith("_") and "__" not in digits:
        return sign + digits.replace("_", "")
    return None if len(digits) == written else sign + digits


def _without_leading_zeros(text: str) -> str | None:
    """Leading zeros (and underscores among them) gone, one zero kept before a dot or alone."""
    if not text or text[0] not in "0123456789-":
        return None
    if text[0] != "0":
        return text
    for at, char in enumerate(text[1:], start=1):
        if char in "123456789-":
            return text[at:]
        if char == ".":
            return text[at - 1 :]
        if char not in "0_":
            return None
    return text[-1]
