"""Configuration: the settings model, its layers (defaults, files, environment) and checks."""
