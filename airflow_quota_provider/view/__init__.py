"""The GPU Quotas view: a page and its API in Airflow's API server, and the CLI's text."""

RESOURCE_NAME = "GPU Quotas"
"""The custom view of Airflow's auth manager that guards the view's data."""
