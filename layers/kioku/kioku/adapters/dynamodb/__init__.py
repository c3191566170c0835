"""The data-access layer: the only code that imports boto3 and the only code that knows item keys.

``table.KiokuTable`` wraps the low-level client (serialisation, error translation); one store
module per aggregate (server configuration, short-term memory, long-term memory) builds on it.
"""
