#!/bin/sh
# The container's HEALTHCHECK: `manage.py healthcheck` for the role the entrypoint started.
exec python /app/manage.py healthcheck "$(cat /tmp/role 2>/dev/null || echo web)"
