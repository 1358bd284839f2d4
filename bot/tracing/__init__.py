"""Tracing: decisions of every run recorded for ``/trace`` and ``bot trace``, optionally exported to OpenTelemetry."""
