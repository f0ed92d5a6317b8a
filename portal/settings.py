"""Portal settings, read from environment variables only.

PORTAL_ENV selects a profile: ``production`` (the default: DEBUG off, secure cookies, HSTS, CSP),
``development`` (the embedded demo: SQLite, filesystem broker) or ``test``.
"""
import os
from pathlib import Path

import dj_database_url

from portal.accounts.sso import config as sso_config
from quotas.common import limits
from celery.schedules import crontab
from kombu import Queue
from django.core.exceptions import ImproperlyConfigured
from django.utils.csp import CSP

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("PORTAL_VAR_DIR", BASE_DIR / "var"))

PORTAL_ENV = os.environ.get("PORTAL_ENV", "production")
if PORTAL_ENV not in {"production", "development", "test"}:
    raise ImproperlyConfigured(f"PORTAL_ENV must be production, development or test, not {PORTAL_ENV!r}")
PRODUCTION = PORTAL_ENV == "production"


def env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def env_list(name: str, default: str = "") -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


DEBUG = env_bool("DEBUG", PORTAL_ENV == "development")

SECRET_KEY = os.environ.get("SECRET_KEY", "")
if not SECRET_KEY:
    if PRODUCTION:
        raise ImproperlyConfigured("SECRET_KEY must be set in production")
    SECRET_KEY = "insecure-development-key-only-for-the-embedded-demo-and-tests"

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "" if PRODUCTION else "localhost,127.0.0.1,[::1],testserver")
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "django_filters",
    "drf_spectacular",
    "django_htmx",
    "simple_history",
    "portal",
    "quotas",
    "scheduler",
    "scheduler.notices.apps.NoticesConfig",
    "scheduler.whatif.apps.WhatIfConfig",
    "audit",
    "portal.accounts",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "portal.edge.EdgeValidationMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # OpenID users go back to the provider silently now and then, so its group changes count (no-op while off).
    "portal.accounts.sso.refresh.OIDCSessionRefresh",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django.middleware.csp.ContentSecurityPolicyMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "simple_history.middleware.HistoryRequestMiddleware",
]

ROOT_URLCONF = "portal.urls"
WSGI_APPLICATION = "portal.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.template.context_processors.i18n",
                "django.template.context_processors.csp",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "portal.context_processors.navigation",
            ],
            # One time format everywhere: {{ value|when }} (quotas/common/times.py) in every template, no load.
            "builtins": ["quotas.templatetags.when"],
        },
    }
]

