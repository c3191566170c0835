"""The gateway relay: listens on the Discord gateway and forwards messages, signed, to RelayFunction.

``forwarder`` is the delivery core (no Discord code), ``gateway`` the hikari adapter (the only
module of kioku that imports hikari), ``cli`` the ``kioku relay`` command.
"""
