"""Chat commands: the registry, the narrow context handlers get, the built-in and admin commands."""
