"""The web console: the operator's view of the gateway, served by its HTTP server (``web.enabled``)."""
