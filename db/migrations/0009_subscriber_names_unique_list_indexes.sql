-- Names become unique per cluster, case-insensitively. Existing duplicates keep the oldest
-- one's name; each later one gets the first free " (2)", " (3)", … suffix, and the rename is
-- in the audit log so the operator can see what changed and why.
CREATE INDEX "subscribers_name_dedup" ON "subscribers" USING btree ("cluster_id",lower("name"));--> statement-breakpoint
DO $$
DECLARE
	r record;
	n integer;
	candidate text;
BEGIN
	FOR r IN
		SELECT d.id, d.cluster_id, d.name FROM (
			SELECT s.id, s.cluster_id, s.name,
				row_number() OVER (PARTITION BY s.cluster_id, lower(s.name) ORDER BY s.created_at, s.id) AS rn
			FROM "subscribers" s
		) d
		WHERE d.rn > 1
		ORDER BY d.cluster_id, lower(d.name), d.rn
	LOOP
		n := 2;
		LOOP
			candidate := r.name || ' (' || n || ')';
			EXIT WHEN NOT EXISTS (SELECT 1 FROM "subscribers" WHERE cluster_id = r.cluster_id AND lower(name) = lower(candidate));
			n := n + 1;
		END LOOP;
		UPDATE "subscribers" SET name = candidate, updated_at = now() WHERE id = r.id;
		INSERT INTO "audit_log" (cluster_id, operator_name, action, entity_type, entity_id, summary, before, after)
		VALUES (r.cluster_id, 'system', 'subscriber.update', 'subscriber', r.id::text,
			'Renamed subscriber ' || r.name || ' to ' || candidate || ': names are now unique per cluster',
			jsonb_build_object('name', r.name), jsonb_build_object('name', candidate));
	END LOOP;
END $$;--> statement-breakpoint
DROP INDEX "subscribers_name_dedup";--> statement-breakpoint
ALTER TABLE "subscribers" ADD COLUMN "name_lower" text GENERATED ALWAYS AS (lower("subscribers"."name")) STORED NOT NULL;--> statement-breakpoint
CREATE UNIQUE INDEX "subscribers_name_ci" ON "subscribers" USING btree ("cluster_id",lower("name"));--> statement-breakpoint
CREATE INDEX "subscribers_list_usage" ON "subscribers" USING btree ("cluster_id","traffic_used_bytes","id");--> statement-breakpoint
CREATE INDEX "subscribers_list_last_seen" ON "subscribers" USING btree ("cluster_id","last_seen_at" NULLS FIRST,"id");--> statement-breakpoint
CREATE INDEX "subscribers_list_expiry" ON "subscribers" USING btree ("cluster_id","expires_at","id");--> statement-breakpoint
CREATE INDEX "subscribers_list_created" ON "subscribers" USING btree ("cluster_id","created_at","id");