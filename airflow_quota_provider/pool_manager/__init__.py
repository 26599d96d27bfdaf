"""The pool manager: the daemon that runs the Airflow pools backend
(:mod:`~airflow_quota_provider.airflow_pools`), one leader per fleet.

Its loop (:mod:`.manager`) reads the managed pools' task instances, decides, sets the
pools' slots and preempts by clearing task instances; :mod:`.lease` keeps one leader
per fleet; :mod:`.config_watch` takes config changes live.
"""
