"""The result document's parts as the runner writes them for the service."""
