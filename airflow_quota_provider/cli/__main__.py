import sys

from airflow_quota_provider.cli import main

sys.exit(main())
