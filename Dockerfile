FROM python:3.11-slim

# bubblewrap: run_command's sandbox (it also needs user namespaces from the container runtime; without
# them run_command stays off and the log says why).
RUN apt-get update && apt-get install -y --no-install-recommends bubblewrap && rm -rf /var/lib/apt/lists/*

ENV PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    BOT_CHANNELS__CONSOLE__ENABLED=false \
    BOT_HTTP__ENABLED=true \
    BOT_HTTP__HOST=0.0.0.0 \
    BOT_HTTP__PORT=8080

# /app is the bot's project folder. The image holds no configuration and no agent files (the four example
# agents of config/agents stay in the repository): mount a project's config/ at /app/config (compose does,
# read-only), or set BOT_<SECTION>__<KEY> variables. /app/data, the data folder (`data_dir: data` of the file
# `bot init` writes, and the built-in default), is the /data volume, so no variable overrides that key.
WORKDIR /app
# Dependencies first, in a layer of their own: a change to the code does not reinstall them.  Their versions are
# pinned by deploy/constraints.txt (every package the image installs; `python deploy/constraints.py` refreshes it
# from a tested environment), so a rebuild installs what was tested, not whatever the registry has that day.
COPY pyproject.toml ./
COPY deploy/constraints.txt ./deploy/
RUN python -c "import tomllib; p = tomllib.load(open('pyproject.toml', 'rb'))['project']; \
print('\n'.join(p['dependencies'] + p['optional-dependencies']['scale']))" > /tmp/requirements.txt \
    && pip install -c deploy/constraints.txt -r /tmp/requirements.txt \
    && useradd --create-home --uid 10001 bot && mkdir -p /data && chown bot:bot /data && ln -s /data /app/data
COPY README.md ./
COPY bot ./bot
COPY channels ./channels
# agents/ is the Python package of the agent runners (not agent files).
COPY agents ./agents
RUN pip install --no-deps .

USER bot
VOLUME ["/data"]
EXPOSE 8080
# `bot health` fails while starting and when no channel is enabled; a channel that cannot reach its platform
# is reported as degraded (the others serve) and stays healthy.
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 CMD ["bot", "health"]
CMD ["bot", "run"]
