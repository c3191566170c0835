"""The playground's web inspector: ``kioku playground --web`` (see ``server``)."""
