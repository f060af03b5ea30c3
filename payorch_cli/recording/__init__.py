"""Recordings of real traffic: the format `payorch proxy` writes and `payorch drift` reads."""
