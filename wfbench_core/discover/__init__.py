"""What is installed: the plugin manager and the registry of cases and transports."""
