"""The ``bot`` command line."""
