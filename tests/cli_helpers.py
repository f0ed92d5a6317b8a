"""gpuq as a user has it: the package built and installed into a private folder (pyproject's own
configuration, offline), and run from outside the checkout, so it cannot lean on Django or the tree."""
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from tests.processes import ROOT


def install_gpuq(folder: Path) -> Path:
    """Build from a copy of what the package ships (pyproject, README, portal/cli) and install with pip."""
    source = folder / "source"
    (source / "portal").mkdir(parents=True)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    shutil.copytree(ROOT / "portal" / "cli", source / "portal" / "cli",
                    ignore=shutil.ignore_patterns("__pycache__"))
    site = folder / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                    "--target", str(site), str(source)], check=True, capture_output=True)
    return site


@dataclass
class Result:
    code: int
    out: str
    err: str

    def json(self):
        return json.loads(self.out)


class Gpuq:
    def __init__(self, site: Path, home: Path):
        self.site = site
        self.home = home

    def __call__(self, *args: str, url: str = "", token: str = "", **env) -> Result:
        environment = {"PATH": os.environ.get("PATH", ""), "HOME": str(self.home), "PYTHONPATH": str(self.site),
                       "LANG": "C.UTF-8", "TZ": "Asia/Shanghai", "PYTHONIOENCODING": "utf-8"}
        if url:
            environment["GPUQ_URL"] = url
        if token:
            environment["GPUQ_TOKEN"] = token
        environment.update({k.upper(): v for k, v in env.items()})
        done = subprocess.run([str(self.site / "bin" / "gpuq"), *args], cwd=self.home, env=environment,
                              capture_output=True, text=True, timeout=60)
        return Result(done.returncode, done.stdout, done.stderr)
