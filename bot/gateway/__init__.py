"""The running gateway: the composition root, the supervisor, intake, delivery, channel start-up and HTTP."""
