# The project's checks. `make check` is what CI runs (.ci/run, the README's quick start), in order,
# stopping at the first failure; the other targets are its parts, and `fmt` fixes what it can.
# pytest -rs: the summary names each skipped test and why (the browser tests without chromium).
# pytest -n 4 --dist load --maxschedchunk 1: four workers, each taking one test at a time, the
# tests marked `long` first (tests/scheduling.py, docs/decisions.md "Four workers").
# `aiohttp-lowest`: pyproject.toml admits a range of aiohttp (`aiohttp>=LOW,<HIGH`); the tests
# above run on the newest of it (what pip installs), and the HTTP tests again on the lowest,
# installed alone (no dependencies: the venv's serve it) into a folder put first on PYTHONPATH.
# The HTTP tests: every test of a module that uses aiohttp's private names
# (simulator/http/aiohttp_private.py), the fence's own check, the front and the error paths.
.PHONY: check fmt lint types test aiohttp-lowest

# Bytecode is cached for the suite's thousands of Python processes, in the temp dir, not in the
# clone, whatever PYTHONDONTWRITEBYTECODE says (tests/conftest.py does the same for a bare pytest).
unexport PYTHONDONTWRITEBYTECODE
export PYTHONPYCACHEPREFIX ?= $(or $(TMPDIR),/tmp)/payorch-tests-pycache

AIOHTTP_LOWEST := $(shell sed -n 's/.*"aiohttp>=\([0-9.]*\),.*/\1/p' pyproject.toml)
AIOHTTP_LOWEST_DIR := $(shell python -c "import sys; print(sys.prefix)")/aiohttp-$(AIOHTTP_LOWEST)
HTTP_TESTS := tests/unit/test_aiohttp_fence.py tests/api/test_connections.py \
	tests/api/test_answer.py tests/api/test_body_at_hand.py tests/api/test_front_routes.py \
	tests/api/test_namespaces.py tests/api/test_smoke.py tests/api/test_payments_create.py \
	tests/api/test_hostile.py tests/api/test_envelope.py

check:
	ruff format --check .
	ruff check .
	mypy
	pytest -n 4 --dist load --maxschedchunk 1 -rs
	$(MAKE) aiohttp-lowest

aiohttp-lowest:
	test -d $(AIOHTTP_LOWEST_DIR)/aiohttp || pip install -q --no-deps \
		--target $(AIOHTTP_LOWEST_DIR) aiohttp==$(AIOHTTP_LOWEST)
	PYTHONPATH=$(AIOHTTP_LOWEST_DIR) python -c "import aiohttp, sys; \
		print('aiohttp', aiohttp.__version__, 'from', aiohttp.__file__); \
		sys.exit(aiohttp.__version__ != '$(AIOHTTP_LOWEST)')"
	PYTHONPATH=$(AIOHTTP_LOWEST_DIR) pytest -n 4 --dist load --maxschedchunk 1 -rs $(HTTP_TESTS)

fmt:
	ruff format .
	ruff check --fix .

lint:
	ruff format --check .
	ruff check .

types:
	mypy

test:
	pytest -n 4 --dist load --maxschedchunk 1 -rs
