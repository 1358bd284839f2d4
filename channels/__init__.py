"""Channel adapters: platform SDK objects → bus events, events → SDK calls."""
