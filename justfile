# Iris task runner. Every recipe sets itself up: a fresh clone needs only `pip install rust-just`.

set shell := ["bash", "-euo", "pipefail", "-c"]

venv := ".venv"
py := venv / "bin/python"

# Serve on the embedded default (SQLite + local disk + local model): set up, migrate, run.
run: setup migrate
    {{py}} -m iris serve

# Set up, then run the whole suite (SQLite always; PostgreSQL too where initdb/pg_ctl exist).
test *args: setup-dev js-setup
    {{py}} -m pytest {{args}}

# ruff (lint + format check), mypy, the layer rules (lint-imports), and the chat page's JavaScript type-checked by tsc.
lint: setup-dev js-setup
    {{venv}}/bin/ruff check .
    {{venv}}/bin/ruff format --check .
    {{venv}}/bin/mypy
    {{venv}}/bin/lint-imports --no-cache
    node_modules/.bin/tsc -p jsconfig.json

# Install the JavaScript checker (package-lock.json) when node_modules is missing or stale.
js-setup:
    #!/usr/bin/env bash
    set -euo pipefail
    stamp="node_modules/.installed"
    want="$(sha256sum package-lock.json | cut -d' ' -f1)"
    if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then exit 0; fi
    npm ci --no-audit --no-fund --silent
    echo "$want" > "$stamp"

# Build the documentation site (mkdocs.yml, docs/) into site/: offline, strict (a broken link, an unknown
# anchor or a page missing from the nav fails the build).
docs: setup-dev
    NO_MKDOCS_2_WARNING=1 {{venv}}/bin/mkdocs build --strict -d site

# Bundle the useChat example (examples/ai-sdk-chat) and serve it on PORT; its README says how to open it.
example-ai-sdk port="5173": js-setup
    node_modules/.bin/esbuild examples/ai-sdk-chat/app.jsx --bundle --format=esm --jsx=automatic \
      --define:process.env.NODE_ENV='"production"' --outfile=examples/ai-sdk-chat/dist/app.js
    python3 -m http.server -d examples/ai-sdk-chat {{port}}

# Apply migrations to the configured database (IRIS_DATABASE_URL, default ./.iris/iris.db).
migrate: setup
    {{venv}}/bin/alembic upgrade head

# New Alembic revision from the models: just revision "add things"
revision message: setup-dev
    {{venv}}/bin/alembic revision --autogenerate -m "{{message}}"

# Print a bearer token for USER (ROLE: user, admin or guest), signed with this data dir's secret.
token user role="user": setup
    {{py}} -m iris token {{user}} {{role}}

# Send a tiny request (and a tiny image to vision models) to each enabled model, or the REFs named;
# prints a table, exits 1 if any failed.
check-models *refs: setup migrate
    {{py}} -m iris models check {{refs}}

# Apply a models file (TOML, see examples/models.toml) to the catalogue now and print what changed.
sync-models file: setup migrate
    {{py}} -m iris models sync {{file}}

# Run the benchmarks under bench/, print their figures and write them as JSON under bench/results/. The LiteLLM
# proxy that bench/peers.py measures against (the `bench` extra) goes into its own .venv-bench: it needs an
# older LiteLLM than Iris uses.
bench: setup-dev
    #!/usr/bin/env bash
    set -uo pipefail
    if command -v uv >/dev/null 2>&1; then
        { [ -x .venv-bench/bin/python ] || uv venv -q .venv-bench; } && uv pip install -q --python .venv-bench/bin/python -e '.[bench]' \
            || echo "bench extra not installed: bench/peers.py skips the LiteLLM peer"
    else
        { [ -x .venv-bench/bin/python ] || python3 -m venv .venv-bench; } && .venv-bench/bin/python -m pip install -q --disable-pip-version-check -e '.[bench]' \
            || echo "bench extra not installed: bench/peers.py skips the LiteLLM peer"
    fi
    "{{py}}" bench/run_all.py

# What serving needs: Iris and its runtime dependencies in .venv, no test tools (again when pyproject.toml changes).
setup: (_install "" "serve")

# `setup` plus what the suite, the linters, the docs and the benches need (the dev and litellm extras).
setup-dev: (_install "[dev,litellm]" "dev")

# Install the project with EXTRAS into .venv unless the stamp says this pyproject.toml is already there.
_install extras stamp:
    #!/usr/bin/env bash
    set -euo pipefail
    stamp="{{venv}}/.installed-{{stamp}}"
    want="$(sha256sum pyproject.toml | cut -d' ' -f1)"
    if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then exit 0; fi
    # Say what happens: a first install takes a minute or more, and silence looks like a hang.
    echo "iris: installing Iris{{extras}} into {{venv}} (first run, or pyproject.toml changed)…" >&2
    if command -v uv >/dev/null 2>&1; then
        [ -x "{{py}}" ] || uv venv "{{venv}}"
        # Bytecode compiled now, not at each import: with PYTHONDONTWRITEBYTECODE (common in containers)
        # every process would compile LiteLLM's sources, each big module one GIL-holding call.
        uv pip install --python "{{py}}" --compile-bytecode -e '.{{extras}}'
    else
        [ -x "{{py}}" ] || python3 -m venv "{{venv}}"
        "{{py}}" -m pip install --disable-pip-version-check -e '.{{extras}}'
    fi
    echo "$want" > "$stamp"
    # The dev install holds everything serving needs.
    if [ "{{stamp}}" = dev ]; then echo "$want" > "{{venv}}/.installed-serve"; fi
    echo "iris: set-up done" >&2
