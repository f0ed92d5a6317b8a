# Two commands for a fresh machine: `make demo` (embedded SQLite, no servers) and `make test`
# (the full suite against PostgreSQL and Redis). Everything else here serves those two.
VENV ?= .venv
PY := $(VENV)/bin/python
PORT ?= 8000
# `make demo BACKEND=slurm` also starts a local Slurm (root, Debian's slurm packages) and a pool governing it.
BACKEND ?= simulated

# A Python >= 3.12: python3.13, python3.12, python3, then pyenv's installs (their shims refuse
# versions that are not selected, so the check runs each candidate).
FIND_PYTHON = for c in python3.14 python3.13 python3.12 python3 $$HOME/.pyenv/versions/3.1[2-9]*/bin/python3 /usr/local/bin/python3.1[2-9] /usr/bin/python3.1[2-9]; do \
	  if "$$c" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 12) else 1)' >/dev/null 2>&1; then echo "$$c"; exit 0; fi; \
	done; echo "No Python >= 3.12 found (tried python3.13, python3.12, python3, ~/.pyenv/versions)" >&2; exit 1

export TEST_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/portal
export TEST_REDIS_URL ?= redis://127.0.0.1:6379/15

.PHONY: demo test fuzz venv clean

$(VENV)/.installed: pyproject.toml
	@python=$$($(FIND_PYTHON)) && echo "Using $$python ($$($$python --version))" && \
	  "$$python" -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet ".[test]"
	@touch $@

venv: $(VENV)/.installed

# Links in the demo's mail and IM point at the port it serves (an address set in the environment wins).
demo: export PORTAL_BASE_URL ?= http://localhost:$(PORT)
# The demo's IM and mail receivers take ports derived from it (portal/settings.py: PORT+25, PORT+26).
demo: export PORT := $(PORT)
demo: venv
	PORTAL_ENV=development $(PY) manage.py migrate --noinput
	PORTAL_ENV=development $(PY) manage.py demo_data
	@if [ "$(BACKEND)" = "slurm" ]; then PORTAL_ENV=development $(PY) manage.py demo_slurm; fi
	PORTAL_ENV=development $(PY) manage.py rundemo --port $(PORT)

test: venv
	DATABASE_URL=$(TEST_DATABASE_URL) CELERY_BROKER_URL=$(TEST_REDIS_URL) PORTAL_ENV=test \
	  $(PY) -m pytest -p no:cacheprovider -n 2 $(PYTEST_ARGS)

# A bounded schemathesis run against the live API (scripts/fuzz): 0 server errors, 0 schema violations.
fuzz: venv
	PY=$(PY) scripts/fuzz

clean:
	rm -rf $(VENV) var
