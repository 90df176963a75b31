-- The analytics service owns no table: it reads the ideas and customers schemas through this
-- role, which can read and nothing else. The role is cluster-wide (it outlives any one
-- database), so it is created only when absent; the grants are per database.
-- The process connects as its login user and switches to this role on every connection
-- (ANALYTICS_DB_ROLE); in production grant the role to the login user of the replica instead.
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'ims_analytics') THEN
        CREATE ROLE ims_analytics NOLOGIN;
    END IF;
END
$$;

GRANT USAGE ON SCHEMA ideas, customers TO ims_analytics;
GRANT SELECT ON ALL TABLES IN SCHEMA ideas, customers TO ims_analytics;
-- Tables that later migrations of those services create are readable too.
ALTER DEFAULT PRIVILEGES IN SCHEMA ideas GRANT SELECT ON TABLES TO ims_analytics;
ALTER DEFAULT PRIVILEGES IN SCHEMA customers GRANT SELECT ON TABLES TO ims_analytics;
