"""Worker and beat liveness: heartbeats the processes leave, and the health report /healthz and
/readyz serve (database, broker, worker and beat freshness, the oldest undecided job)."""
