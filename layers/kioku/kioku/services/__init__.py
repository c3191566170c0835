"""Services wire the domain and the adapters together for one use case (a command, a turn)."""
