"""Replays of scenarios and traces through the scheduling core, in virtual time."""
