"""The example DAGs on a real Airflow and the local AWS endpoint, started and narrated.

``airflow-quota demo`` (and ``make demo``) uses it; so does the end-to-end
test, which kills and restarts the triggerer in the middle of the same story.
"""
