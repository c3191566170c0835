"""Long-term memory: facts the model chose to keep, per server or per user, within a persona lineage.

``memory`` holds the items, scopes, limits and errors; ``arguments`` validates what the model sends;
``targets`` finds the user a memory is about; ``notification`` and ``recall`` turn memories back
into text for Discord and for the model; ``ports`` names what the service needs from outside.
"""
