"""Operator extra links to the AWS console."""