_default_db = f"sqlite:///{VAR_DIR / 'portal.sqlite3'}"
DATABASES = {"default": dj_database_url.parse(os.environ.get("DATABASE_URL", _default_db), conn_max_age=60)}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # The demo's web process and worker share one file: WAL lets readers run beside the writer,
    # IMMEDIATE transactions queue writers instead of failing with "database is locked".
    DATABASES["default"]["CONN_MAX_AGE"] = 0
    DATABASES["default"]["OPTIONS"] = {
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        "transaction_mode": "IMMEDIATE",
        "timeout": 30,
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
# The statements every page runs are prepared once per connection (quotas/common/prepared.py); off behind a pooler
# that does not keep a client's session (pgbouncer in transaction mode).
PREPARED_STATEMENTS = env_bool("PORTAL_PREPARED_STATEMENTS", True)
# The body limit fits the largest bulk submission the API accepts (quotas/common/limits.py); larger bodies
# get 413 with JSON (portal/edge.py).
DATA_UPLOAD_MAX_MEMORY_SIZE = limits.REQUEST_BODY_BYTES

# Lockout counts and API throttles live in the cache: set CACHE_URL (redis://…) when more than one
# web process serves, so they are shared; otherwise each process counts on its own.
_cache_url = os.environ.get("CACHE_URL", "")
CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": _cache_url}
          if _cache_url else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
if PORTAL_ENV == "test":
    # Every test user and login would otherwise pay PBKDF2's 1.5M rounds (~0.8 s here): two fifths of
    # the suite's time went into fixtures. Production and the demo keep Django's default hashers.
    PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
# Single sign-on (portal/accounts/sso/, README "Single sign-on"): LDAP when AUTH_LDAP_SERVER_URI is set,
# OpenID Connect when OIDC_RP_CLIENT_ID is set; either, both or neither. Local accounts always stay
# (break-glass admins): the model backend behind a lockout check comes first, and every attempt for a
# locked name or address is refused on every path (portal/accounts/lockout.py).
globals().update(sso_config.ldap_settings(os.environ))
globals().update(sso_config.oidc_settings(os.environ))
AUTHENTICATION_BACKENDS = sso_config.authentication_backends(ldap_on=bool(os.environ.get("AUTH_LDAP_SERVER_URI")),
                                                             oidc_on=bool(os.environ.get("OIDC_RP_CLIENT_ID")))
# Directory users' groups are asked again this often (and at every sign-in).
SSO_SYNC_SECONDS = float(os.environ.get("SSO_SYNC_SECONDS", 900))
LOGIN_FAILURE_LIMIT = int(os.environ.get("LOGIN_FAILURE_LIMIT", 5))
# Per address only far above an office's rate: behind the README's proxy every user shares one address.
LOGIN_FAILURE_LIMIT_PER_IP = int(os.environ.get("LOGIN_FAILURE_LIMIT_PER_IP", 500))
LOGIN_LOCKOUT_SECONDS = int(os.environ.get("LOGIN_LOCKOUT_SECONDS", 900))
LOGIN_TRUST_FORWARDED_FOR = env_bool("LOGIN_TRUST_FORWARDED_FOR", False)
TOKEN_FAILURE_LIMIT = int(os.environ.get("TOKEN_FAILURE_LIMIT", 20))  # per presented key
TOKEN_FAILURE_LIMIT_PER_IP = int(os.environ.get("TOKEN_FAILURE_LIMIT_PER_IP", 1000))
TOKEN_FAILURE_WINDOW_SECONDS = int(os.environ.get("TOKEN_FAILURE_WINDOW_SECONDS", 300))
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en"
LANGUAGES = [("en", "English"), ("zh-hans", "简体中文")]
LOCALE_PATHS = [BASE_DIR / "portal" / "locale"]
TIME_ZONE = os.environ.get("TIME_ZONE", "Asia/Shanghai")
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = Path(os.environ.get("STATIC_ROOT", BASE_DIR / "staticfiles"))
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"
        if PRODUCTION
        else "django.contrib.staticfiles.storage.StaticFilesStorage"
    },
}
WHITENOISE_USE_FINDERS = not PRODUCTION

# Content Security Policy through Django's own middleware: no inline scripts, no third-party origins.
SECURE_CSP = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF, CSP.NONCE],
    "style-src": [CSP.SELF],
    "img-src": [CSP.SELF, "data:"],
    "connect-src": [CSP.SELF],
    "frame-ancestors": [CSP.NONE],
    "form-action": [CSP.SELF],
    "base-uri": [CSP.SELF],
}

if PRODUCTION:
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_HSTS_SECONDS = int(os.environ.get("SECURE_HSTS_SECONDS", 31536000))
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
SESSION_COOKIE_HTTPONLY = True
# Sessions in the database (a page must be served while the cache is away), read with a plain statement.
SESSION_ENGINE = "portal.accounts.session_user"
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"

# The demo's local receivers take ports derived from the port it serves (`make demo PORT=…`), so two demos
# side by side do not collide: IM notices and the mail viewer's page on PORT+25, its SMTP receiver on PORT+26.
DEMO_PORT = int(os.environ.get("PORT", 8000))
DEMO_IM_PORT = int(os.environ.get("DEMO_IM_PORT", DEMO_PORT + 25))
DEMO_SMTP_PORT = int(os.environ.get("DEMO_SMTP_PORT", DEMO_PORT + 26))

