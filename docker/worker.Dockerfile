# The kmirror worker image (docker-compose.yml service `worker`): worker.ts, what `npm start` runs,
# on Node 24 through tsx. Configuration comes from the environment (see .env.example).
FROM node:24-bookworm-slim

WORKDIR /app
# Dependencies first so source edits reuse this layer. tsx is a devDependency and the worker runs
# through it, so this is a full install.
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund && npm cache clean --force
COPY . .

USER node
# Node itself (not npm or the tsx CLI wrapper) is the main process, so SIGTERM from
# `docker compose stop` reaches the worker's graceful shutdown directly.
CMD ["node", "--import", "tsx", "worker.ts"]
