# syntax=docker/dockerfile:1
# One image runs the web server, the Celery worker, beat or the live broadcaster:
# `docker run IMAGE web|worker|beat|broadcast|migrate`.

FROM python:3.11-slim AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
RUN python -m venv /opt/venv
COPY requirements.txt constraints.txt /tmp/
RUN /opt/venv/bin/pip install -r /tmp/requirements.txt -c /tmp/constraints.txt

FROM python:3.11-slim AS runtime
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    DJANGO_SETTINGS_MODULE=leaderboard_site.settings \
    DEBUG=0 \
    STATIC_ROOT=/app/staticfiles \
    VAR_DIR=/tmp/var \
    LOG_FORMAT=json \
    PROMETHEUS_MULTIPROC_DIR=/var/lib/leaderboard/metrics \
    PORT=8000
RUN groupadd --system app && useradd --system --gid app --home-dir /app --no-create-home app \
    && mkdir -p /var/lib/leaderboard/metrics && chown app:app /var/lib/leaderboard/metrics
COPY --from=build /opt/venv /opt/venv
WORKDIR /app
COPY --chown=app:app . /app
# collectstatic needs settings to import; this throw-away key is used for nothing else.
RUN SECRET_KEY=collectstatic-only-build-key python manage.py collectstatic --noinput \
    && rm -rf /app/var /app/.venv
USER app
EXPOSE 8000
# Each role's own check (docker/entrypoint.sh records the role): the web server's
# /healthz; the worker's, beat's and broadcaster's heartbeats and their Redis.
HEALTHCHECK --interval=30s --timeout=10s --start-period=30s --retries=3 \
  CMD ["/app/docker/healthcheck.sh"]
ENTRYPOINT ["/app/docker/entrypoint.sh"]
CMD ["web"]