# Mail through Django 6.1's MAILERS; SMTP when EMAIL_HOST is set; in the demo its local
# receiver (the mail viewer); else the console.
_email_host = os.environ.get("EMAIL_HOST", "")
DEFAULT_FROM_EMAIL = os.environ.get("DEFAULT_FROM_EMAIL", "GPU portal <gpu-portal@localhost>")
if _email_host or PRODUCTION:
    MAILERS = {
        "default": {
            "BACKEND": "django.core.mail.backends.smtp.EmailBackend",
            "OPTIONS": {
                "host": _email_host or "localhost",
                "port": int(os.environ.get("EMAIL_PORT", 25)),
                "username": os.environ.get("EMAIL_HOST_USER", ""),
                "password": os.environ.get("EMAIL_HOST_PASSWORD", ""),
                "use_tls": env_bool("EMAIL_USE_TLS", False),
                "timeout": 10,
            },
        }
    }
elif PORTAL_ENV == "development":
    # The demo's mail viewer (portal/demo_mail.py): `rundemo` receives on PORT+26 and shows the mails decoded.
    MAILERS = {"default": {"BACKEND": "django.core.mail.backends.smtp.EmailBackend",
                           "OPTIONS": {"host": "127.0.0.1",
                                       "port": DEMO_SMTP_PORT,
                                       "timeout": 10}}}
else:
    MAILERS = {"default": {"BACKEND": "django.core.mail.backends.console.EmailBackend"}}

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "portal.accounts.authentication.PortalTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    "DEFAULT_PAGINATION_CLASS": "quotas.common.pagination.BoundedLimitOffsetPagination",
    "PAGE_SIZE": 100,
    "EXCEPTION_HANDLER": "portal.api_errors.exception_handler",
    "DEFAULT_THROTTLE_CLASSES": ["rest_framework.throttling.AnonRateThrottle",
                                 "rest_framework.throttling.UserRateThrottle"],
    "DEFAULT_THROTTLE_RATES": {"anon": os.environ.get("API_THROTTLE_ANON", "60/min"),
                               "user": os.environ.get("API_THROTTLE_USER", "1200/min")},
}
SPECTACULAR_SETTINGS = {
    "TITLE": "GPU quota governance portal API",
    "DESCRIPTION": "Base quotas, quota requests, jobs with explainable waits, leases, preemptions, usage and audit.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "POSTPROCESSING_HOOKS": ["drf_spectacular.hooks.postprocess_schema_enums",
                             "portal.openapi.document_error_responses"],
    "ENUM_NAME_OVERRIDES": {
        "WorkloadClassEnum": "quotas.models.WorkloadClass",
        "QuotaRequestStateEnum": "quotas.requests.models.QuotaRequest.State",
        "QuotaRequestKindEnum": "quotas.requests.models.QuotaRequest.Kind",
        "LeaseStateEnum": "quotas.leases.models.Lease.State",
        "NodeStateEnum": "quotas.models.Node.State",
        "ProjectStateEnum": "quotas.models.Project.State",
        "NoticeChannelKindEnum": "scheduler.notices.models.NoticeChannel.Kind",
        "NoticeKindEnum": "scheduler.notices.models.Notice.Kind",
        "NoticeStateEnum": "scheduler.notices.models.Notice.State",
        "JobStatusEnum": "scheduler.models.Job.Status",
    },
}

# Celery: Redis when configured, else kombu's filesystem transport so the demo needs no server.
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", "filesystem://")
BROKER_DIR = VAR_DIR / "broker"
CELERY_BROKER_TRANSPORT_OPTIONS = (
    {"data_folder_in": str(BROKER_DIR / "out"), "data_folder_out": str(BROKER_DIR / "out"),
     "processed_folder": str(BROKER_DIR / "processed"),
     "control_folder": str(BROKER_DIR / "control"), "store_processed": False}
    if CELERY_BROKER_URL.startswith("filesystem")
    else {"visibility_timeout": 3600}
)
# A down broker must fail a publish fast (no retry storm in the caller; beat's sweeps catch up),
# while workers keep reconnecting for as long as it takes.
CELERY_BROKER_CONNECTION_TIMEOUT = float(os.environ.get("CELERY_BROKER_CONNECTION_TIMEOUT", 1.0))
CELERY_TASK_PUBLISH_RETRY = False
CELERY_BROKER_CONNECTION_RETRY = True
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BROKER_CONNECTION_MAX_RETRIES = None
if not CELERY_BROKER_URL.startswith("filesystem"):
    CELERY_BROKER_TRANSPORT_OPTIONS.update({"socket_connect_timeout": CELERY_BROKER_CONNECTION_TIMEOUT,
                                            "socket_timeout": 5.0, "retry_on_timeout": False})
