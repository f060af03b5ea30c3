"""Hosted checkout sessions: the service and its request bodies."""
