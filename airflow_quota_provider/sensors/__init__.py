"""Sensors: wait for capacity in a quota share."""
