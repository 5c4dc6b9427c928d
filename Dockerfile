# syntax=docker/dockerfile:1
# energy-etl: `docker build -t energy-etl .`, then `docker run energy-etl run` (the service,
# default), `... simulate --host 0.0.0.0` (the API simulator) or any other CLI command.

# Node 24 LTS, pinned to an exact release (bump both stages together).
# ---- build: compile TypeScript, then keep only the production dependencies ----
FROM node:24.11.1-bookworm-slim AS build
# better-sqlite3 compiles from source when no prebuilt binary can be downloaded.
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build \
 && npm prune --omit=dev --no-audit --no-fund

# ---- runtime: production node_modules, compiled code, config and migrations; no compilers ----
FROM node:24.11.1-bookworm-slim AS runtime
RUN groupadd --system --gid 10001 energy \
 && useradd --system --uid 10001 --gid energy --home-dir /app --shell /usr/sbin/nologin energy \
 && mkdir -p /data \
 && chown energy:energy /data
WORKDIR /app
# Code and dependencies stay owned by root (read-only for the service); only /data is writable.
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY config ./config
COPY migrations ./migrations
COPY package.json ./
ENV NODE_ENV=production \
    STATE_DB=/data/state.db \
    HTTP_HOST=0.0.0.0 \
    HTTP_PORT=8080
# The SQLite state (cursors, backfill jobs, dead letters); keep it on a persistent volume.
VOLUME /data
EXPOSE 8080
USER energy
# Healthy means ready (/readyz: InfluxDB and the API reachable, recent syncs, lag), not only alive
# (/healthz). Slim images have no curl: node's own fetch asks.
HEALTHCHECK --interval=30s --timeout=10s --start-period=120s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.HTTP_PORT || '8080') + '/readyz').then((r) => process.exit(r.ok ? 0 : 1)).catch(() => process.exit(1))"]
# Node as dist/cli.js's first line starts it, with the V8 flags it takes at start (how soon the
# heap is collected: docs/design.md, Memory; what is held is the code's, and MEMORY_BUDGET_MB's);
# test/image checks the two agree.
ENTRYPOINT ["node", "--max-semi-space-size=8", "--heap-growing-percent=100", "--initial-old-space-size=48", "dist/cli.js"]
CMD ["run"]
