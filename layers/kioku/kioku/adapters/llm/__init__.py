"""Chat-completion models behind one small interface: an OpenAI-compatible endpoint or an offline script."""

from kioku.adapters.llm.base import ChatModel, ChatRequest, ChatResponse, ToolCall
from kioku.adapters.llm.registry import PROVIDERS, make_chat_model
from kioku.domain.turn import LlmUnavailable

__all__ = [
    "PROVIDERS",
    "ChatModel",
    "ChatRequest",
    "ChatResponse",
    "LlmUnavailable",
    "ToolCall",
    "make_chat_model",
]
