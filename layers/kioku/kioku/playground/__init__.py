"""The local playground and its stand-ins: kioku on an embedded moto, no Discord or AWS needed."""
