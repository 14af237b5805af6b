"""An example trajudge plugin (used by tests/test_plugins.py). Each module registers one extension when its
entry point loads it: :mod:`.judge` the ``example:WORD`` judge, :mod:`.importer` the ``example-log`` format,
:mod:`.provider` the ``example-llm`` provider."""
