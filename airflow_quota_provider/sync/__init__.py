"""Config as code: make AWS Batch, or a pools fleet's Airflow pools, match a quota config
(``airflow-quota plan`` / ``apply``).

For AWS Batch, ``target`` reads the file, ``aws_state`` reads AWS (a ``snapshot``),
``plan`` (pure) compares them, ``render`` shows the plan, ``apply`` makes it true. For a
config with ``backend: airflow_pools``: ``airflow_state`` reads the pools and
their tasks, ``pool_plan`` (pure) compares, ``pool_apply`` makes it true, in
the same vocabulary (``changes``) and rendering.
"""
