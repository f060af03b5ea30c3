"""Deposit accounts and the transfers received into them: the service and its request bodies."""
