"""The Spark tests: their shared local session is the ``spark`` fixture of ``tests/conftest.py`` (a Spark test in
any folder uses the same one)."""
