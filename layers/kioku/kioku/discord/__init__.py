"""Discord's side of kioku, with no I/O: ``protocol`` (its numbers and flags, named), with
``interactions`` (the interaction and response types, apart so that a PING imports only them),
``snowflake`` (the one rule for ids), ``models`` (its message object, typed, parsed once where it
enters) and ``responses`` (answers to an interaction).

Importing this package imports nothing else.
"""
