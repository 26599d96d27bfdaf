"""Config as code: make AWS Batch match a quota config (``airflow-quota plan`` / ``apply``).

``target`` reads the file, ``aws_state`` reads AWS, ``plan`` (pure) compares
them, ``render`` shows the plan, ``apply`` makes it true.
"""
