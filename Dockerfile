# The official Airflow image with this provider installed from the checkout.
# Built by docker-compose.yaml for every Airflow process and the local AWS endpoint.
FROM apache/airflow:3.3.2-python3.11

COPY --chown=airflow:root pyproject.toml README.md /opt/airflow-quota-provider/
COPY --chown=airflow:root airflow_quota_provider /opt/airflow-quota-provider/airflow_quota_provider
RUN pip install --no-cache-dir "/opt/airflow-quota-provider" "apache-airflow==3.3.2"
# The endpoint's state volume is mounted here; made now so the volume belongs to the airflow user.
RUN mkdir -p /opt/airflow/emulator
