"""Where gpuq finds the portal and the token: the environment (`GPUQ_URL`, `GPUQ_TOKEN`, `GPUQ_TENANT`,
`GPUQ_PROJECT`) wins over the config file (`GPUQ_CONFIG`, else `~/.config/gpuq/config.toml`)."""
import os
import tomllib
from dataclasses import dataclass
from pathlib import Path

from portal.cli.errors import EXIT_USAGE, CliError

NO_URL = ("No portal address: set GPUQ_URL (e.g. http://localhost:8000) or `url` in {path}.")
NO_TOKEN = ("No token: create one on <portal>/account/tokens/, then set GPUQ_TOKEN or `token` in {path}.")
BAD_CONFIG = "Cannot read {path}: {error}"
BAD_URL = "GPUQ_URL must start with http:// or https://, not {value!r}."
KEYS = ("url", "token", "tenant", "project")


@dataclass(frozen=True)
class Config:
    url: str
    token: str
    tenant: str
    project: str
    path: Path


def config_path() -> Path:
    explicit = os.environ.get("GPUQ_CONFIG")
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config"
    return Path(base) / "gpuq" / "config.toml"


def load(*, url: str | None = None, need_token: bool = True) -> Config:
    path = config_path()
    values: dict[str, str] = {}
    if path.is_file():
        try:
            with path.open("rb") as f:
                data = tomllib.load(f)
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise CliError(BAD_CONFIG.format(path=path, error=exc), EXIT_USAGE) from None
        values = {k: str(data[k]) for k in KEYS if data.get(k) not in (None, "")}
    for key in KEYS:
        if env := os.environ.get(f"GPUQ_{key.upper()}"):
            values[key] = env
    if url:
        values["url"] = url
    if not values.get("url"):
        raise CliError(NO_URL.format(path=path), EXIT_USAGE)
    if not values["url"].startswith(("http://", "https://")):
        raise CliError(BAD_URL.format(value=values["url"]), EXIT_USAGE)
    if need_token and not values.get("token"):
        raise CliError(NO_TOKEN.format(path=path), EXIT_USAGE)
    return Config(url=values["url"].rstrip("/"), token=values.get("token", ""), tenant=values.get("tenant", ""),
                  project=values.get("project", ""), path=path)
