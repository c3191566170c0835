"""How long a persona's name and personality may be: a leaf, so that a command's definition (``/chat
persona:``) reads the limit without loading the settings rules and the models behind them."""

from typing import Final

MAX_PERSONA_NAME_CHARS: Final = 32
MAX_PERSONA_PROMPT_CHARS: Final = 4000