CELERY_TASK_IGNORE_RESULT = True
# Two queues, so decisions never wait behind the cluster: evaluations, notices and the rest on `celery`;
# work that waits on a cluster's CLI (ticks with their starts and polls, stops, signals, inventory, intake)
# on `cluster`. A worker started without -Q consumes both (one worker still runs everything); production
# and the demo run one worker per queue (README).
CLUSTER_QUEUE = "cluster"
CLUSTER_TASKS = ("scheduler.backend_tick", "scheduler.backend_tick_fanout", "scheduler.backend_tick_pool",
                 "scheduler.run_stop", "scheduler.run_signal", "scheduler.inventory_sync", "scheduler.native_intake",
                 "scheduler.slurm_logs_expire")
CELERY_TASK_DEFAULT_QUEUE = "celery"
CELERY_TASK_QUEUES = (Queue("celery"), Queue(CLUSTER_QUEUE))
CELERY_TASK_ROUTES = {name: {"queue": CLUSTER_QUEUE} for name in CLUSTER_TASKS}
CELERY_TASK_ACKS_LATE = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TIMEZONE = TIME_ZONE
CELERY_BEAT_SCHEDULE_FILENAME = str(VAR_DIR / "celerybeat-schedule")

# Demo time runs faster so simulated jobs finish while someone watches.
SIMULATED_TIME_SCALE = float(os.environ.get("SIMULATED_TIME_SCALE", 60 if PORTAL_ENV == "development" else 1))
# One demo clock (quotas/common/clock.py): in the demo, lease lengths, protected windows, expiry warnings and grace
# periods run as fast as its simulated jobs. Production and tests keep the wall clock.
POLICY_TIME_SCALE = SIMULATED_TIME_SCALE if PORTAL_ENV == "development" else 1.0

