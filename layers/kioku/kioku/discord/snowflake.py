"""The one rule for Discord ids: a string of 1 to 20 ASCII digits.

Discord writes every id (a 64-bit integer) as a decimal string. ``\\d`` and ``str.isdigit`` would
take any script's digits too ('١٢٣', '１２３'), which no id has and ``int()`` would quietly accept.
"""

from __future__ import annotations

import re
from typing import Final, TypeGuard

SNOWFLAKE_DIGITS: Final = "[0-9]{1,20}"
"""The rule as a regex fragment, for patterns that find ids inside text (``<@id>``)."""
SNOWFLAKE_PATTERN: Final = f"^{SNOWFLAKE_DIGITS}$"
"""The rule as a whole-string regex, for a setting's pattern (``kioku.config``)."""

_SNOWFLAKE: Final = re.compile(SNOWFLAKE_DIGITS)


def is_snowflake(value: object) -> TypeGuard[str]:
    """Whether ``value`` is a Discord id as Discord writes it (an int or a bool is not)."""
    return isinstance(value, str) and _SNOWFLAKE.fullmatch(value) is not None
