"""Discord's side of kioku, with no I/O: ``protocol`` (its numbers and flags, named),
``snowflake`` (the one rule for ids), ``models`` (messages, typed, parsed once where they enter),
``responses`` (interaction answers).

Importing this package imports nothing else: a PING takes only ``protocol``.
"""
