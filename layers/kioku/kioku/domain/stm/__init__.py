"""Short-term memory (seed 000): the live per-channel rows, the update tool, the context stage.

A guild's live row is shared by the server (server, channel, persona); a DM's belongs to the user
(user, channel, persona). Everything here is pure: the DynamoDB mapping lives in
``kioku.adapters.dynamodb.stm_items`` (its repositories beside it) and the wiring in ``kioku.services.stm``.
"""
