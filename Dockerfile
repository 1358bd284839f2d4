FROM python:3.11-slim

ENV PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    BOT_CHANNELS__CONSOLE__ENABLED=false \
    BOT_HTTP__ENABLED=true \
    BOT_HTTP__HOST=0.0.0.0 \
    BOT_HTTP__PORT=8080 \
    BOT_STORE__DATA_DIR=/data

WORKDIR /app
COPY pyproject.toml README.md ./
COPY bot ./bot
COPY channels ./channels
COPY agents ./agents
COPY config ./config
RUN pip install . && useradd --create-home --uid 10001 bot && mkdir -p /data && chown bot:bot /data

USER bot
VOLUME ["/data"]
EXPOSE 8080
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 CMD ["bot", "health"]
CMD ["bot", "run"]
