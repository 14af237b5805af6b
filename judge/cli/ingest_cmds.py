"""Commands: see judge/cli/__init__.py."""
