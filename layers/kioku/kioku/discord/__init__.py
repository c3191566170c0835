"""Discord's side of kioku, with no I/O: ``protocol`` (its numbers and flags, named), with
``interactions`` (the interaction and response types, apart so that a PING imports only them),
``snowflake`` (the one rule for ids); its shapes, typed and parsed once where they enter:
``models`` (a message, the one user and member), ``interaction`` (the interaction the endpoint
validates), ``guild`` (channels, roles, permission overwrites); and what kioku sends back:
``responses`` (answers to an interaction) and ``ui`` (embeds, their colours, components).

Importing this package imports nothing else.
"""
