"""Accounting for the private local Slurm: slurmdbd backed by a MariaDB of its own (Debian's `mariadb-server`
and `slurmdbd`), in the cluster's folder, on free loopback ports. The machine may run a MariaDB at 3306; this
never uses it, so the tests and CI depend on nothing but the packages. Runs as root, like the rest."""
from __future__ import annotations

import secrets
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

BINARIES = ("mariadb-install-db", "mariadbd", "mariadb-admin", "slurmdbd", "sacctmgr", "sacct")
INSTALL_HINT = "apt-get install -y mariadb-server slurmdbd"


@dataclass
class LocalAccounting:
    root: Path  # the cluster's folder; the database lives in root/db
    env: dict[str, str]
    db_port: int = 0
    dbd_port: int = 0
    password: str = field(default_factory=lambda: secrets.token_hex(12))

    @property
    def datadir(self) -> Path:
        return self.root / "db" / "data"

    @property
    def socket(self) -> Path:
        return self.root / "db" / "mariadb.sock"

    def missing(self) -> list[str]:
        return [b for b in BINARIES if shutil.which(b) is None and not Path("/usr/sbin", b).exists()]

    def slurm_conf_lines(self) -> list[str]:
        """What slurm.conf says so slurmctld records every job in this slurmdbd."""
        # AccountingStoragePass is, for slurmdbd, the munge socket its clients sign with (slurm.conf(5)).
        return ["AccountingStorageType=accounting_storage/slurmdbd", "AccountingStorageHost=127.0.0.1",
                f"AccountingStoragePort={self.dbd_port}", f"AccountingStoragePass={self.root}/munge/munge.sock"]

    def write_config(self, *, slurmdbd_pid: Path) -> None:
        (self.root / "db").mkdir(parents=True, exist_ok=True)
        conf = self.root / "slurmdbd.conf"  # slurmdbd reads it beside SLURM_CONF; it must be 0600
        conf.write_text("\n".join([
            "AuthType=auth/munge", f"AuthInfo=socket={self.root}/munge/munge.sock",
            "DbdHost=localhost", "DbdAddr=127.0.0.1", f"DbdPort={self.dbd_port}", "SlurmUser=root",
            f"PidFile={slurmdbd_pid}", f"LogFile={self.root}/log/slurmdbd.log", "DebugLevel=info",
            "StorageType=accounting_storage/mysql", "StorageHost=127.0.0.1", f"StoragePort={self.db_port}",
            "StorageUser=slurm", f"StoragePass={self.password}", "StorageLoc=slurm_acct_db",
        ]) + "\n")
        conf.chmod(0o600)

    def mariadb_argv(self) -> list[str]:
        # Small buffers and logs: a test database of a few hundred job rows, started once per session.
        return ["mariadbd", "--no-defaults", f"--datadir={self.datadir}", "--user=root", f"--socket={self.socket}",
                f"--port={self.db_port}", "--bind-address=127.0.0.1", "--skip-name-resolve", "--skip-log-bin",
                f"--pid-file={self.root / 'db' / 'mariadbd.pid'}", f"--log-error={self.root / 'log' / 'mariadbd.log'}",
                f"--init-file={self.root / 'db' / 'init.sql'}", "--innodb-buffer-pool-size=32M",
                "--innodb-log-file-size=8M", "--innodb-flush-log-at-trx-commit=0"]

    def install_database(self) -> None:
        """A fresh data folder (about 1 s) and the grant slurmdbd signs in with, applied at every start."""
        if not (self.datadir / "mysql").exists():
            subprocess.run(["mariadb-install-db", "--no-defaults", f"--datadir={self.datadir}", "--user=root",
                            "--auth-root-authentication-method=normal", "--skip-test-db", "--skip-name-resolve",
                            "--innodb-log-file-size=8M"],
                           capture_output=True, text=True, timeout=120, check=True)
        (self.root / "db" / "init.sql").write_text(
            f"CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY '{self.password}';\n"
            f"ALTER USER 'slurm'@'127.0.0.1' IDENTIFIED BY '{self.password}';\n"
            "GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';\n")

    def database_answers(self) -> bool:
        return subprocess.run(["mariadb-admin", "--no-defaults", f"--socket={self.socket}", "-uroot", "ping"],
                              capture_output=True, text=True, timeout=10).returncode == 0

    def sacctmgr(self, *argv: str, timeout: float = 30) -> subprocess.CompletedProcess:
        return subprocess.run(["sacctmgr", "-i", *argv], env=self.env, capture_output=True, text=True,
                              timeout=timeout)

    def wait_dbd(self, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        last = ""
        while time.monotonic() < deadline:
            done = self.sacctmgr("-n", "show", "cluster", "format=cluster", timeout=10)
            if done.returncode == 0:
                return
            last = done.stderr.strip()
            time.sleep(0.2)
        raise TimeoutError(f"slurmdbd did not answer sacctmgr in {timeout}s: {last}")

    def remove_data(self) -> None:
        shutil.rmtree(self.root / "db", ignore_errors=True)

