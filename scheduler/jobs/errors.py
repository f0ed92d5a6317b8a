"""User-facing messages of the job services, lazily translated so they are
formatted in the language of the request; tests assert the English texts."""

from django.utils.translation import gettext_lazy as _

UNKNOWN_TENANT = _("Unknown tenant {value!r}.")
UNKNOWN_PROJECT = _("Unknown project {value!r} in tenant {tenant}.")
PROJECT_ARCHIVED = _("Project {value} is archived.")
UNKNOWN_POOL = _("Unknown pool {value!r}.")
POOL_REQUIRES_RUNTIME_LIMIT = _("Pool {pool} requires a runtime limit: say how many minutes the job may run (the "
                                "cluster ends it then, and backfill plans with it).")
UNKNOWN_GPU_MODEL = _("Unknown GPU model {value!r}.")
UNKNOWN_WORKLOAD_CLASS = _("Unknown workload class {value!r}.")
NO_NODE_OF_MODEL = _("Pool {pool} has no {gpu_model} node.")
REPLICA_TOO_LARGE = _("No {gpu_model} node in {pool} has {gpus} GPUs: the largest has {largest}.")
MUST_BE_POSITIVE = _("Must be at least 1.")
MUST_NOT_BE_NEGATIVE = _("Must be zero or more.")
AT_MOST = _("Must be at most {limit}.")
ENVIRONMENT_OBJECT = _("Environment must be an object with image, ready and detail.")
NAME_REQUIRED = _("Give the job a name.")
NOT_ALLOWED_TO_SUBMIT = _("Submitting jobs to {tenant} needs a membership in it.")
NOT_ALLOWED_TO_CANCEL = _("Cancelling jobs of {tenant} needs a membership in it.")
NOT_ALLOWED_TO_REPORT_ENVIRONMENT = _("Only the job's owner or a tenant admin of {tenant} reports its environment.")
ENVIRONMENT_OF_ENDED_JOB = _("Job #{job} already ended ({status}): its environment no longer matters.")
OVER_QUOTA_REJECTED = _(
    "Rejected by the over-quota rule of {tenant} on {pool}/{gpu_model}: requested {requested} GPUs, "
    "{free} free of base quota {quota} ({used} in use)."
)
ALREADY_FINISHED = _("Job #{job} already ended ({status}).")
BULK_EMPTY = _("Send at least one job.")
BULK_TOO_MANY = _("At most {limit} jobs per request.")
COMMAND_AND_SCRIPT = _("Give a command or a script, not both.")
NOTHING_TO_RUN = _("Pool {pool} runs jobs on a cluster: give a command or a script.")
ENV_VARS_SHAPE = _("Environment variables are an object of names to text values.")
ENV_VAR_NAME = _("{name!r} is not a valid environment variable name.")
WORKING_DIR_ABSOLUTE = _("The working directory is an absolute path.")
ENV_VARS_TOO_MANY = _("At most {limit} environment variables.")
ENV_VAR_TOO_LONG = _("The value of {name} is longer than {limit} characters.")
ENV_UNKNOWN_KEYS = _("Unknown keys {keys}: environment takes image, ready, detail and variables (variables go "
                     "inside \"variables\").")
SCRIPT_TOO_LONG = _("At most {limit} characters.")
