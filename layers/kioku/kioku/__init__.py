"""kioku: a serverless Discord chat bot whose heart is memory."""

__version__ = "0.1.0"
