# hindsight HTTP + MCP server (docs/deploy.md).
#   docker build -t hindsight .        docker compose up -d   (docker-compose.yml)
# Installs the extras server (FastAPI, uvicorn, mcp) and postgres (psycopg); no torch: the
# default embedder is "hash", and EMBEDDING_MODEL=litellm:<model> uses a provider's API.

FROM python:3.12-slim AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
RUN python -m venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH
WORKDIR /src
COPY pyproject.toml README.md ./
COPY hindsight ./hindsight
COPY integrations ./integrations
RUN pip install ".[server,postgres]"

FROM python:3.12-slim
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    HINDSIGHT_DATA_DIR=/data
# A fixed uid/gid, so a bind-mounted ./data/hindsight can be given to it: chown 10001:10001.
RUN groupadd --system --gid 10001 hindsight \
    && useradd --system --uid 10001 --gid hindsight --home-dir /data --no-create-home \
       --shell /usr/sbin/nologin hindsight \
    && mkdir -p /data \
    && chown hindsight:hindsight /data
COPY --from=build /opt/venv /opt/venv
USER hindsight
WORKDIR /data
VOLUME ["/data"]
EXPOSE 8710
# No curl in slim images: the probe is Python's urllib (exit 0 when /health answers 200).
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 \
    CMD ["python", "-c", "import sys, urllib.request; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:8710/health', timeout=4).status == 200 else 1)"]
CMD ["hindsight", "serve", "--host", "0.0.0.0", "--port", "8710"]
