"""The data-access layer: the only code that imports boto3 and the only code that knows item keys.

``table.KiokuTable`` wraps the low-level client (serialisation, error translation, the
``UpdateExpression`` builder); one store module per aggregate (server configuration, long-term
memory) builds on it, and short-term memory has a repository per job (``stm_reads``, ``stm_writes``,
``stm_person``, ``stm_channels``, ``stm_janitor``) over one item codec, ``stm_items``.
"""
