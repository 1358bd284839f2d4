"""Helpers shared by several test modules (environments, fixtures imported by name, sample agents, values).

A test module imports from here, from tests/fakes (fake servers) or tests/waiting.py, never from another
``test_*`` module (tests/test_test_layout.py holds the rule)."""
