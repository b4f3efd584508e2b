-- Journal rows of the old shape (one jsonb array of [subscriber, server, day, up, down] per
-- batch): their subscribers' totals were added with their batch, so only their per-day entries
-- are left to add. The table is then empty and takes the new columns.
INSERT INTO "subscriber_traffic" ("subscriber_id", "server_id", "day", "up_bytes", "down_bytes")
SELECT e.sub, e.srv, e.day, sum(e.up)::bigint, sum(e.down)::bigint
FROM (
  SELECT (x->>0)::uuid AS sub, (x->>1)::uuid AS srv, (x->>2)::date AS day, (x->>3)::bigint AS up, (x->>4)::bigint AS down
  FROM "traffic_journal" j, jsonb_array_elements(j."entries") AS x
) e
WHERE EXISTS (SELECT 1 FROM "subscribers" s WHERE s."id" = e.sub) AND EXISTS (SELECT 1 FROM "servers" v WHERE v."id" = e.srv)
GROUP BY e.sub, e.srv, e.day
ON CONFLICT ("subscriber_id", "server_id", "day") DO UPDATE SET
  "up_bytes" = "subscriber_traffic"."up_bytes" + excluded."up_bytes",
  "down_bytes" = "subscriber_traffic"."down_bytes" + excluded."down_bytes";--> statement-breakpoint
DELETE FROM "traffic_journal";--> statement-breakpoint
ALTER TABLE "traffic_journal" DROP COLUMN "entries";--> statement-breakpoint
ALTER TABLE "traffic_journal" ADD COLUMN "sub_ids" uuid[] NOT NULL;--> statement-breakpoint
ALTER TABLE "traffic_journal" ADD COLUMN "sub_up" bigint[] NOT NULL;--> statement-breakpoint
ALTER TABLE "traffic_journal" ADD COLUMN "sub_down" bigint[] NOT NULL;--> statement-breakpoint
ALTER TABLE "traffic_journal" ADD COLUMN "seen_at" timestamp with time zone NOT NULL;--> statement-breakpoint
ALTER TABLE "traffic_journal" ADD COLUMN "totals_folded" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "traffic_journal" ADD COLUMN "ent_sub" uuid[] NOT NULL;--> statement-breakpoint
ALTER TABLE "traffic_journal" ADD COLUMN "ent_srv" uuid[] NOT NULL;--> statement-breakpoint
ALTER TABLE "traffic_journal" ADD COLUMN "ent_day" date[] NOT NULL;--> statement-breakpoint
ALTER TABLE "traffic_journal" ADD COLUMN "ent_up" bigint[] NOT NULL;--> statement-breakpoint
ALTER TABLE "traffic_journal" ADD COLUMN "ent_down" bigint[] NOT NULL;
