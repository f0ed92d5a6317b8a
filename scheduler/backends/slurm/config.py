"""A Slurm pool's connection settings (Pool.backend_settings), checked before use.

  slurm_conf       path to slurm.conf (SLURM_CONF for every call); default: the CLI's own default
  bin_dir          folder holding sbatch, squeue, … (default: SLURM_BIN_DIR, else PATH)
  partition        the governed partition (required)
  timeout_seconds  bound of every CLI call (default: SLURM_CALL_TIMEOUT_SECONDS)
  gres_models      GRES type -> portal GPU model name, e.g. {"h100": "H100-80G"} (required)
  job_prefix       job-name prefix of portal-submitted jobs (default "portal")
  default_working_dir  where a job without working_dir runs (default "/tmp")
  account          --account of portal-submitted jobs (default: the job's tenant slug; "" for none)
  native_intake    import held jobs submitted with sbatch to the partition (default false)
  account_tenants  Slurm account -> tenant slug for native jobs (default: the same name)
  qos_classes      Slurm QOS -> workload class for native jobs; default_workload_class otherwise
  default_workload_class  (default "training")
  default_project  project slug native jobs are attributed to (default "default")
  log_dir          where portal jobs' --output/--error go, <job name>-<Slurm id>.out/.err; on a filesystem the
                   compute nodes share (default "<default_working_dir>/portal-logs/<partition>")
  log_retention_days  how long those files are kept after their last write (default 30; the logs of a
                   stopped job are kept as long as any other)
  rest_socket      path of slurmrestd's unix socket (`slurmrestd -a rest_auth/local unix:<path>`): portal jobs
                   are submitted through it, one HTTP request each instead of an `sbatch` process (default
                   "": `sbatch`)
"""
from dataclasses import dataclass, field

from django.conf import settings as django_settings

WORKLOAD_CLASSES = ("online_inference", "evaluation", "training", "batch_inference", "experiment", "validation")


@dataclass(frozen=True)
class SlurmConfig:
    partition: str
    gres_models: dict[str, str]
    slurm_conf: str = ""
    bin_dir: str = ""
    timeout_seconds: float = 20.0
    job_prefix: str = "portal"
    default_working_dir: str = "/tmp"
    account: str | None = None
    native_intake: bool = False
    account_tenants: dict[str, str] = field(default_factory=dict)
    qos_classes: dict[str, str] = field(default_factory=dict)
    default_workload_class: str = "training"
    default_project: str = "default"
    log_dir: str = ""
    log_retention_days: int = 30
    rest_socket: str = ""

    @property
    def logs(self) -> str:
        return self.log_dir or f"{self.default_working_dir.rstrip('/')}/portal-logs/{self.partition}"

    def model_for(self, gres_type: str) -> str | None:
        return self.gres_models.get(gres_type)

    def gres_for(self, model_name: str) -> str | None:
        return next((t for t, m in self.gres_models.items() if m == model_name), None)

    # The site's names in the portal's terms: one rule for native intake and the what-if import of sacct.
    def tenant_for(self, account: str) -> str:
        """The tenant slug a Slurm account stands for (account_tenants, else the same name)."""
        return self.account_tenants.get(account, account)

    def workload_class_for(self, qos: str) -> str:
        """The workload class a Slurm QOS stands for (qos_classes, else default_workload_class)."""
        return self.qos_classes.get(qos, self.default_workload_class)


def _str_map(value) -> bool:
    return isinstance(value, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in value.items())


def validate(values: dict) -> dict[str, str]:
    problems = {}
    if not isinstance(values.get("partition"), str) or not values.get("partition"):
        problems["partition"] = "the governed Slurm partition is required"
    if not _str_map(values.get("gres_models")) or not values.get("gres_models"):
        problems["gres_models"] = 'a map of GRES type to GPU model is required, e.g. {"h100": "H100-80G"}'
    for key in ("account_tenants", "qos_classes"):
        if key in values and not _str_map(values[key]):
            problems[key] = "a map of names to names"
    if "log_retention_days" in values and (isinstance(values["log_retention_days"], bool) or not isinstance(
            values["log_retention_days"], int) or values["log_retention_days"] < 1):
        problems["log_retention_days"] = "a whole number of days, at least 1"
    if values.get("log_dir") and (not isinstance(values["log_dir"], str) or not values["log_dir"].startswith("/")):
        problems["log_dir"] = "an absolute path"
    if values.get("rest_socket") and (not isinstance(values["rest_socket"], str)
                                      or not values["rest_socket"].startswith("/")):
        problems["rest_socket"] = "the absolute path of slurmrestd's unix socket, or \"\" to submit with sbatch"
    for key in ("slurm_conf", "bin_dir", "job_prefix", "default_working_dir", "default_project", "rest_socket"):
        if key in values and not isinstance(values[key], str):
            problems[key] = "a string"
    if "account" in values and values["account"] is not None and not isinstance(values["account"], str):
        problems["account"] = "a string or null"
    if "timeout_seconds" in values:
        t = values["timeout_seconds"]
        if isinstance(t, bool) or not isinstance(t, (int, float)) or not 0 < t <= 600:
            problems["timeout_seconds"] = "a number of seconds between 0 and 600"
    if "native_intake" in values and not isinstance(values["native_intake"], bool):
        problems["native_intake"] = "true or false"
    classes = [values.get("default_workload_class", "training"), *(values.get("qos_classes") or {}).values()] \
        if _str_map(values.get("qos_classes", {})) else [values.get("default_workload_class", "training")]
    if any(c not in WORKLOAD_CLASSES for c in classes):
        problems["qos_classes" if "qos_classes" in values else "default_workload_class"] = \
            f"workload classes are {', '.join(WORKLOAD_CLASSES)}"
    known = set(SlurmConfig.__dataclass_fields__)
    unknown = sorted(set(values) - known)
    if unknown:
        problems["settings"] = f"unknown keys {', '.join(unknown)}"
    return problems


def load(values: dict) -> SlurmConfig:
    defaults = {"bin_dir": getattr(django_settings, "SLURM_BIN_DIR", ""),
                "timeout_seconds": float(getattr(django_settings, "SLURM_CALL_TIMEOUT_SECONDS", 20))}
    return SlurmConfig(**{**defaults, **values})
