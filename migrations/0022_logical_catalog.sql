-- The logical catalog: catalog queries that look a table up by name (an
-- ORM's reflection, pgjdbc's DatabaseMetaData, information_schema) see
-- its twin's columns, defaults, constraints and indexes (rewrite/twin.go)
-- under the table's own OID and schema. The proxy rewrites such queries
-- onto these views; a query that names a table by its twin's OID (which
-- a RowDescription gives) still finds the twin's own columns.
--
-- The views list the catalogs' columns as this server has them (read
-- here, so a server version with other columns gets views to match);
-- columns of pseudo-type anyarray, which a view cannot have, are left
-- out.

-- Each table with a twin: its OID and the twin's.
CREATE VIEW pgonion.l_twins AS
SELECT c.oid AS physical, t.oid AS twin
FROM pg_catalog.pg_class c
JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
JOIN pg_catalog.pg_namespace tn ON tn.nspname = 'pgonion_l_' || n.nspname
JOIN pg_catalog.pg_class t ON t.relnamespace = tn.oid AND t.relname = c.relname AND t.relkind = 'r'
WHERE c.relkind = 'r';

-- The twin of a table, or the relation itself.
CREATE FUNCTION pgonion.l_relid(rel oid) RETURNS oid LANGUAGE sql STABLE AS
$$ SELECT coalesce((SELECT twin FROM pgonion.l_twins WHERE physical = rel), rel) $$;

-- The table of a twin, or the relation itself.
CREATE FUNCTION pgonion.l_physical(rel oid) RETURNS oid LANGUAGE sql STABLE AS
$$ SELECT coalesce((SELECT physical FROM pgonion.l_twins WHERE twin = rel), rel) $$;

-- The attribute numbers keys of a table with a twin name, as the twin
-- numbers the columns of the same names (a plain column keeps its name).
CREATE FUNCTION pgonion.l_attnums(rel oid, keys int2[]) RETURNS int2[] LANGUAGE sql STABLE AS
$$ SELECT array_agg(coalesce(ta.attnum, k.a) ORDER BY k.i)
   FROM unnest(keys) WITH ORDINALITY AS k(a, i)
   LEFT JOIN pg_catalog.pg_attribute pa ON pa.attrelid = rel AND pa.attnum = k.a
   LEFT JOIN pg_catalog.pg_attribute ta ON ta.attrelid = pgonion.l_relid(rel) AND ta.attname = pa.attname $$;

-- The attribute number the twin gives the column numbered n in table
-- rel, or n (for a table without a twin, or a column the twin does not
-- have by that name).
CREATE FUNCTION pgonion.l_attnum(rel oid, n int) RETURNS int2 LANGUAGE sql STABLE AS
$$ SELECT coalesce((SELECT ta.attnum FROM pgonion.l_twins m
	JOIN pg_catalog.pg_attribute pa ON pa.attrelid = m.physical AND pa.attnum = n
	JOIN pg_catalog.pg_attribute ta ON ta.attrelid = m.twin AND ta.attname = pa.attname
	WHERE m.physical = rel), n)::int2 $$;

DO $$
DECLARE
	spec record;
	plain text;
	mapped text;
	extra text;
	own text;
