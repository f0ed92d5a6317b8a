from quotas.lease_tasks import lease_expiry_tick  # noqa: F401  (Celery autodiscovers quotas.tasks)
