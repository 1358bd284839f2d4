"""Human-in-the-loop: pending interrupts, their resolution, prompt text and buttons."""