BEGIN
	FOR spec IN SELECT * FROM (VALUES ('pg_attribute', 'attrelid'), ('pg_attrdef', 'adrelid'),
			('pg_constraint', 'conrelid'), ('pg_index', 'indrelid')) AS s(rel, relid) LOOP
		-- plain: a row as it is, but a foreign key's referenced columns
		-- numbered as the referenced table's twin numbers them; mapped:
		-- a twin's row under its table's OID.
		SELECT string_agg(CASE
				WHEN a.attname = 'confkey' THEN 'CASE WHEN x.confrelid = pgonion.l_relid(x.confrelid) THEN x.confkey ELSE pgonion.l_attnums(x.confrelid, x.confkey) END'
				ELSE 'x.' || quote_ident(a.attname) END || ' AS ' || quote_ident(a.attname), ', ' ORDER BY a.attnum),
			string_agg(CASE
				WHEN a.attname = spec.relid THEN 'm.physical'
				WHEN a.attname = 'confrelid' THEN 'pgonion.l_physical(x.confrelid)'
				ELSE 'x.' || quote_ident(a.attname) END || ' AS ' || quote_ident(a.attname), ', ' ORDER BY a.attnum)
		INTO plain, mapped
		FROM pg_catalog.pg_attribute a
		WHERE a.attrelid = ('pg_catalog.' || spec.rel)::regclass AND a.attnum > 0 AND NOT a.attisdropped
			AND a.atttypid <> 'pg_catalog.anyarray'::regtype;
		extra := '';
		IF spec.rel = 'pg_constraint' THEN
			-- A twin keeps only the foreign keys to tables with twins:
			-- those to other tables are the table's own, its columns
			-- numbered as in the twin.
			extra := format(' UNION ALL SELECT %s FROM pg_catalog.pg_constraint x JOIN pgonion.l_twins m ON m.physical = x.conrelid
				WHERE x.contype = ''f'' AND x.confrelid = pgonion.l_relid(x.confrelid)',
				replace(plain, 'x.conkey AS conkey', 'pgonion.l_attnums(x.conrelid, x.conkey) AS conkey'));
		END IF;
		-- The twin's own rows stay (a client may name its columns by the
		-- twin's OID, which a RowDescription gives), but for keys and
		-- indexes, which queries join by their own OIDs.
		own := CASE WHEN spec.rel IN ('pg_constraint', 'pg_index') THEN format(' OR m.twin = x.%I', spec.relid) ELSE '' END;
		EXECUTE format('CREATE VIEW pgonion.%I AS SELECT %s FROM pg_catalog.%I x
			WHERE NOT EXISTS (SELECT 1 FROM pgonion.l_twins m WHERE m.physical = x.%I%s)
			UNION ALL SELECT %s FROM pg_catalog.%I x JOIN pgonion.l_twins m ON m.twin = x.%I%s',
			'l_' || spec.rel, plain, spec.rel, spec.relid, own, mapped, spec.rel, spec.relid, extra);
	END LOOP;

	-- pg_depend and pg_description name a table's columns by number:
	-- numbered as the twin numbers them, as in the other views.
	FOR spec IN SELECT * FROM (VALUES ('pg_depend'), ('pg_description')) AS s(rel) LOOP
		SELECT string_agg(CASE a.attname
				WHEN 'objsubid' THEN format('CASE WHEN x.%I = ''pg_catalog.pg_class''::regclass AND x.objsubid > 0 THEN pgonion.l_attnum(x.%I, x.objsubid) ELSE x.objsubid END',
					CASE spec.rel WHEN 'pg_depend' THEN 'classid' ELSE 'classoid' END, CASE spec.rel WHEN 'pg_depend' THEN 'objid' ELSE 'objoid' END)
				WHEN 'refobjsubid' THEN 'CASE WHEN x.refclassid = ''pg_catalog.pg_class''::regclass AND x.refobjsubid > 0 THEN pgonion.l_attnum(x.refobjid, x.refobjsubid) ELSE x.refobjsubid END'
				ELSE 'x.' || quote_ident(a.attname) END || ' AS ' || quote_ident(a.attname), ', ' ORDER BY a.attnum)
		INTO plain
		FROM pg_catalog.pg_attribute a
		WHERE a.attrelid = ('pg_catalog.' || spec.rel)::regclass AND a.attnum > 0 AND NOT a.attisdropped;
		EXECUTE format('CREATE VIEW pgonion.%I AS SELECT %s FROM pg_catalog.%I x', 'l_' || spec.rel, plain, spec.rel);
	END LOOP;

	-- information_schema's views of tables' columns and constraints: a
	-- twin's rows for its table's, in its table's schema (every schema
	-- column); the proxy's schemas left out.
	FOR spec IN SELECT * FROM (VALUES ('columns'), ('table_constraints'), ('key_column_usage'),
			('constraint_column_usage')) AS s(rel) LOOP
		SELECT string_agg('x.' || quote_ident(a.attname), ', ' ORDER BY a.attnum),
			string_agg(CASE WHEN a.attname LIKE '%schema'
				THEN format('CASE WHEN x.%1$I::text LIKE ''pgonion\_l\_%%'' THEN substr(x.%1$I::text, 11) ELSE x.%1$I::text END::information_schema.sql_identifier', a.attname)
				ELSE 'x.' || quote_ident(a.attname) END || ' AS ' || quote_ident(a.attname), ', ' ORDER BY a.attnum)
		INTO plain, mapped
		FROM pg_catalog.pg_attribute a
		WHERE a.attrelid = ('information_schema.' || spec.rel)::regclass AND a.attnum > 0 AND NOT a.attisdropped;
		-- A table's own foreign keys to tables without twins, which its
		-- twin cannot have, are its own rows.
		extra := '';
		IF spec.rel IN ('table_constraints', 'key_column_usage') THEN
			extra := ' OR EXISTS (SELECT 1 FROM pg_catalog.pg_constraint c WHERE c.conname = x.constraint_name::name AND c.contype = ''f''
				AND c.conrelid = pgonion.l_physical(to_regclass(quote_ident(x.table_schema) || ''.'' || quote_ident(x.table_name)))
				AND c.confrelid = pgonion.l_relid(c.confrelid))';
		END IF;
		EXECUTE format('CREATE VIEW pgonion.%I AS SELECT %s FROM information_schema.%I x
			WHERE x.table_schema::text NOT LIKE ''pgonion%%'' AND (NOT EXISTS (SELECT 1 FROM information_schema.tables t
				WHERE t.table_schema::text = ''pgonion_l_'' || x.table_schema::text AND t.table_name = x.table_name)%s)
			UNION ALL SELECT %s FROM information_schema.%I x WHERE x.table_schema::text LIKE ''pgonion\_l\_%%''',
			'l_' || spec.rel, plain, spec.rel, extra, mapped, spec.rel);
	END LOOP;
END $$;

-- col_description over the view of pg_description.
CREATE FUNCTION pgonion.l_col_description(rel oid, n int) RETURNS text LANGUAGE sql STABLE AS
$$ SELECT description FROM pgonion.l_pg_description
	WHERE objoid = rel AND classoid = 'pg_catalog.pg_class'::regclass AND objsubid = n $$;

-- information_schema.tables without the proxy's schemas.
CREATE VIEW pgonion.l_tables AS
SELECT * FROM information_schema.tables WHERE table_schema::text NOT LIKE 'pgonion%';
