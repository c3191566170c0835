"""kioku: a serverless Discord chat bot whose heart is memory."""

# PEP 440: X.Y.Z is a release (tag vX.Y.Z, CHANGELOG "## X.Y.Z (date)"); X.Y.Z.dev0 is the work
# towards it (CHANGELOG "## X.Y.Z (unreleased)"). pyproject.toml reads it from here.
__version__ = "0.2.0.dev0"
