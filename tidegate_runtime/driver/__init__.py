"""The driver's control loop: Runtime, its channel, and what it does on each directive."""
