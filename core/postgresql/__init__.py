"""PostgreSQL as Django's database backend (``ENGINE = "core.postgresql"``; settings.py picks it
for a ``postgres://`` DATABASE_URL): Django's own, with the time bounds a web process sets
(base.py)."""
