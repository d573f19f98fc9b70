#!/bin/bash
# First start of the compose PostgreSQL only (docker-entrypoint-initdb.d):
# the roles mnemo expects (libs/pg: mnemo_owner owns the schema and cannot
# log in; mnemo_app is the services' login, under row-level security;
# mnemo_system is the relay's and the cross-tenant passes' login) and a
# login for `mnemo migrate` that may SET ROLE mnemo_owner. No role here is a
# superuser or BYPASSRLS, which mnemo refuses.
set -euo pipefail

psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname postgres \
  -v migrator_password="$POSTGRES_MIGRATOR_PASSWORD" \
  -v app_password="$POSTGRES_APP_PASSWORD" \
  -v system_password="$POSTGRES_SYSTEM_PASSWORD" <<'SQL'
CREATE ROLE mnemo_owner NOLOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE;
CREATE ROLE mnemo_app LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE PASSWORD :'app_password';
CREATE ROLE mnemo_system LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE PASSWORD :'system_password';
CREATE ROLE mnemo_migrator LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE IN ROLE mnemo_owner PASSWORD :'migrator_password';
ALTER DATABASE mnemo OWNER TO mnemo_owner;
SQL

# PostgreSQL 15+ no longer lets every role create in `public`: the owner
# makes the tables there.
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname mnemo <<'SQL'
ALTER SCHEMA public OWNER TO mnemo_owner;
SQL
