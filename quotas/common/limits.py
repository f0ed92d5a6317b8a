"""Product limits for every number a user can send, in one place: each is inside its column's range
and inside what the product means (a job runs at most 30 days, a replica fits on one node). The
API serializers bound their fields with these, so the OpenAPI schema documents them, and the cycle
refuses rows written before the limits existed (scheduler.queue.faults)."""

JOB_GPUS_PER_REPLICA = 64            # column: smallint; the largest node has far fewer
JOB_REPLICAS = 1024                  # column: smallint
JOB_CPU = 4096                       # cores per replica; column: integer
JOB_MEMORY_GB = 65536                # per replica; column: integer
JOB_MAX_RUNTIME_MINUTES = 30 * 24 * 60
JOB_CHECKPOINT_MINUTES = JOB_MAX_RUNTIME_MINUTES
QUOTA_GPUS = 100_000                 # a base quota or a quota request; column: integer
QUOTA_GPU_MEMORY_GB = 10_000_000
QUOTA_CPU_CORES = 10_000_000
QUOTA_MEMORY_GB = 100_000_000
QUOTA_STORAGE_GB = 1_000_000_000
NAME_LENGTH = 200
JUSTIFICATION_LENGTH = 5000          # a quota request's why: a few paragraphs, never a document
ENV_VARS = 200                       # environment variables of one job
ENV_VAR_NAME_LENGTH = 128
ENV_VAR_VALUE_LENGTH = 4096
WHATIF_CHANGES = 50                  # proposed changes in one what-if replay; each replays the window
WHATIF_SACCT_BYTES = 32 * 1024 * 1024  # an imported sacct history: about 200k jobs at ~150 bytes a line
LEASE_MINUTES = 365 * 24 * 60       # lending policy durations; column: integer
RESERVE_MIN_AGE_MINUTES = 30 * 24 * 60  # a backfill pool's wait before a reservation: longer is no reservation at all
# Quotas, quota requests and maintenance windows may start this far in the past (corrections of a
# change that was agreed but entered late); each such back-dating is audited with the change.
BACKDATE_ALLOWANCE_DAYS = 7

# Bulk submission: at most JOB_BULK_LIMIT jobs per request, each up to JOB_SPEC_BYTES of JSON, so
# the request body limit (DATA_UPLOAD_MAX_MEMORY_SIZE) lets the largest allowed bulk through.
JOB_BULK_LIMIT = 10_000
JOB_SPEC_BYTES = 1536
REQUEST_BODY_BYTES = JOB_BULK_LIMIT * JOB_SPEC_BYTES
