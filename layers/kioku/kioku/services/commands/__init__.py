"""Slash commands: one module per command, collected in one registry used by the router and by
``kioku register-commands``. Adding a command is adding a module and one line in ``registry.py``."""
