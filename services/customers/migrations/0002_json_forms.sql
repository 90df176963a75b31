-- The JSON form of a customer (CustomerFull) wherever it appears: the customers service's
-- answers and events, and the analytics export. Built as in ideas' 0400_json_forms.sql: a row
-- of a composite type (the OpenAPI document's key order) turned into compact JSON, inlined
-- into the calling query; date-times through public.ims_json_ts, money through trim_scale.

-- `metadata` keeps the JSON text the service writes (compact, the client's key order) instead
-- of jsonb, whose text form has spaces and sorted keys. Rows written before are rewritten
-- compactly (their key order is jsonb's, the original one being lost).
CREATE FUNCTION pg_temp.compact(j jsonb) RETURNS text
    LANGUAGE sql IMMUTABLE
    AS $$ SELECT CASE jsonb_typeof(j)
        WHEN 'object' THEN '{' || coalesce((SELECT string_agg(to_json(k)::text || ':'
                                                              || pg_temp.compact(v), ',')
                                              FROM jsonb_each(j) AS e(k, v)), '') || '}'
        WHEN 'array' THEN '[' || coalesce((SELECT string_agg(pg_temp.compact(v), ',' ORDER BY n)
                                             FROM jsonb_array_elements(j)
                                                  WITH ORDINALITY AS e(v, n)), '') || ']'
        ELSE j::text END $$;

ALTER TABLE customers.customers
    ALTER COLUMN metadata TYPE json USING pg_temp.compact(metadata)::json;

CREATE TYPE customers.customer_form AS (
    id uuid, name text, email text, domain text, arr numeric, mrr numeric, plan text,
    source text, "externalId" text, "crmCompanyId" text, "ideaCount" bigint, metadata json,
    "createdAt" text, "updatedAt" text);

-- CustomerFull; `idea_count` is the caller's count of the customer's links (a subquery inside
-- the function would keep PostgreSQL from inlining it).
CREATE FUNCTION customers.customer_json(c customers.customers, idea_count bigint) RETURNS json
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$ SELECT row_to_json(ROW(
        c.id, c.name, c.email, c.domain, trim_scale(c.arr), trim_scale(c.mrr), c.plan, c.source,
        c.external_id, c.crm_company_id, idea_count, c.metadata, public.ims_json_ts(c.created_at),
        public.ims_json_ts(c.updated_at))::customers.customer_form) $$;
