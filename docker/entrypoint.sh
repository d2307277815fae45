#!/bin/sh
# One image, five roles: `web` (default: pages and the API), `ws` (websockets), `worker`,
# `beat`, `broadcast` (live updates);
# `migrate` runs migrations;
# anything else runs as given (e.g. `python manage.py createapikey tetris`).
set -e
# The health check runs beside the process and checks the role it runs.
echo "${1:-web}" > /tmp/role
case "${1:-web}" in
  web|ws)
    # Processes that serve requests bound their PostgreSQL statements (settings.py): a hung
    # database is a 503 within seconds. The other roles' long jobs are not bounded.
    export DB_STATEMENT_TIMEOUT_SECS="${DB_STATEMENT_TIMEOUT_SECS:-2}" ;;
esac
case "${1:-web}" in
  web)
    exec uvicorn leaderboard_site.asgi:application --host 0.0.0.0 --port "${PORT:-8000}" \
      --workers "${WEB_CONCURRENCY:-2}" --proxy-headers --forwarded-allow-ips "${FORWARDED_ALLOW_IPS:-127.0.0.1}" ;;
  ws)
    exec uvicorn leaderboard_site.asgi:application --host 0.0.0.0 --port "${PORT:-8000}" \
      --workers "${WEB_WS_WORKERS:-1}" --proxy-headers --forwarded-allow-ips "${FORWARDED_ALLOW_IPS:-127.0.0.1}" ;;
  worker)
    exec celery -A leaderboard_site worker --loglevel "${LOG_LEVEL:-INFO}" --concurrency "${WORKER_CONCURRENCY:-2}" ;;
  beat)
    exec celery -A leaderboard_site beat --loglevel "${LOG_LEVEL:-INFO}" --schedule /tmp/celerybeat-schedule ;;
  broadcast)
    exec python manage.py broadcast ;;
  migrate)
    # The database's migrations, then Redis data written by earlier versions.
    python manage.py migrate --noinput
    exec python manage.py upgrade_boards ;;
  *)
    exec "$@" ;;
esac