# Scheduler: backend, fair-share half-life, evaluation cadence, simulated failure rate.
# Each pool names its backend (Pool.backend). Production refuses the simulated one unless this says so
# (a sandbox pool next to real clusters); the demo and the tests keep it.
SCHEDULER_ALLOW_SIMULATED = env_bool("SCHEDULER_ALLOW_SIMULATED", not PRODUCTION)
# Slurm CLI defaults; a pool's backend settings override them (scheduler.backends.slurm.config).
# The signal a preemption victim's run gets at notice time, so it can checkpoint before the deadline.
PREEMPTION_SIGNAL = os.environ.get("PREEMPTION_SIGNAL", "USR1")
# Backend start calls (sbatch) a tick makes at once per pool; their outcomes are recorded one by one.
BACKEND_START_CONCURRENCY = int(os.environ.get("BACKEND_START_CONCURRENCY", 8))
SLURM_BIN_DIR = os.environ.get("SLURM_BIN_DIR", "")
# An admitted job the cluster keeps pending: past the first bound its wait shows the cluster's reason,
# past the second its cluster job is cancelled and the job placed again (scheduler.sync.tick).
CLUSTER_PENDING_EXPLAIN_SECONDS = float(os.environ.get("CLUSTER_PENDING_EXPLAIN_SECONDS", 120))
CLUSTER_PENDING_REPLACE_SECONDS = float(os.environ.get("CLUSTER_PENDING_REPLACE_SECONDS", 900))
SLURM_CALL_TIMEOUT_SECONDS = float(os.environ.get("SLURM_CALL_TIMEOUT_SECONDS", 20))
SLURM_INVENTORY_SYNC_SECONDS = float(os.environ.get("SLURM_INVENTORY_SYNC_SECONDS", 60))
SLURM_NATIVE_INTAKE_SECONDS = float(os.environ.get("SLURM_NATIVE_INTAKE_SECONDS", 10))
SCHEDULER_FAIR_SHARE_HALF_LIFE_HOURS = float(os.environ.get("SCHEDULER_FAIR_SHARE_HALF_LIFE_HOURS", 168))
# Backfill and strict pools: how many jobs blocked on nodes per pool x GPU model get a reservation each
# cycle (Slurm's bf_max_job_test); the jobs behind them queue as under best effort.
SCHEDULER_BACKFILL_DEPTH = int(os.environ.get("SCHEDULER_BACKFILL_DEPTH", 10))
# Backfill pools: minutes a job waits blocked before it gets a reservation (Slurm's bf_min_age_reserve), the
# platform default of the pool switch `reserve_min_age_minutes`; until then later jobs pass it as under best effort.
SCHEDULER_RESERVE_MIN_AGE_MINUTES = int(os.environ.get("SCHEDULER_RESERVE_MIN_AGE_MINUTES", 0))
# Leases that fit (backfill and strict pools): a job whose limit outlasts the lease may still borrow when it
# checkpoints at least this often, since a reclaim then loses at most this much of its work.
LEASE_FIT_CHECKPOINT_MINUTES = int(os.environ.get("LEASE_FIT_CHECKPOINT_MINUTES", 30))
SCHEDULER_EVALUATION_INTERVAL_SECONDS = float(os.environ.get("SCHEDULER_EVALUATION_INTERVAL_SECONDS", 5))
# A cycle whose inputs are unchanged since the last full decide skips deciding, for at most this long
# (scheduler.cycle.services): then beat's sweep decides in full, the safety net that also picks up what
# only moves with the clock (fair-share usage, a lease's protection ending). Keep it well under
# HEALTH_EVALUATION_STALL_SECONDS. The demo's clock runs faster, so there every sweep decides.
SCHEDULER_FULL_DECIDE_SECONDS = float(os.environ.get("SCHEDULER_FULL_DECIDE_SECONDS", 0) or (
    SCHEDULER_EVALUATION_INTERVAL_SECONDS if PORTAL_ENV == "development" else 30))
SCHEDULER_BACKEND_TICK_SECONDS = float(os.environ.get("SCHEDULER_BACKEND_TICK_SECONDS", 3))
SIMULATED_FAILURE_RATE = float(os.environ.get("SIMULATED_FAILURE_RATE", 0.05))
# Leases: how long before expiry the borrower is warned, the grace a reclaim gives, the worker's period.
LEASE_EXPIRY_WARNING_MINUTES = int(os.environ.get("LEASE_EXPIRY_WARNING_MINUTES", 15))
LEASE_RECLAIM_GRACE_MINUTES = int(os.environ.get("LEASE_RECLAIM_GRACE_MINUTES", 10))
LEASE_EXPIRY_TICK_SECONDS = float(os.environ.get("LEASE_EXPIRY_TICK_SECONDS", 30))
# Scheduled base quotas and maintenance windows are checked this often.
QUOTA_TICK_SECONDS = float(os.environ.get("QUOTA_TICK_SECONDS", 30))
# Preemption: the notice period victims get to checkpoint, and how often one job may be stopped in
# 24 h. A job that checkpoints less often than the grace cannot save one in time; its notice says when
# its next checkpoint is due, and the demo's jobs checkpoint every 15 minutes, so its grace is 20.
PREEMPTION_GRACE_MINUTES = int(os.environ.get("PREEMPTION_GRACE_MINUTES", 20 if PORTAL_ENV == "development" else 10))
PREEMPTION_CAP_24H = int(os.environ.get("PREEMPTION_CAP_24H", 3))
# Quota requests nobody decided within this many days expire.
QUOTA_REQUEST_STALE_DAYS = int(os.environ.get("QUOTA_REQUEST_STALE_DAYS", 14))
# The portal's address in mail and IM links.
PORTAL_BASE_URL = os.environ.get("PORTAL_BASE_URL", "http://localhost:8000")
PREEMPTION_GRACE_TICK_SECONDS = float(os.environ.get("PREEMPTION_GRACE_TICK_SECONDS", 15))

