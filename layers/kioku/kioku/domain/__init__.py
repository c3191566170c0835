"""The domain: pure Python, no AWS, no HTTP. Short-term memory, long-term memory, context assembly."""
