"""The real-robot side: policy inference node, FR3 driver, cameras, operator console, watchdog."""