# Audit sealing (audit/chain/sealing.py): heads are signed with AUDIT_SEAL_KEY, which must never be stored in
# the database, and appended to monthly files in AUDIT_SEAL_EXPORT_DIR (storage the database's
# operators cannot rewrite). The sealer runs every AUDIT_SEAL_INTERVAL_SECONDS.
AUDIT_SEAL_KEY = os.environ.get("AUDIT_SEAL_KEY", "")
if not AUDIT_SEAL_KEY:
    if PRODUCTION:
        raise ImproperlyConfigured("AUDIT_SEAL_KEY must be set in production")
    AUDIT_SEAL_KEY = "insecure-development-audit-seal-key"
AUDIT_SEAL_EXPORT_DIR = os.environ.get(
    "AUDIT_SEAL_EXPORT_DIR", str(VAR_DIR / "audit-seals") if PORTAL_ENV == "development" else "")
if PRODUCTION and not AUDIT_SEAL_EXPORT_DIR:
    # Without heads outside the database, cutting the last sealed batch and its head verifies OK.
    raise ImproperlyConfigured("AUDIT_SEAL_EXPORT_DIR must be set in production: signed audit heads must "
                               "leave the database (a WORM mount, a log shipper's spool, another host's share)")
# The database refuses an audit event whose occurred_at is further than this from its own clock (migration
# audit 0007 builds the trigger with it). The test profile widens it: the suite moves Python's clock
# (time-machine) while PostgreSQL's stays put; tests/test_audit_evidence.py checks the production bound.
AUDIT_CLOCK_TOLERANCE_SECONDS = int(os.environ.get(
    "AUDIT_CLOCK_TOLERANCE_SECONDS", 50 * 365 * 86400 if PORTAL_ENV == "test" else 300))
# The sealer refuses (and reports) unsealed events older than the last signed head by more than this: an
# honest transaction commits within it, so such an event was inserted after the fact with an old time.
AUDIT_SEAL_LATE_GRACE_SECONDS = int(os.environ.get("AUDIT_SEAL_LATE_GRACE_SECONDS", 900))
AUDIT_SEAL_INTERVAL_SECONDS = float(os.environ.get("AUDIT_SEAL_INTERVAL_SECONDS", 30))
AUDIT_SEAL_BATCH = int(os.environ.get("AUDIT_SEAL_BATCH", 5000))

# Liveness (portal/liveness/): heartbeats older than HEALTH_HEARTBEAT_MAX_SECONDS, a submitted job
# undecided for HEALTH_UNDECIDED_MAX_SECONDS, or a pool with waiting jobs not evaluated for
# HEALTH_EVALUATION_STALL_SECONDS make /readyz answer 503 (and the platform dashboard say so).
HEALTH_HEARTBEAT_SECONDS = float(os.environ.get("HEALTH_HEARTBEAT_SECONDS", 15))
HEALTH_HEARTBEAT_MAX_SECONDS = float(os.environ.get("HEALTH_HEARTBEAT_MAX_SECONDS", 60))
HEALTH_UNDECIDED_MAX_SECONDS = float(os.environ.get("HEALTH_UNDECIDED_MAX_SECONDS", 120))
HEALTH_EVALUATION_STALL_SECONDS = float(os.environ.get("HEALTH_EVALUATION_STALL_SECONDS", 120))

