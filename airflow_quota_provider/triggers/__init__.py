"""Triggers: follow service jobs and share capacity from the triggerer, without a worker slot."""
