-- The one form of a date-time in every body, export and payload (libs/common/render.py):
-- UTC, six fractional digits, `Z`, e.g. 2024-05-01T09:30:00.000000Z. Every SQL that builds
-- JSON writes its date-times through this function. It is a plain SQL expression declared as
-- volatile as to_char (STABLE), so PostgreSQL inlines it into the calling query.
CREATE OR REPLACE FUNCTION public.ims_json_ts(t timestamptz) RETURNS text
    LANGUAGE sql STABLE STRICT PARALLEL SAFE
    AS $$ SELECT to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') $$;