# Every periodic task, in one table: beat runs these; each entry names a task by its registered name.
CELERY_BEAT_SCHEDULE = {
    "scheduler-evaluate-all-pools": {"task": "scheduler.evaluate_all_pools",
                                     "schedule": SCHEDULER_EVALUATION_INTERVAL_SECONDS},
    "scheduler-backend-tick": {"task": "scheduler.backend_tick_fanout", "schedule": SCHEDULER_BACKEND_TICK_SECONDS},
    "scheduler-inventory-sync": {"task": "scheduler.inventory_sync", "schedule": SLURM_INVENTORY_SYNC_SECONDS},
    "scheduler-native-intake": {"task": "scheduler.native_intake", "schedule": SLURM_NATIVE_INTAKE_SECONDS},
    "scheduler-slurm-logs-expire": {"task": "scheduler.slurm_logs_expire", "schedule": 3600.0},
    "scheduler-preemption-grace-tick": {"task": "scheduler.preemption_grace_tick",
                                        "schedule": PREEMPTION_GRACE_TICK_SECONDS},
    "lease-expiry-tick": {"task": "scheduler.lease_expiry_tick", "schedule": LEASE_EXPIRY_TICK_SECONDS},
    "quotas-activate-due": {"task": "quotas.quota_activate_due", "schedule": QUOTA_TICK_SECONDS},
    "nodes-maintenance-expire": {"task": "quotas.node_maintenance_expire", "schedule": QUOTA_TICK_SECONDS},
    "quota-requests-apply-due": {"task": "quotas.tasks.quota_requests_apply_due", "schedule": 30.0},
    "quota-requests-warn-ending": {"task": "quotas.tasks.quota_requests_warn_ending", "schedule": 300.0},
    "quota-requests-expire-stale": {"task": "quotas.tasks.quota_requests_expire_stale", "schedule": 3600.0},
    "notices.sweep": {"task": "notices.sweep_notices", "schedule": 30.0},
    "audit-usage-rollups-fold": {"task": "audit.tasks.usage_rollups_fold", "schedule": 600.0},
    "audit-seal": {"task": "audit.seal", "schedule": AUDIT_SEAL_INTERVAL_SECONDS},
    "portal-heartbeat": {"task": "portal.heartbeat", "schedule": HEALTH_HEARTBEAT_SECONDS},
    "accounts-directory-sync": {"task": "accounts.directory_sync", "schedule": SSO_SYNC_SECONDS},
    "audit-monthly-report-emails": {"task": "audit.tasks.monthly_report_emails",
                                    "schedule": crontab(minute=0, hour=7, day_of_month=1)},
}
if PORTAL_ENV == "development":
    CELERY_BEAT_SCHEDULE["scheduler-demo-top-up"] = {"task": "scheduler.demo_top_up", "schedule": 20.0}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
    # WeasyPrint narrates each step of every PDF at INFO ("Step 2 - Fetching and parsing CSS"), and the report
    # PDF's stylesheet is parsed when its module loads: every command and worker printed it.
    "loggers": {"django.db.backends": {"level": "WARNING"}, "weasyprint.progress": {"level": "WARNING"}},
}

# Prometheus scrape endpoint /metrics: when set, scrapers must send "Authorization: Bearer <token>".
# Production requires it: without a token /metrics answers 401 (fails closed) unless
# METRICS_REQUIRE_TOKEN=0 says the endpoint is reachable only from the scraper's network.
METRICS_TOKEN = os.environ.get("METRICS_TOKEN", "")
METRICS_REQUIRE_TOKEN = env_bool("METRICS_REQUIRE_TOKEN", PRODUCTION)

# json:// and jsons:// notice webhooks may not point at loopback, private or link-local addresses except
# these host names, addresses or networks (scheduler/notices/webhook_hosts.py). Tests post to a local
# receiver on 127.0.0.1, and so does the demo (portal/demo_im.py, on DEMO_IM_PORT).
NOTICE_WEBHOOK_ALLOWED_HOSTS = env_list("NOTICE_WEBHOOK_ALLOWED_HOSTS",
                                        "127.0.0.1" if PORTAL_ENV in ("test", "development") else "")
